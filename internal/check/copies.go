package check

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// copyLimit is EC2's quota of concurrent copies per destination region and account (not
// adjustable).
const copyLimit = 20

// timedCopies is how many of the plugin's completed copies are timed for the expected duration.
const timedCopies = 20

// isCopy reports whether a snapshot was made by CopySnapshot: EC2 reports a transfer type for
// copies only, and the plugin tags its own with their source.
func isCopy(s types.Snapshot) bool {
	return s.TransferType != "" || tagValue(s.Tags, model.TagSourceSnapshotID) != ""
}

func tagValue(tags []types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// slots lists the account's copies in flight into p's region, for real, and records how long
// a copy there takes: minutes (a time-based copy's duration) when set, else the mean of the
// plugin's last completed copies there.
func slots(ctx context.Context, lc *locationCheck, p *place, minutes float64) Finding {
	check := p.prefix + "copy slots in " + p.region
	pending := types.Filter{Name: aws.String("status"), Values: []string{string(types.SnapshotStatePending)}}
	in := &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}, Filters: []types.Filter{pending}, MaxResults: aws.Int32(listPage)}
	inFlight, ours := 0, 0
	for pages := ec2.NewDescribeSnapshotsPaginator(p.c, in); pages.HasMorePages(); {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return notChecked(check, "listing the pending snapshots: "+describe(err))
		}
		for _, s := range out.Snapshots {
			if isCopy(s) {
				inFlight++
				if tagValue(s.Tags, model.TagSourceSnapshotID) != "" {
					ours++
				}
			}
		}
	}
	if minutes > 0 {
		lc.copyTimes = append(lc.copyTimes, copyTime{where: p.region, each: time.Duration(minutes * float64(time.Minute)), source: "copyCompletionDurationMinutes"})
	} else if t, ok := timeCopies(ctx, lc, p); ok {
		lc.copyTimes = append(lc.copyTimes, t)
	}
	detail := fmt.Sprintf("%d of %d in use (%d of the plugin's, %d of other tools)", inFlight, copyLimit, ours, inFlight-ours)
	if inFlight >= copyLimit {
		detail += ": new copies queue until one completes"
	}
	return pass(check, detail)
}

// timeCopies is the mean duration of the plugin's completed copies in p's region that EC2
// reports a completion time for.
func timeCopies(ctx context.Context, lc *locationCheck, p *place) (copyTime, bool) {
	out, err := p.c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}, MaxResults: aws.Int32(timedCopies),
		Filters: []types.Filter{
			{Name: aws.String("status"), Values: []string{string(types.SnapshotStateCompleted)}},
			{Name: aws.String("tag-key"), Values: []string{model.TagSourceSnapshotID}},
		}})
	if err != nil {
		return copyTime{}, false
	}
	var sum time.Duration
	n := 0
	for _, s := range out.Snapshots {
		if s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.After(*s.StartTime) {
			sum += s.CompletionTime.Sub(*s.StartTime)
			n++
		}
	}
	if n == 0 {
		return copyTime{}, false
	}
	return copyTime{where: p.region, each: sum / time.Duration(n), source: fmt.Sprintf("the mean of %s there", plural(n, "completed copy"))}, true
}

// judgeOperationTimeouts judges Velero's item-operation timeouts that apply to the location's
// backups against its copies' expected duration: ⌈volumes / 20⌉ copies after one another in
// each destination, the README's rule. The last of them must also start before the plugin
// stops starting copies of a source (model.CopyStartMargin before its timeout).
func judgeOperationTimeouts(lc *locationCheck) {
	const check = "item-operation timeout"
	if lc.cfg.CopyToRegion == "" && !lc.cfg.Vault.Enabled() {
		return
	}
	if !lc.sourcesKnown {
		lc.add(notChecked(check, "the volumes to copy are not known"))
		return
	}
	if len(lc.copyTimes) == 0 {
		lc.add(notChecked(check, fmt.Sprintf("no completed copy to time yet (the first backup's copies will show it); allow %d × a copy's time, and more when other backups copy at the same time",
			batches(len(lc.sources)))))
		return
	}
	longest := lc.copyTimes[0]
	for _, t := range lc.copyTimes[1:] {
		if t.each > longest.each {
			longest = t
		}
	}
	expected := time.Duration(batches(len(lc.sources))) * longest.each
	lastStart := expected - longest.each
	why := fmt.Sprintf("%s, at most %d copies at a time into %s, %s each (%s)", plural(len(lc.sources), "volume"), copyLimit, longest.where, human(longest.each), longest.source)
	found := false
	for _, t := range timeouts(lc) {
		margin := model.CopyStartMargin(t.d, ebs.DefaultCreateWindow())
		switch {
		case t.d < expected:
			found = true
			lc.add(fail(check, fmt.Sprintf("%s %s is shorter than the copies' expected %s: %s", t.who, human(t.d), human(expected), why), t.fixFor(suggestedTimeout(expected))))
		case lastStart > t.d-margin:
			found = true
			lc.add(fail(check, fmt.Sprintf("%s %s leaves the last copies no time to start: they would start %s after their sources, and the plugin starts no copy within %s of a source's timeout, so that it completes first: %s",
				t.who, human(t.d), human(lastStart), human(margin), why), t.fixFor(suggestedTimeout(expected))))
		}
	}
	if !found {
		lc.add(pass(check, fmt.Sprintf("%s covers the copies' expected %s: %s", timeoutsSummary(lc), human(expected), why)))
	}
}

// batches is how many copies one after another n volumes take in one destination.
func batches(n int) int { return max(1, int(math.Ceil(float64(n)/copyLimit))) }

// suggestedTimeout is twice the expected duration, in whole hours: copies of other backups
// share the slots.
func suggestedTimeout(expected time.Duration) time.Duration {
	return time.Duration(math.Ceil((2 * expected).Hours())) * time.Hour
}

// timeout is one item-operation timeout that applies to the location's backups.
type timeout struct {
	who string
	d   time.Duration
	// flag is true for the server's default, false for a Schedule's own.
	flag bool
}

func (t timeout) fixFor(d time.Duration) string {
	if t.flag {
		return fmt.Sprintf("--%s=%s in the Velero server's arguments (or --item-operation-timeout on the backups)", flagItemOperationTimeout, human(d))
	}
	return fmt.Sprintf("set spec.template.itemOperationTimeout: %s in %s", human(d), t.who)
}

// timeouts are the server's default and the Schedules' own timeouts for this location.
func timeouts(lc *locationCheck) []timeout {
	s := lc.cluster.settings
	who := "--" + flagItemOperationTimeout
	if !s.known() {
		who += " (Velero's default; " + s.problem.String() + ")"
	}
	out := []timeout{{who: who, d: s.itemOperationTimeout, flag: true}}
	for _, sch := range locationSchedules(lc) {
		if d := sch.Spec.Template.ItemOperationTimeout.Duration; d > 0 {
			out = append(out, timeout{who: "Schedule " + lc.Namespace + "/" + sch.Name, d: d})
		}
	}
	return out
}

func timeoutsSummary(lc *locationCheck) string {
	ts := timeouts(lc)
	if len(ts) == 1 {
		return ts[0].who + " " + human(ts[0].d)
	}
	return fmt.Sprintf("%s %s and %d Schedules' own", ts[0].who, human(ts[0].d), len(ts)-1)
}
