// Package drill is the plugin's restore drill (velero-plugin-for-aws-async drill): it restores
// every volume of a backup (or a bounded sample) through a VolumeSnapshotLocation, normally the
// one of the recovery region or the vault, with the same restore code Velero's restore uses,
// measures the time until each volume is available (and initialized, when asked), and deletes
// every volume it made. It never touches a snapshot.
//
// Each volume carries audit.TagDrill with this install's identity from its creation (in the
// CreateVolume request itself), so that the next drill, or `audit --delete-orphans`, deletes
// the volumes of an interrupted one, however early it was interrupted.
package drill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/restoring"
)

// Waits and limits of a drill.
const (
	// DefaultPollInterval is how often a drill asks EC2 about its volumes.
	DefaultPollInterval = 5 * time.Second
	// DefaultTimeout bounds the wait for the volumes; it stays below audit.DrillMaxDuration so
	// that no running drill's volume is ever taken for a leftover.
	DefaultTimeout = 2 * time.Hour
	// initialized is DescribeVolumeStatus's progress of a fully initialized volume.
	initialized = 100
	// describePage is the page size of the drill's look-ups.
	describePage = 1000
)

// Options are what a drill is asked to do.
type Options struct {
	Backup, Location string
	Limits           Limits
	WaitInitialized  bool
	Record           bool
	PollInterval     time.Duration
	Timeout          time.Duration
}

// Driller runs drills. Its fields are the narrow ports it works through.
type Driller struct {
	// Kube reads the Backup, the location and the cluster's identity, and writes --record.
	Kube     client.Client
	Records  audit.Records
	Resolver cli.Resolver
	Clients  cli.Clients
	Clock    clock.Clock
	Log      logrus.FieldLogger
	// Namespace is Velero's; Provider the plugin's.
	Namespace, Provider string
}

// Run drills o.Backup. An error means the drill could not start; a drill that ran returns its
// report, passed or not.
func (d *Driller) Run(ctx context.Context, o Options) (Report, error) {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	var backup velerov1.Backup
	if err := d.Kube.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: o.Backup}, &backup); err != nil {
		return Report{}, fmt.Errorf("reading Backup %s/%s: %w", d.Namespace, o.Backup, err)
	}
	switch backup.Status.Phase {
	case velerov1.BackupPhaseCompleted, velerov1.BackupPhasePartiallyFailed:
	default:
		return Report{}, fmt.Errorf("backup %s is %s: only a Completed or PartiallyFailed backup can be restored", o.Backup, backup.Status.Phase)
	}
	install, err := location.ReadInstall(ctx, d.Kube, d.Namespace)
	if err != nil {
		return Report{}, fmt.Errorf("a drill tags its volumes with this install's identity: %w", err)
	}
	recorded, err := d.Records.VolumeSnapshots(ctx, &backup)
	if err != nil {
		return Report{}, fmt.Errorf("reading Velero's record of backup %s's snapshots: %w", o.Backup, err)
	}
	mine := d.ours(ctx, recorded)
	if len(mine) == 0 {
		return Report{}, fmt.Errorf("backup %s recorded no snapshot through a VolumeSnapshotLocation of provider %s", o.Backup, d.Provider)
	}
	locName := o.Location
	if locName == "" {
		locName = mine[0].Location
	}
	cfg, creds, err := d.location(ctx, locName, &backup)
	if err != nil {
		return Report{}, err
	}
	c, err := d.Clients.Client(ctx, cfg.Region, creds)
	if err != nil {
		return Report{}, err
	}
	cands, err := candidates(ctx, c, mine)
	if err != nil {
		return Report{}, err
	}
	plan := Choose(cands, o.Limits)
	rep := Report{Backup: o.Backup, Location: locName, Region: cfg.Region, Started: d.Clock.Now(),
		Skipped: plan.Skipped, Unrestorable: plan.Unrestorable}
	rep.Leftovers, rep.Problems = d.deleteLeftovers(ctx, c, cfg.Region, creds, install)
	restorer := restoring.NewRestorer(cfg, func(ctx context.Context, region string) (ec2api.EC2, error) {
		return d.Clients.Client(ctx, region, creds)
	}, ebs.WithClock(d.Clock), ebs.WithLogger(d.Log), ebs.WithVolumeTags(map[string]string{audit.TagDrill: install}))
	d.restore(ctx, c, restorer, plan, o, &rep)
	if o.Record {
		if err := d.record(ctx, &backup, rep.Summary()); err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		}
	}
	return rep, nil
}

// ours are the recorded snapshots taken through a location of this provider.
func (d *Driller) ours(ctx context.Context, recorded []audit.RecordedSnapshot) []audit.RecordedSnapshot {
	provider := map[string]bool{}
	var out []audit.RecordedSnapshot
	for _, r := range recorded {
		mine, seen := provider[r.Location]
		if !seen {
			var vsl velerov1.VolumeSnapshotLocation
			err := d.Kube.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: r.Location}, &vsl)
			mine = err == nil && vsl.Spec.Provider == d.Provider
			provider[r.Location] = mine
		}
		if mine {
			out = append(out, r)
		}
	}
	return out
}

// location reads the VolumeSnapshotLocation name and its credentials as a restore would find
// them.
func (d *Driller) location(ctx context.Context, name string, backup *velerov1.Backup) (model.Config, ec2api.Credentials, error) {
	var vsl velerov1.VolumeSnapshotLocation
	if err := d.Kube.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: name}, &vsl); err != nil {
		return model.Config{}, ec2api.Credentials{}, fmt.Errorf("reading VolumeSnapshotLocation %s/%s: %w", d.Namespace, name, err)
	}
	if vsl.Spec.Provider != d.Provider {
		return model.Config{}, ec2api.Credentials{}, fmt.Errorf("VolumeSnapshotLocation %s is of provider %q, not %s", name, vsl.Spec.Provider, d.Provider)
	}
	cfg, err := model.ParseConfig(vsl.Spec.Config)
	if err != nil {
		return model.Config{}, ec2api.Credentials{}, fmt.Errorf("VolumeSnapshotLocation %s: %w", name, err)
	}
	named := backup.DeepCopy()
	named.Spec.VolumeSnapshotLocations = []string{name}
	choice, err := d.Resolver.ForBackup(ctx, named, cfg.Region)
	if err == nil && (len(choice.Locations) == 0 || choice.Locations[0].Name != name) {
		err = errors.New(choice.Note)
	}
	if err != nil {
		return model.Config{}, ec2api.Credentials{}, fmt.Errorf("the credentials of location %s: %w", name, err)
	}
	return cfg, choice.Locations[0].Credentials, nil
}

// candidates finds, for each recorded snapshot, the size of what the region holds of it: the
// snapshot itself or its completed copy.
func candidates(ctx context.Context, c ec2api.EC2, recorded []audit.RecordedSnapshot) ([]Candidate, error) {
	ids := make([]string, 0, len(recorded))
	for _, r := range recorded {
		ids = append(ids, r.ID)
	}
	size := map[string]int32{}
	for _, f := range []types.Filter{
		{Name: aws.String("snapshot-id"), Values: ids},
		{Name: aws.String("tag:" + model.TagSourceSnapshotID), Values: ids},
	} {
		in := &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}, MaxResults: aws.Int32(describePage), Filters: []types.Filter{f,
			{Name: aws.String("status"), Values: []string{string(types.SnapshotStateCompleted)}}}}
		for pages := ec2.NewDescribeSnapshotsPaginator(c, in); pages.HasMorePages(); {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("looking up the backup's snapshots and copies: %w", err)
			}
			for _, s := range page.Snapshots {
				id := aws.ToString(s.SnapshotId)
				for _, t := range s.Tags {
					if aws.ToString(t.Key) == model.TagSourceSnapshotID {
						id = aws.ToString(t.Value)
					}
				}
				size[id] = aws.ToInt32(s.VolumeSize)
			}
		}
	}
	out := make([]Candidate, 0, len(recorded))
	for _, r := range recorded {
		out = append(out, Candidate{RecordedSnapshot: r, SizeGiB: size[r.ID]})
	}
	return out, nil
}

// deleteLeftovers deletes the volumes interrupted drills of this install left in the region.
func (d *Driller) deleteLeftovers(ctx context.Context, c ec2api.EC2, region string, creds ec2api.Credentials, install string) (deleted, problems []string) {
	vols, err := audit.ListDrillVolumes(ctx, c, region, creds)
	if err != nil {
		return nil, []string{err.Error()}
	}
	now := d.Clock.Now()
	for _, v := range vols {
		if !v.Leftover(install, now) {
			continue
		}
		if err := audit.DeleteVolume(ctx, c, v.ID); err != nil {
			problems = append(problems, "a volume an interrupted drill left: "+err.Error())
			continue
		}
		deleted = append(deleted, v.ID)
	}
	return deleted, problems
}

// restore creates the plan's volumes with restorer (which tags each as this install's drill's),
// waits for them, and deletes them all.
func (d *Driller) restore(ctx context.Context, c ec2api.EC2, restorer *restoring.Restorer, plan Plan, o Options, rep *Report) {
	for _, cand := range plan.Restore {
		v := VolumeResult{PV: cand.PV, SnapshotID: cand.ID, SizeGiB: cand.SizeGiB}
		id, err := restorer.CreateVolumeFromSnapshot(ctx, cand.ID, cand.VolumeType, cand.VolumeAZ, cand.VolumeIOPS)
		if err != nil {
			v.Error = "restoring: " + err.Error()
			rep.Problems = append(rep.Problems, fmt.Sprintf("PV %s: %s", cand.PV, v.Error))
		}
		v.VolumeID = id
		rep.Volumes = append(rep.Volumes, v)
	}
	d.wait(ctx, c, o, rep)
	for i := range rep.Volumes {
		v := &rep.Volumes[i]
		if v.VolumeID == "" {
			continue
		}
		if err := audit.DeleteVolume(ctx, c, v.VolumeID); err != nil {
			v.Error = err.Error()
			rep.Problems = append(rep.Problems, fmt.Sprintf("PV %s: %v; the next drill or `audit --delete-orphans` deletes it once it is %s old", v.PV, err, audit.DrillMaxDuration))
			continue
		}
		v.Deleted = true
	}
}

// wait polls the volumes until each is available (and initialized when asked), or the timeout.
func (d *Driller) wait(ctx context.Context, c ec2api.EC2, o Options, rep *Report) {
	deadline := rep.Started.Add(o.Timeout)
	for {
		pending := d.poll(ctx, c, o.WaitInitialized, rep)
		if len(pending) == 0 {
			break
		}
		if !d.Clock.Now().Before(deadline) {
			for _, v := range pending {
				rep.Problems = append(rep.Problems, fmt.Sprintf("PV %s: volume %s not %s after %s (raise --timeout)", v.PV, v.VolumeID, goal(o.WaitInitialized), o.Timeout))
			}
			break
		}
		select {
		case <-ctx.Done():
			rep.Problems = append(rep.Problems, "interrupted: "+ctx.Err().Error())
			return
		case <-d.Clock.After(o.PollInterval):
		}
	}
	for _, v := range rep.Volumes {
		rep.ToAvailable = max(rep.ToAvailable, v.ToAvailable)
		rep.ToInitialized = max(rep.ToInitialized, v.ToInitialized)
	}
}

func goal(initialized bool) string {
	if initialized {
		return "initialized"
	}
	return "available"
}

// poll asks EC2 about the volumes still waited for, records the times reached, and returns
// those still waited for.
func (d *Driller) poll(ctx context.Context, c ec2api.EC2, waitInit bool, rep *Report) []*VolumeResult {
	var ids []string
	byID := map[string]*VolumeResult{}
	for i := range rep.Volumes {
		v := &rep.Volumes[i]
		if v.VolumeID != "" && (v.ToAvailable == 0 || waitInit && v.ToInitialized == 0) {
			ids = append(ids, v.VolumeID)
			byID[v.VolumeID] = v
		}
	}
	if len(ids) == 0 {
		return nil
	}
	since := cli.Seconds(d.Clock.Since(rep.Started))
	if out, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: ids}); err == nil {
		for _, vol := range out.Volumes {
			if v := byID[aws.ToString(vol.VolumeId)]; v != nil && vol.State == types.VolumeStateAvailable && v.ToAvailable == 0 {
				v.ToAvailable = since
			}
		}
	}
	if waitInit {
		if out, err := c.DescribeVolumeStatus(ctx, &ec2.DescribeVolumeStatusInput{VolumeIds: ids}); err == nil {
			for _, st := range out.VolumeStatuses {
				v := byID[aws.ToString(st.VolumeId)]
				if v != nil && v.ToAvailable != 0 && v.ToInitialized == 0 && st.InitializationStatusDetails != nil &&
					aws.ToInt64(st.InitializationStatusDetails.Progress) >= initialized {
					v.ToInitialized = since
				}
			}
		}
	}
	var pending []*VolumeResult
	for _, id := range ids {
		if v := byID[id]; v.ToAvailable == 0 || waitInit && v.ToInitialized == 0 {
			pending = append(pending, v)
		}
	}
	return pending
}

// record writes the drill's summary on the Backup (DrillAnnotation), for audit to show.
func (d *Driller) record(ctx context.Context, backup *velerov1.Backup, summary string) error {
	patched := backup.DeepCopy()
	metav1.SetMetaDataAnnotation(&patched.ObjectMeta, audit.DrillAnnotation, summary)
	if err := d.Kube.Patch(ctx, patched, client.MergeFrom(backup)); err != nil {
		return fmt.Errorf("recording the drill on Backup %s: %w (let the drill patch backups)", backup.Name, err)
	}
	return nil
}
