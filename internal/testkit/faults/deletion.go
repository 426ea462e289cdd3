package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deletionCase is one way a backup's deletion meets an unexpected state.
type deletionCase struct {
	name string
	cfg  func(*ec2sim.Config)
	run  func(ctx context.Context, r *rig.Rig, res *rig.Result) error
}

func deletions(ctx context.Context, e *rig.Env, res *rig.Result) error {
	cases := []deletionCase{
		{name: "deleted-pieces", run: deleteAfterOthers},
		{name: "from-copy-region", run: func(ctx context.Context, r *rig.Rig, res *rig.Result) error {
			b, err := r.Backup(ctx, res, "from-copy-region", rig.Location(rig.SourceRegion, rig.CopyRegion))
			if err != nil {
				return err
			}
			r.Check(res, b, nil)
			r.Delete(res, b, rig.Location(rig.CopyRegion, ""))
			return nil
		}},
		{name: "copies-pending", cfg: func(c *ec2sim.Config) { c.CopyDuration = ec2sim.Fixed(6 * time.Second) }, run: deleteWhileCopying},
	}
	for i, c := range cases {
		cfg := rig.FastConfig(int64(10 + i))
		if c.cfg != nil {
			c.cfg(&cfg)
		}
		err := withRig(e, "deletion-"+c.name, cfg, 6, func(r *rig.Rig) error {
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
func deleteAfterOthers(ctx context.Context, r *rig.Rig, res *rig.Result) error {
	loc := rig.Location(rig.SourceRegion, rig.CopyRegion)
	b, err := r.Backup(ctx, res, "deleted-pieces", loc)
	if err != nil {
		return err
	}
	r.Check(res, b, nil)
	for i, gone := range []struct{ source, copy bool }{{true, false}, {false, true}, {true, true}} {
		src, cp := r.SourceOf(b.Backup.Name, r.PVs[i].Name)
		if gone.source {
			if err := r.DeleteDirectly(ctx, rig.SourceRegion, src.ID); err != nil {
				return err
			}
		}
		if gone.copy {
			if err := r.DeleteDirectly(ctx, rig.CopyRegion, cp.ID); err != nil {
				return err
			}
		}
	}
	r.Delete(res, b, loc)
	r.Delete(res, b, loc)
	return nil
}

// deleteWhileCopying deletes a backup as soon as all its copies are pending, and stops it.
func deleteWhileCopying(ctx context.Context, r *rig.Rig, res *rig.Result) error {
	const name = "copies-pending"
	loc := rig.Location(rig.SourceRegion, rig.CopyRegion)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var deleted bool
	r.Core.Hooks.BeforeReconcile = func(int) {
		if deleted || r.Sim.Stats().Copies[rig.CopyRegion]["pending"] < len(r.PVs) {
			return
		}
		b := &harness.BackupResult{Backup: &velerov1api.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: harness.Namespace, Name: name}}}
		for _, pv := range r.PVs {
			src, _ := r.SourceOf(name, pv.Name)
			b.Snapshots = append(b.Snapshots, harness.VolumeSnapshot{PV: pv.Name, SnapshotID: src.ID})
		}
		res.Duplicates += rig.Duplicates(r.Sim, name)
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
