package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
)

// deletionCase is one way a backup's deletion meets an unexpected state.
type deletionCase struct {
	name string
	cfg  func(*ec2sim.Config)
	run  func(ctx context.Context, r *Rig, res *Result) error
}

func deletions(ctx context.Context, e *Env, res *Result) error {
	cases := []deletionCase{
		{name: "deleted-pieces", run: deleteAfterOthers},
		{name: "from-copy-region", run: func(ctx context.Context, r *Rig, res *Result) error {
			b, err := r.Backup(ctx, res, "from-copy-region", Location(SourceRegion, CopyRegion))
			if err != nil {
				return err
			}
			r.Check(res, b, nil)
			r.Delete(res, b, Location(CopyRegion, ""))
			return nil
		}},
		{name: "copies-pending", cfg: func(c *ec2sim.Config) { c.CopyDuration = ec2sim.Fixed(6 * time.Second) }, run: deleteWhileCopying},
	}
	for i, c := range cases {
		cfg := FastConfig(int64(10 + i))
		if c.cfg != nil {
			c.cfg(&cfg)
		}
		err := e.withRig("deletion-"+c.name, cfg, 6, func(r *Rig) error {
			if err := c.run(ctx, r, res); err != nil {
				return err
			}
			r.CountLeaked(res, 20*time.Second)
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// deleteAfterOthers deletes pieces of a backup behind the plugin's back (a source, a copy, both),
// then deletes the backup, twice, as Velero does when it retries a deletion.
func deleteAfterOthers(ctx context.Context, r *Rig, res *Result) error {
	loc := Location(SourceRegion, CopyRegion)
	b, err := r.Backup(ctx, res, "deleted-pieces", loc)
	if err != nil {
		return err
	}
	r.Check(res, b, nil)
	for i, gone := range []struct{ source, copy bool }{{true, false}, {false, true}, {true, true}} {
		src, cp := r.SourceOf(b.Backup.Name, r.PVs[i].Name)
		if gone.source {
			if err := r.DeleteDirectly(ctx, SourceRegion, src.ID); err != nil {
				return err
			}
		}
		if gone.copy {
			if err := r.DeleteDirectly(ctx, CopyRegion, cp.ID); err != nil {
				return err
			}
		}
	}
	r.Delete(res, b, loc)
	r.Delete(res, b, loc)
	return nil
}

// deleteWhileCopying deletes a backup as soon as all its copies are pending, and stops it.
func deleteWhileCopying(ctx context.Context, r *Rig, res *Result) error {
	const name = "copies-pending"
	loc := Location(SourceRegion, CopyRegion)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var deleted bool
	r.Core.Hooks.BeforeReconcile = func(int) {
		if deleted || r.Sim.Stats().Copies[CopyRegion]["pending"] < len(r.PVs) {
			return
		}
		b := &harness.BackupResult{Backup: &velerov1api.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: harness.Namespace, Name: name}}}
		for _, pv := range r.PVs {
			src, _ := r.SourceOf(name, pv.Name)
			b.Snapshots = append(b.Snapshots, harness.VolumeSnapshot{PV: pv.Name, SnapshotID: src.ID})
		}
		res.Duplicates += Duplicates(r.Sim, name)
		r.Delete(res, b, loc)
		deleted = true
		cancel()
	}
	_, err := r.Core.Backup(ctx, harness.BackupRequest{Name: name, Location: loc, PVs: r.PVs})
	if !deleted {
		return fmt.Errorf("the copies were never all pending at once: %v", err)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func quotas(ctx context.Context, e *Env, res *Result, z Sizes) error {
	if z.PendingGP3 {
		if err := pendingLimit(ctx, e, res); err != nil {
			return fmt.Errorf("pending limit: %w", err)
		}
	}
	err := e.withRig("quota-rate", FastConfig(20), 6, func(r *Rig) error {
		loc := Location(SourceRegion, CopyRegion)
		var backups []*harness.BackupResult
		for _, name := range []string{"rate-1", "rate-2"} {
			b, err := r.Backup(ctx, res, name, loc)
			if err != nil {
				return err
			}
			r.Check(res, b, nil)
			backups = append(backups, b)
		}
		for _, b := range backups {
			r.Delete(res, b, loc)
		}
		r.CountLeaked(res, 20*time.Second)
		res.Faults += answered(r.Sim, "SnapshotCreationPerVolumeRateExceeded")
		return nil
	})
	if err != nil {
		return fmt.Errorf("per-volume interval: %w", err)
	}
	cfg := FastConfig(21)
	cfg.CopyDuration = ec2sim.Fixed(2 * time.Second)
	return e.withRig("quota-copies", cfg, z.CopySlotVolumes, func(r *Rig) error {
		err := backupAndDelete(ctx, r, res, "copy-slots", nil)
		peak := r.Sim.Stats().PeakCopiesInFlight[CopyRegion]
		if peak > 20 {
			res.Problemf("%d copies in flight at once, over EC2's 20", peak)
		}
		res.Faults += answered(r.Sim, "ResourceLimitExceeded") + fmt.Sprintf("; peak copies in flight %d", peak)
		return err
	})
}

// pendingLimit backs up st1 volumes with one snapshot pending each (their limit) and gp3 volumes
// with five, made behind the plugin's back; the plugin must wait the limits out.
func pendingLimit(ctx context.Context, e *Env, res *Result) error {
	const spacing = 15500 * time.Millisecond // EC2's per-volume interval, and a little
	cfg := FastConfig(22)
	cfg.SnapshotDuration = ec2sim.Fixed(5*spacing + 25*time.Second)
	return e.withRig("quota-pending", cfg, 0, func(r *Rig) error {
		var specs []ec2sim.VolumeSpec
		for i := range 7 {
			typ := "st1"
			if i >= 4 {
				typ = "gp3"
			}
			specs = append(specs, ec2sim.VolumeSpec{AvailabilityZone: SourceRegion + "a", Type: typ, SizeGiB: 125})
		}
		ids := r.Sim.AddVolumes(SourceRegion, specs...)
		for i, id := range ids {
			r.PVs = append(r.PVs, harness.Volume{PV: fmt.Sprintf("pending-%d", i), VolumeID: id, Zone: SourceRegion + "a", SizeGiB: 125}.PersistentVolume())
		}
		c := r.EC2(SourceRegion)
		var others []string
		for round := range 5 {
			if round > 0 {
				time.Sleep(spacing)
			}
			for i, id := range ids {
				if i < 4 && round > 0 {
					continue // st1: one pending is the limit
				}
				out, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(id)})
				if err != nil {
					return fmt.Errorf("filling the pending limit of %s: %w", id, err)
				}
				others = append(others, aws.ToString(out.SnapshotId))
			}
		}
		r.Core.Workers = len(ids)
		loc := Location(SourceRegion, CopyRegion)
		b, err := r.BackupPVs(ctx, res, harness.BackupRequest{Name: "pending-limit", Location: loc, PVs: r.PVs})
		if err != nil {
			return err
		}
		r.Check(res, b, nil)
		r.Delete(res, b, loc)
		if err := r.DeleteDirectly(ctx, SourceRegion, others...); err != nil {
			return err
		}
		r.CountLeaked(res, 20*time.Second)
		res.Faults += answered(r.Sim, "ConcurrentSnapshotLimitExceeded")
		return nil
	})
}

// answered reports how often the simulator answered with an error code, for the Faults column.
func answered(sim *ec2sim.Simulator, code string) string {
	return fmt.Sprintf("; %d × %s", harness.CallsByOutcome(sim.Stats())[code], code)
}
