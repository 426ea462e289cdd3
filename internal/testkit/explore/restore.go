package explore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	"pgregory.net/rapid"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/restoring"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The restore path: Velero restoring a PV of the finished backup through the VolumeSnapshotter's
// CreateVolumeFromSnapshot, in the source region from the recorded snapshot, or in the copy
// region (a recovery cluster's location of the same name) from its copy.
//
// Velero core starts the plugins afresh for each restore, and the plugin's restore tokens are
// drawn once per process; the explorer runs in one process, so it plays one restore per region
// and run, each in a VolumeSnapshotter of its own, with Velero's retries of a PV in that restore.

// A drawn restore may lose CreateVolume answers (a third of them: the window in which a
// restore must send the same ClientToken again), and follows the restored volume through the
// restore item action's Progress, one fresh plugin process per poll as Velero's operations
// controller does, for a location that waits for initialization, under faults of its own.

// The shape of a drawn restore.
const (
	// lostAnswersIn3 is how many drawn restores in three lose CreateVolume answers.
	lostAnswersIn3 = 1
	// maxRestorePolls bounds the Progress polls of a drawn restore's operation.
	maxRestorePolls = 5
)

// restorePollGaps are how far the clock moves before a poll of a restore's operation: Velero's
// sync period, or a minute.
var restorePollGaps = []time.Duration{syncPeriod, time.Minute}

// restorePollFaultActions are the reads a poll's fault may single out ("" for every request).
var restorePollFaultActions = []string{"DescribeVolumeStatus", "DescribeVolumes", ""}

// catRestoreProgressBack is the promise that EC2 throttling a poll never makes an open restore
// operation's progress go back: the figure a poll shows is never below one an earlier poll
// showed, and the operation never fails. A poll whose reads EC2 refused for the call's whole
// budget shows no figure (0 of 0), as the README documents: Velero records whatever figure
// Progress returns, fails the operation on any error, and a new plugin process does not know
// the figure it reported before.
const catRestoreProgressBack category = "a transient error made an open restore operation's progress go back or fail"

// restoreScript is what was drawn for one restore: every lostEvery-th CreateVolume answer lost
// (0: none), and the polls of its operation, each after a gap under its faults.
type restoreScript struct {
	lostEvery int
	polls     []restorePoll
}

// restorePoll is one poll of a restore's operation.
type restorePoll struct {
	gap    time.Duration
	faults faults
}

// drawRestore draws a restore's script.
func drawRestore(t *rapid.T) restoreScript {
	var s restoreScript
	if rapid.IntRange(0, 2).Draw(t, "CreateVolume answers lost (<1)") < lostAnswersIn3 {
		s.lostEvery = rapid.IntRange(1, 2).Draw(t, "CreateVolume answer lost every")
	}
	for range rapid.IntRange(0, maxRestorePolls).Draw(t, "restore operation polls") {
		poll := restorePoll{gap: rapid.SampledFrom(restorePollGaps).Draw(t, "before the poll")}
		if rapid.Bool().Draw(t, "EC2 throttles the poll") {
			poll.faults = faults{{
				action: rapid.SampledFrom(restorePollFaultActions).Draw(t, "throttled read"),
				effect: faultThrottle,
				every:  rapid.IntRange(1, 3).Draw(t, "throttled every"),
			}}
		}
		s.polls = append(s.polls, poll)
	}
	return s
}

// restoreCall is one CreateVolumeFromSnapshot as Velero saw it.
type restoreCall struct {
	region, pv, snapshotID string
	// volumeID is what the call returned; "" when it returned an error.
	volumeID string
	err      string
}

// restoreRegions are the regions a PV of the backup may be restored in.
func (w *world) restoreRegions() []string {
	if w.cfg.CopyToRegion != "" {
		return []string{sourceRegion, copyRegion}
	}
	return []string{sourceRegion}
}

// restorable lists the PVs Velero may restore: the backup has finished (Velero restores only a
// finished backup) and is not deleted, and this plugin recorded the PV's snapshot.
func (w *world) restorable() []int {
	if w.waiting() || w.deleted || w.notInCluster {
		return nil
	}
	var out []int
	for i, op := range w.ops {
		if op.snapshotID != "" && !op.upstream {
			out = append(out, i)
		}
	}
	return out
}

// restorer is the VolumeSnapshotter of the restore in region: the source cluster's location, or
// a recovery cluster's location of the same name in the copy region.
func (w *world) restorer(region string) *restoring.Restorer {
	if s, ok := w.restorers[region]; ok {
		return s
	}
	cfg := w.cfg
	cfg.Region, cfg.CopyToRegion = region, ""
	s := restoring.NewRestorer(cfg, w.regional("restore", sourceAccount, true), w.locationOptions(cfg, false)...)
	w.restorers[region] = s
	return s
}

// restoreScripted is Velero restoring PV i in region as script says: CreateVolumeFromSnapshot
// under the step's faults and the script's lost answers, then the restore item action's
// operation on the volume it returned, polled as the script says.
func (w *world) restoreScripted(i int, region string, script restoreScript) {
	if script.lostEvery > 0 {
		w.logf("ec2: every %d. CreateVolume answer lost during the restore", script.lostEvery)
		stepFaults := w.faults
		w.faults = append(slices.Clone(stepFaults), &faultRule{action: "CreateVolume", effect: faultLoseAnswer, every: script.lostEvery})
		defer func() { w.faults = stepFaults }()
	}
	w.restore(i, region)
	if c := w.restores[len(w.restores)-1]; c.volumeID != "" {
		w.followRestore(c, script.polls)
	}
}

// restore is Velero restoring PV i in region: CreateVolumeFromSnapshot with the snapshot ID it
// recorded, the volume type and IOPS GetVolumeInfo returned at backup and the PV's original
// zone, as pv_restorer does.
func (w *world) restore(i int, region string) {
	op := w.ops[i]
	s := w.restorer(region)
	var pending []string // judged on a healthy EC2 only
	if region != sourceRegion && w.healthyReads() {
		pending = w.pendingCopiesOnly(op.snapshotID, region)
	}
	first := len(w.requests)
	var id string
	var err error
	if !w.onClock(func(ctx context.Context) {
		id, err = s.CreateVolumeFromSnapshot(ctx, op.snapshotID, op.volumeType, sourceRegion+"a", op.iops)
	}) {
		w.violate(catHung, "CreateVolumeFromSnapshot of %s in %s did not return", op.pv, region)
	}
	call := restoreCall{region: region, pv: op.pv, snapshotID: op.snapshotID, volumeID: id}
	if err != nil {
		call.err = err.Error()
	}
	w.restores = append(w.restores, call)
	w.logf("velero: restore %s in %s from %s -> %q %s", op.pv, region, op.snapshotID, id, call.err)
	w.checkRestoreWords(call, pending, w.requests[first:])
}

// restoredVolumes lists the volumes made from a snapshot in the source account, by region.
func (w *world) restoredVolumes() map[string][]ec2sim.Volume {
	out := map[string][]ec2sim.Volume{}
	for _, r := range w.restoreRegions() {
		for _, v := range w.sim.VolumesIn(sourceAccount, r) {
			if v.SnapshotID != "" {
				out[r] = append(out[r], v)
			}
		}
	}
	return out
}

// pvOfRestoreSource returns the operation whose recorded snapshot a volume in region was made
// from: the snapshot itself in the source region, its completed copy made by this plugin in the
// copy region. It returns nil for any other snapshot.
func (w *world) pvOfRestoreSource(snaps map[string]ec2sim.Snapshot, region, snapshotID string) *operation {
	if region == sourceRegion {
		if op := w.recorded(snapshotID); op != nil && !op.upstream {
			return op
		}
		return nil
	}
	s, ok := snaps[snapshotID]
	if _, theirs := w.foreign[snapshotID]; !ok || theirs || s.Account != sourceAccount || s.Region != region || s.State != "completed" {
		return nil
	}
	if op := w.recorded(s.SourceSnapshotID); op != nil && !op.upstream {
		return op
	}
	return nil
}

// checkRestores checks the restores: every volume is made from this backup's recorded snapshot
// or its completed copy; a call that returned a volume made exactly that one for the PV and the
// restore; and, once final (the listing lag has passed), a restore whose every call returned an
// error left no volume behind, unless its error names the volume that may still appear.
func (w *world) checkRestores(final bool) {
	if len(w.restores) == 0 {
		return
	}
	var snaps map[string]ec2sim.Snapshot
	made := map[string][]string{} // by region and PV
	for region, vols := range w.restoredVolumes() {
		for _, v := range vols {
			pv, seen := w.restoredFor[v.ID]
			if !seen {
				// Judged when first seen: a copy it was made from may be deleted later.
				if snaps == nil {
					snaps = w.everything()
				}
				if op := w.pvOfRestoreSource(snaps, region, v.SnapshotID); op != nil {
					pv = op.pv
				} else {
					w.violate(catRestoredFromOther, "volume %s in %s made from %s, which is neither a snapshot of the backup nor its completed copy", v.ID, region, v.SnapshotID)
				}
				w.restoredFor[v.ID] = pv
			}
			if pv != "" {
				key := region + " " + pv
				made[key] = append(made[key], v.ID)
			}
		}
	}
	returned := map[string]bool{}
	named := map[string]bool{}
	for _, c := range w.restores {
		key := c.region + " " + c.pv
		vols := made[key]
		if len(vols) > 1 {
			w.violate(catRestoreDuplicate, "%d volumes made for %s in one restore in %s: %v", len(vols), c.pv, c.region, vols)
		}
		switch {
		case c.volumeID != "" && !slices.Contains(vols, c.volumeID):
			w.violate(catRestoredFromOther, "the restore of %s in %s returned volume %s, which is not a volume made from its snapshot (%v are)", c.pv, c.region, c.volumeID, vols)
		case c.volumeID != "":
			returned[key] = true
			w.checkRestoredSettings(c)
		case strings.Contains(c.err, model.TagRestoreToken):
			named[key] = true
		}
	}
	if !final {
		return
	}
	for key, vols := range made {
		switch {
		case returned[key]:
		case named[key]:
			// The error said a volume may still appear, and by which tag: not silent.
			w.logf("left: %v for %s, whose restore failed naming the tag of the volume that may appear", vols, key)
		default:
			w.violate(catRestoreLeaked, "the restore of %s returned only errors and left %v", key, vols)
		}
	}
}

// restoreLocation is the restore's location as the restore item action finds it: in region,
// with the restore's credentials, waiting for initialization.
type restoreLocation struct{ place ebs.Place }

func (l restoreLocation) BackupPlaces(context.Context, *velerov1.Backup, string) ([]ebs.Place, error) {
	return []ebs.Place{l.place}, nil
}

func (l restoreLocation) RestorePlaces(context.Context, *velerov1.Restore, string) ([]ebs.Place, error) {
	return []ebs.Place{l.place}, nil
}

// followRestore is Velero's restore operations controller following the restore item action's
// operation on the volume c returned: each poll in a fresh plugin process, under its own faults
// (throttling only), until the operation ends. It checks that no poll shows a figure below one
// an earlier poll showed, and that none fails the operation; it returns what each poll showed.
func (w *world) followRestore(c restoreCall, polls []restorePoll) (shownByPoll []velero.OperationProgress) {
	op := model.VolumeOperation{Operation: model.Operation{Region: c.region, VolumeID: c.volumeID, Issued: w.clk.Now()}}.String()
	restore := &velerov1.Restore{Spec: velerov1.RestoreSpec{BackupName: backupName}}
	clients := w.regional("restore", sourceAccount, true)
	loc := restoreLocation{ebs.Place{Location: locationName, Clients: clients,
		Config: map[string]string{model.ConfigRegion: c.region, model.ConfigWaitForVolumeInitialization: "true"}}}
	stepFaults := w.faults
	defer func() { w.faults = stepFaults }()
	var shown int64
	for _, poll := range polls {
		w.advance(poll.gap)
		w.faults = poll.faults
		if len(poll.faults) > 0 {
			w.logf("ec2: %v during the poll", poll.faults[0])
		}
		var p velero.OperationProgress
		var err error
		if !w.onClock(func(ctx context.Context) {
			p, err = restoring.NewVolumeWatcher(clients, append(w.options(), ebs.WithLocator(loc))...).Progress(ctx, op, restore)
		}) {
			w.violate(catHung, "Progress of the restored volume %s did not return", c.volumeID)
			return shownByPoll
		}
		shownByPoll = append(shownByPoll, p)
		w.logf("velero: restore Progress %s in %s -> %d/%d %s completed=%v %q %s %v", c.volumeID, c.region, p.NCompleted, p.NTotal, p.OperationUnits, p.Completed, p.Description, p.Err, err)
		switch {
		case err != nil || p.Err != "":
			w.violate(catRestoreProgressBack, "the restore operation of %s in %s failed under throttling: %s", c.volumeID, c.region, errOr(err, p.Err))
			return shownByPoll
		case p.NTotal > 0 && p.NCompleted < shown:
			w.violate(catRestoreProgressBack, "the restore operation of %s in %s went from %d to %d of %d %s: %s", c.volumeID, c.region, shown, p.NCompleted, p.NTotal, p.OperationUnits, p.Description)
		}
		if p.NTotal > 0 {
			shown = max(shown, p.NCompleted)
		}
		if p.Completed {
			return shownByPoll
		}
	}
	return shownByPoll
}

// errOr is err's message, else msg.
func errOr(err error, msg string) string {
	if err != nil {
		return fmt.Sprint(err)
	}
	return msg
}
