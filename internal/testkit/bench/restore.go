package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Restore is the large-restore scenario: after a disaster, a recovery cluster in the copy
// region restores every volume of a backup at once from the copies there.
type Restore struct {
	// Volumes is the number of PVs restored.
	Volumes int `json:"volumes"`
	// Available is how long a new volume stays creating before it is available.
	Available ec2sim.DurationRange `json:"volumeAvailableAfter"`
	// SyncPeriod is Velero's --item-operation-sync-frequency.
	SyncPeriod ec2sim.Duration `json:"syncPeriod"`
	// ThrottleScale multiplies AWS's request rates (1: AWS's documented rates).
	ThrottleScale float64 `json:"throttleScale"`
	// Snapshots and Copies are the lifecycles of the backup made first, whose time is not
	// measured.
	Snapshots ec2sim.DurationRange `json:"backupSnapshotDuration"`
	Copies    ec2sim.DurationRange `json:"backupCopyDuration"`
}

// StandardRestore restores 500 volumes, available 10 s after CreateVolume, with the standard
// scenario's 1 s sync period at AWS's rates, from a backup with second-long lifecycles.
func StandardRestore() Restore {
	fast := rig.FastConfig(0)
	return Restore{
		Volumes:       500,
		Available:     ec2sim.Fixed(10 * time.Second),
		SyncPeriod:    ec2sim.Duration{Duration: time.Second},
		ThrottleScale: 1,
		Snapshots:     fast.SnapshotDuration,
		Copies:        fast.CopyDuration,
	}
}

// LowerBound is the shortest any restore can take: the time to issue every CreateVolume at
// EC2's CreateVolume rate (a burst of 100, then 5 per second), plus the longest time a volume
// takes to become available.
func (s Restore) LowerBound() time.Duration {
	return newBucket(createVolumeBurst, createVolumeRate, s.ThrottleScale).issueTime(s.Volumes) + longest(s.Available)
}

func (s Restore) simConfig() ec2sim.Config {
	return ec2sim.Config{SnapshotDuration: s.Snapshots, CopyDuration: s.Copies, VolumeCreateDuration: s.Available,
		ThrottleScale: s.ThrottleScale, Unthrottled: s.ThrottleScale <= 0, CopyLimit: copySlots, Seed: 42}
}

// RunRestore backs up the scenario's volumes with copies (not measured), then restores them
// all in the copy region with this plugin, through Velero's plugin client, and measures the
// restore: its time from start to end, the EC2 calls it made, its failed operations and
// volumes not restored.
func (r Runner) RunRestore(ctx context.Context, s Restore) (Result, error) {
	rg, err := r.newRig(fmt.Sprintf("bench-restore-%d", s.Volumes), s.simConfig(), s.SyncPeriod.Duration)
	if err != nil {
		return Result{}, err
	}
	defer rg.Close()
	pvs := fixture.Fleet{Region: rig.SourceRegion, Count: s.Volumes}.Seed(rg.Sim)
	backup, err := rg.Core.Backup(ctx, harness.BackupRequest{Name: "bench-restore", Location: rig.Location(rig.SourceRegion, rig.CopyRegion), PVs: pvs})
	if err != nil {
		return Result{}, fmt.Errorf("the backup to restore: %w", err)
	}
	if !backup.Succeeded() {
		return Result{}, fmt.Errorf("the backup to restore is %s: %v %v", backup.Backup.Status.Phase, backup.ItemErrors, backup.OperationErrors)
	}
	before := rg.Sim.Stats()
	dr := harness.NewLocation("default", map[string]string{ebs.ConfigRegion: rig.CopyRegion})
	var restore *harness.RestoreResult
	peak, err := r.sampled(func() (err error) {
		restore, err = rg.Core.Restore(ctx, harness.RestoreRequest{Name: "bench-restore-dr", Backup: backup, Location: dr})
		return err
	})
	if err != nil {
		return Result{}, err
	}
	res := Result{Strategy: "plugin", Volumes: s.Volumes, Measured: s.Volumes, Reconciles: restore.Reconciles, ThrottleScale: s.ThrottleScale,
		PeakMemoryBytes: peak}
	res.fill(s.LowerBound(), "", callsSince(before, rg.Sim.Stats()), restore.Total)
	res.FailedOps = restore.Restore.Status.RestoreItemOperationsFailed + s.Volumes - len(restore.Volumes)
	return res, nil
}
