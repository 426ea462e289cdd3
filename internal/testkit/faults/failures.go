package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

func storm(ctx context.Context, e *rig.Env, res *rig.Result, volumes int) error {
	cfg := rig.FastConfig(1)
	cfg.ThrottleScale = 0.1
	res.NotDeleted = true // deleting 2,000 snapshots at 0.5 a second would add an hour
	return withRig(e, "storm", cfg, volumes, func(r *rig.Rig) error {
		b, err := r.Backup(ctx, res, "storm", rig.Location(rig.SourceRegion, rig.CopyRegion))
		if err != nil {
			return err
		}
		r.Check(res, b, nil)
		st := r.Sim.Stats()
		res.Faults += fmt.Sprintf(": %d of %d requests throttled", rig.CallsByOutcome(st)[rig.Throttled], rig.TotalCalls(st))
		return nil
	})
}

func ambiguous(ctx context.Context, e *rig.Env, res *rig.Result, volumes int, copies bool) error {
	cfg := rig.FastConfig(2)
	cfg.Faults = ec2sim.Faults{
		DropAfterEffectRate: 0.1, DropActions: []string{"CreateSnapshot", "CopySnapshot"},
		ServerErrorRate: 0.05, InvisibleFor: ec2sim.Range(0, time.Second),
	}
	copyTo := ""
	if copies {
		copyTo = rig.CopyRegion
	}
	return withRig(e, "ambiguous", cfg, volumes, func(r *rig.Rig) error {
		err := backupAndDeleteTo(ctx, r, res, "ambiguous", copyTo, nil)
		out := rig.CallsByOutcome(r.Sim.Stats())
		res.Faults += fmt.Sprintf(": %d answers 500, %d connections closed", out["InternalError"], out["ConnectionClosed"])
		return err
	})
}

func consistency(ctx context.Context, e *rig.Env, res *rig.Result, volumes int, invisible time.Duration) error {
	cfg := rig.FastConfig(3)
	cfg.Faults.InvisibleFor = ec2sim.Range(0, invisible)
	return withRig(e, "consistency", cfg, volumes, func(r *rig.Rig) error {
		return backupAndDelete(ctx, r, res, "consistency", nil)
	})
}

// kills kills plugin processes after a random item and before random Progress calls, and
// checks that no plugin process outlives its reconcile: Velero core stops a reconcile's plugin
// processes at its end and starts fresh ones in the next.
func kills(ctx context.Context, e *rig.Env, res *rig.Result, trials, volumes int) error {
	killed, survivors := 0, 0
	for trial := range trials {
		cfg := rig.FastConfig(int64(100 + trial))
		cfg.Faults.InvisibleFor = ec2sim.Range(0, 500*time.Millisecond)
		err := withRig(e, fmt.Sprintf("kill-%02d", trial), cfg, volumes, func(r *rig.Rig) error {
			rng := rand.New(rand.NewPCG(uint64(trial), 7))
			afterItem := rng.IntN(volumes)
			r.Core.Hooks = harness.Hooks{
				AfterItem: func(i int) {
					if i == afterItem {
						killed += e.Plugin.KillPlugins()
					}
				},
				BeforeReconcile: func(int) { survivors += e.Plugin.Running() },
				BeforeProgress: func(n, i int) {
					if rng.Float64() < 0.1 {
						killed += e.Plugin.KillPlugins()
					}
				},
			}
			return backupAndDelete(ctx, r, res, fmt.Sprintf("kill-%02d", trial), nil)
		})
		if err != nil {
			return err
		}
	}
	if killed == 0 {
		res.Problemf("no plugin process was killed")
	}
	if survivors != 0 {
		res.Problemf("%d plugin processes outlived their reconcile", survivors)
	}
	res.Faults += fmt.Sprintf(": %d processes killed", killed)
	return nil
}

func errorStates(ctx context.Context, e *rig.Env, res *rig.Result) error {
	return withRig(e, "error-states", rig.FastConfig(4), 10, func(r *rig.Rig) error {
		snapPV, copyPV := r.PVs[3], r.PVs[6]
		snapVol, copyVol := fixture.VolumeIDOf(snapPV), fixture.VolumeIDOf(copyPV)
		r.Sim.SetFaults(ec2sim.Faults{ErrorVolumes: []string{snapVol}, ErrorCopyVolumes: []string{copyVol}})
		res.WantFailed = 2
		return backupAndDelete(ctx, r, res, "error-states", map[string]string{
			snapPV.Name: "Snapshot failed: simulated internal error for volume " + snapVol,
			copyPV.Name: "Snapshot copy failed: simulated internal error for a snapshot of volume " + copyVol,
		})
	})
}
