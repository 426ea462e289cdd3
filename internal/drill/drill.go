// Package drill is the plugin's restore drill (velero-plugin-for-aws-async drill): it restores
// every volume of a backup (or a bounded sample) from its copies in its location's
// copyToRegion, its vault copies, or its snapshots in the location's region (place.go), with
// the same restore code Velero's restore uses, measures the time until each volume is
// available (and initialized, when asked), and deletes every volume it made, also when
// interrupted. It never touches a snapshot.
//
// Each volume carries audit.TagDrill with this install's identity from its creation (in the
// CreateVolume request itself), so that the next drill, or `audit --delete-orphans`, deletes
// the volumes of an interrupted one, however early it was interrupted.
package drill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// createTimeout bounds one volume's restore, which outlasts an interruption of the drill: a
	// CreateVolume cut off in flight could make a volume the drill never learns of. It is above
	// the restore's own patience with lost answers (10 minutes).
	createTimeout = 15 * time.Minute
	// cleanupTimeout bounds the deletion of the drill's volumes and --record's write, which run
	// on a context of their own: a drill stopped by Ctrl-C or SIGTERM still deletes its volumes.
	cleanupTimeout = 5 * time.Minute
	// initialized is DescribeVolumeStatus's progress of a fully initialized volume.
	initialized = 100
	// filterBatch is how many values one filter of the drill's look-ups names: EC2 takes at
	// most 200.
	filterBatch = 200
)

// Options are what a drill is asked to do.
type Options struct {
	// Backup is the Backup drilled; without it, the newest finished backup of Schedule.
	// Location, when set, is the location whose settings the drill uses instead of the
	// backup's own; From is the place of that location it restores from, FromCopy when empty.
	Backup, Schedule, Location string
	From                       From
	Limits                     Limits
	WaitInitialized            bool
	Record                     bool
	PollInterval               time.Duration
	Timeout                    time.Duration
}

// Clients hands out EC2 clients and names whose credentials they are (*ec2api.Factory).
type Clients interface {
	cli.Clients
	Account(ctx context.Context, region string, creds ec2api.Credentials) (ec2api.Identity, error)
}

// Driller runs drills. Its fields are the narrow ports it works through.
type Driller struct {
	// Kube reads the Backup, the location and the cluster's identity, and writes --record.
	Kube     client.Client
	Records  audit.Records
	Resolver cli.Resolver
	Clients  Clients
	Clock    clock.Clock
	Log      logrus.FieldLogger
	// Namespace is Velero's; Provider the plugin's.
	Namespace, Provider string
}

// Run drills o.Backup. An error means the drill could not start; a drill that ran returns its
// report, passed or not. Once it made a volume, it deletes every volume it made, however ctx
// ends.
func (d *Driller) Run(ctx context.Context, o Options) (Report, error) {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	backup, err := d.backup(ctx, o)
	if err != nil {
		return Report{}, err
	}
	o.Backup = backup.Name
	install, err := location.ReadInstall(ctx, d.Kube, d.Namespace)
	if err != nil {
		return Report{}, fmt.Errorf("a drill tags its volumes with this install's identity: %w", err)
	}
	recorded, err := d.Records.VolumeSnapshots(ctx, &backup)
	if err != nil {
		return Report{}, fmt.Errorf("reading Velero's record of backup %s's snapshots: %w", o.Backup, err)
	}
	mine, err := d.ours(ctx, recorded)
	if err != nil {
		return Report{}, err
	}
	if len(mine) == 0 {
		return Report{}, fmt.Errorf("backup %s recorded no snapshot through a VolumeSnapshotLocation of provider %s", o.Backup, d.Provider)
	}
	loc, err := d.location(ctx, cmp.Or(o.Location, mine[0].Location), &backup)
	if err != nil {
		return Report{}, err
	}
	place, err := placeOf(loc, cmp.Or(o.From, FromCopy))
	if err != nil {
		return Report{}, err
	}
	place, account, err := d.identify(ctx, loc, place)
	if err != nil {
		return Report{}, err
	}
	c, err := d.Clients.Client(ctx, place.Region, place.Creds)
	if err != nil {
		return Report{}, err
	}
	listed, err := listSnapshots(ctx, c, mine, place.Source)
	if err != nil {
		return Report{}, err
	}
	plan := Choose(candidates(mine, listed, place.Source), o.Limits, missing(place, account))
	rep := Report{Backup: o.Backup, Location: place.Location, From: place.From, Region: place.Region, Account: account, Note: place.Note,
		Started: d.Clock.Now(), Skipped: plan.Skipped, Unrestorable: plan.Unrestorable}
	rep.Leftovers, rep.Problems = d.deleteLeftovers(ctx, c, place.Region, place.Creds, install)
	restorer := restoring.NewRestorer(place.Config, func(ctx context.Context, region string) (ec2api.EC2, error) {
		return d.Clients.Client(ctx, region, place.Creds)
	}, ebs.WithClock(d.Clock), ebs.WithLogger(d.Log), ebs.WithVolumeTags(map[string]string{audit.TagDrill: install}), ebs.WithRestoreSource(place.Source))
	d.restore(ctx, restorer, plan, &rep)
	d.wait(ctx, c, o, &rep)
	// What is left runs on a context of its own: a drill stopped by Ctrl-C or SIGTERM still
	// deletes every volume it made, and records that it was stopped.
	done, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if ctx.Err() != nil {
		d.Log.Warnf("drill interrupted (%v): deleting the volumes it made (for at most %s)", context.Cause(ctx), cleanupTimeout)
	}
	d.deleteVolumes(done, c, &rep)
	if o.Record {
		if err := d.record(done, &backup, rep.Summary()); err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		}
	}
	return rep, nil
}

// backup reads the Backup o names, or the newest finished one of its Schedule.
func (d *Driller) backup(ctx context.Context, o Options) (velerov1.Backup, error) {
	var backup velerov1.Backup
	if o.Backup == "" {
		var list velerov1.BackupList
		if err := d.Kube.List(ctx, &list, client.InNamespace(d.Namespace), client.MatchingLabels{velerov1.ScheduleNameLabel: o.Schedule}); err != nil {
			return backup, fmt.Errorf("listing the backups of Schedule %s/%s: %w", d.Namespace, o.Schedule, err)
		}
		return newestFinished(list.Items, o.Schedule)
	}
	if err := d.Kube.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: o.Backup}, &backup); err != nil {
		return backup, fmt.Errorf("reading Backup %s/%s: %w", d.Namespace, o.Backup, err)
	}
	if !finished(backup) {
		return backup, unfinishedError(backup)
	}
	return backup, nil
}

// unfinishedError says why backup b cannot be drilled yet, or at all: a Backup with no phase has
// not been processed by Velero yet (no server, or another namespace's).
func unfinishedError(b velerov1.Backup) error {
	const only = "only a Completed or PartiallyFailed backup can be restored"
	if b.Status.Phase == "" {
		return fmt.Errorf("backup %s has not been processed by Velero yet (no status.phase: is Velero's server running in namespace %s?): %s; drill it once `velero backup describe %s` says Completed", b.Name, b.Namespace, only, b.Name)
	}
	return fmt.Errorf("backup %s is %s: %s", b.Name, b.Status.Phase, only)
}

// finished reports whether a backup can be restored: Completed or PartiallyFailed.
func finished(b velerov1.Backup) bool {
	return b.Status.Phase == velerov1.BackupPhaseCompleted || b.Status.Phase == velerov1.BackupPhasePartiallyFailed
}

// newestFinished is the backup of schedule, among backups, that started last of those that can
// be restored. It is pure.
func newestFinished(backups []velerov1.Backup, schedule string) (velerov1.Backup, error) {
	var newest *velerov1.Backup
	for i, b := range backups {
		if finished(b) && (newest == nil || newest.Status.StartTimestamp.Before(b.Status.StartTimestamp)) {
			newest = &backups[i]
		}
	}
	if newest == nil {
		return velerov1.Backup{}, fmt.Errorf("schedule %s has no Completed or PartiallyFailed backup (of %d)", schedule, len(backups))
	}
	return *newest, nil
}

// ours are the recorded snapshots taken through a location of this provider. A location that
// is gone is not this provider's; one that cannot be read is an error, never "not ours".
func (d *Driller) ours(ctx context.Context, recorded []audit.RecordedSnapshot) ([]audit.RecordedSnapshot, error) {
	provider := map[string]bool{}
	var out []audit.RecordedSnapshot
	for _, r := range recorded {
		mine, seen := provider[r.Location]
		if !seen {
			var vsl velerov1.VolumeSnapshotLocation
			err := d.Kube.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: r.Location}, &vsl)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("reading VolumeSnapshotLocation %s/%s, which the backup recorded snapshots through: %w", d.Namespace, r.Location, err)
			}
			mine = err == nil && vsl.Spec.Provider == d.Provider
			provider[r.Location] = mine
		}
		if mine {
			out = append(out, r)
		}
	}
	return out, nil
}

// location reads the VolumeSnapshotLocation name, its config and its credentials, and its
// vault's, as the item actions find them for the backup.
func (d *Driller) location(ctx context.Context, name string, backup *velerov1.Backup) (locationView, error) {
	var vsl velerov1.VolumeSnapshotLocation
	if err := d.Kube.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: name}, &vsl); err != nil {
		return locationView{}, fmt.Errorf("reading VolumeSnapshotLocation %s/%s: %w", d.Namespace, name, err)
	}
	if vsl.Spec.Provider != d.Provider {
		return locationView{}, fmt.Errorf("VolumeSnapshotLocation %s is of provider %q, not %s", name, vsl.Spec.Provider, d.Provider)
	}
	cfg, err := model.ParseConfig(vsl.Spec.Config)
	if err != nil {
		return locationView{}, fmt.Errorf("VolumeSnapshotLocation %s: %w", name, err)
	}
	named := backup.DeepCopy()
	named.Spec.VolumeSnapshotLocations = []string{name}
	choice, err := d.Resolver.ForBackup(ctx, named, cfg.Region)
	if err == nil && (len(choice.Locations) == 0 || choice.Locations[0].Name != name) {
		err = errors.New(choice.Note)
	}
	if err != nil {
		return locationView{}, fmt.Errorf("the credentials of location %s: %w", name, err)
	}
	found := choice.Locations[0]
	return locationView{Name: name, Cfg: cfg, Creds: found.Credentials, Vault: found.Vault}, nil
}

// identify asks STS whose the place's credentials are, and, for the vault, whose the
// location's own are, and completes the place with them (withAccounts). It returns the
// place's account.
func (d *Driller) identify(ctx context.Context, loc locationView, p Place) (Place, string, error) {
	here, err := d.Clients.Account(ctx, p.Region, p.Creds)
	if err != nil {
		return Place{}, "", fmt.Errorf("the account the drill restores in: %w", err)
	}
	own := here
	if p.From == FromVault {
		if own, err = d.Clients.Account(ctx, loc.Cfg.Region, loc.Creds); err != nil {
			return Place{}, "", fmt.Errorf("the account of location %s, whose vault copies are drilled: %w", loc.Name, err)
		}
	}
	p, err = withAccounts(p, own.Account, here.Account)
	return p, here.Account, err
}

// listSnapshots lists what c's account holds completed in its region of the recorded
// snapshots, the snapshots themselves (unless src takes only copies) and their copies: what
// a restore there may take.
func listSnapshots(ctx context.Context, c ec2api.EC2, recorded []audit.RecordedSnapshot, src model.RestoreSource) ([]types.Snapshot, error) {
	ids := make([]string, 0, len(recorded))
	for _, r := range recorded {
		ids = append(ids, r.ID)
	}
	by := []string{"tag:" + model.TagSourceSnapshotID}
	if !src.CopiesOnly {
		by = append(by, "snapshot-id")
	}
	completed := types.Filter{Name: aws.String("status"), Values: []string{string(types.SnapshotStateCompleted)}}
	var out []types.Snapshot
	for _, name := range by {
		for batch := range slices.Chunk(ids, filterBatch) {
			snaps, err := ebs.DescribeSnapshots(ctx, c, []types.Filter{{Name: aws.String(name), Values: batch}, completed})
			if err != nil {
				return nil, fmt.Errorf("looking up the backup's snapshots and copies: %w", err)
			}
			out = append(out, snaps...)
		}
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
// one after another, each on a context of its own (createVolume). Once ctx ends it starts no
// other.
func (d *Driller) restore(ctx context.Context, restorer *restoring.Restorer, plan Plan, rep *Report) {
	for i, cand := range plan.Restore {
		if ctx.Err() != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("interrupted (%v) before restoring %d of the %d volumes", context.Cause(ctx), len(plan.Restore)-i, len(plan.Restore)))
			return
		}
		v := VolumeResult{PV: cand.PV, SnapshotID: cand.ID, SizeGiB: cand.SizeGiB}
		id, err := createVolume(ctx, restorer, cand)
		if err != nil {
			v.Error = "restoring: " + err.Error()
			rep.Problems = append(rep.Problems, fmt.Sprintf("PV %s: %s", cand.PV, v.Error))
		}
		v.VolumeID = id
		rep.Volumes = append(rep.Volumes, v)
	}
}

// createVolume restores cand's volume, bounded by createTimeout but not by the end of ctx: an
// interrupted drill lets the restore under way end, so that it knows every volume it made.
func createVolume(ctx context.Context, restorer *restoring.Restorer, cand Candidate) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	return restorer.CreateVolumeFromSnapshot(ctx, cand.ID, cand.VolumeType, cand.VolumeAZ, cand.VolumeIOPS)
}

// deleteVolumes deletes every volume the drill made.
func (d *Driller) deleteVolumes(ctx context.Context, c ec2api.EC2, rep *Report) {
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
			rep.Problems = append(rep.Problems, fmt.Sprintf("interrupted (%v) while waiting for %d volumes", context.Cause(ctx), len(pending)))
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
			v := byID[aws.ToString(vol.VolumeId)]
			if v == nil {
				continue
			}
			v.RestoredFrom = aws.ToString(vol.SnapshotId)
			if vol.State == types.VolumeStateAvailable && v.ToAvailable == 0 {
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
