package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

func quotaLoad(z Sizes) string {
	load := fmt.Sprintf("2 backups of 6 volumes back to back; %d volumes, copies", z.CopySlotVolumes)
	if z.PendingGP3 {
		load = "4 st1 + 3 gp3 volumes at their pending limit; " + load
	}
	return load
}

func quotaFaults(z Sizes) string {
	faults := "15 s per-volume CreateSnapshot interval, 20 concurrent copies per region"
	if z.PendingGP3 {
		faults = "pending-snapshot limits (1 st1, 5 gp3) already reached, " + faults
	}
	return faults
}

func quotas(ctx context.Context, e *rig.Env, res *rig.Result, z Sizes) error {
	if z.PendingGP3 {
		if err := pendingLimit(ctx, e, res); err != nil {
			return fmt.Errorf("pending limit: %w", err)
		}
	}
	err := withRig(e, "quota-rate", rig.FastConfig(20), 6, func(r *rig.Rig) error {
		loc := rig.Location(rig.SourceRegion, rig.CopyRegion)
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
	cfg := rig.FastConfig(21)
	cfg.CopyDuration = ec2sim.Fixed(2 * time.Second)
	return withRig(e, "quota-copies", cfg, z.CopySlotVolumes, func(r *rig.Rig) error {
		err := backupAndDelete(ctx, r, res, "copy-slots", nil)
		peak := r.Sim.Stats().PeakCopiesInFlight[rig.CopyRegion]
		if peak > 20 {
			res.Problemf("%d copies in flight at once, over EC2's 20", peak)
		}
		res.Faults += answered(r.Sim, "ResourceLimitExceeded") + fmt.Sprintf("; peak copies in flight %d", peak)
		return err
	})
}

// pendingLimit backs up st1 volumes with one snapshot pending each (their limit) and gp3 volumes
// with five, made behind the plugin's back; the plugin must wait the limits out.
func pendingLimit(ctx context.Context, e *rig.Env, res *rig.Result) error {
	const spacing = 15500 * time.Millisecond // EC2's per-volume interval, and a little
	cfg := rig.FastConfig(22)
	cfg.SnapshotDuration = ec2sim.Fixed(5*spacing + 25*time.Second)
	return withRig(e, "quota-pending", cfg, 0, func(r *rig.Rig) error {
		var specs []ec2sim.VolumeSpec
		for i := range 7 {
			typ := "st1"
			if i >= 4 {
				typ = "gp3"
			}
			specs = append(specs, ec2sim.VolumeSpec{AvailabilityZone: rig.SourceRegion + "a", Type: typ, SizeGiB: 125})
		}
		ids := r.Sim.AddVolumes(rig.SourceRegion, specs...)
		for i, id := range ids {
			r.PVs = append(r.PVs, fixture.Volume{PV: fmt.Sprintf("pending-%d", i), VolumeID: id, Zone: rig.SourceRegion + "a", SizeGiB: 125}.PersistentVolume())
		}
		c := r.EC2(rig.SourceRegion)
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
		loc := rig.Location(rig.SourceRegion, rig.CopyRegion)
		b, err := r.BackupPVs(ctx, res, harness.BackupRequest{Name: "pending-limit", Location: loc, PVs: r.PVs})
		if err != nil {
			return err
		}
		r.Check(res, b, nil)
		r.Delete(res, b, loc)
		if err := r.DeleteDirectly(ctx, rig.SourceRegion, others...); err != nil {
			return err
		}
		r.CountLeaked(res, 20*time.Second)
		res.Faults += answered(r.Sim, "ConcurrentSnapshotLimitExceeded")
		return nil
	})
}

// answered reports how often the simulator answered with an error code, for the Faults column.
func answered(sim *ec2sim.Simulator, code string) string {
	return fmt.Sprintf("; %d × %s", rig.CallsByOutcome(sim.Stats())[code], code)
}
