package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// outageStart is the reconcile in which the source region goes down: every snapshot has been
// asked for, and none of the copies has been.
const outageStart = 2

// outage backs up volumes with copies while EC2 in the source region goes down for a while
// (no answer; time stands still there, so its pending snapshots stay pending), then comes
// back: every operation must complete, with one snapshot and one copy per volume, and the
// deletion must leave nothing.
func outage(ctx context.Context, e *rig.Env, res *rig.Result, volumes int, length time.Duration) error {
	return withRig(e, "outage", rig.FastConfig(8), volumes, func(r *rig.Rig) error {
		var once sync.Once
		var upAt time.Time
		r.Core.Hooks = harness.Hooks{BeforeReconcile: func(n int) {
			if n == outageStart {
				once.Do(func() {
					if err := r.Sim.TakeDown(rig.SourceRegion, ec2sim.Outage{Frozen: true}); err != nil {
						res.Problemf("%v", err)
					}
					upAt = time.Now().Add(length)
				})
			}
			if !upAt.IsZero() && time.Now().After(upAt) {
				r.Sim.BringUp(rig.SourceRegion)
			}
		}}
		err := backupAndDelete(ctx, r, res, "outage", nil)
		down := r.Sim.Stats().Calls[rig.SourceRegion]
		unanswered := 0
		for _, outcomes := range down {
			unanswered += outcomes["RegionDown"]
		}
		if unanswered == 0 {
			res.Problemf("no request met the outage")
		}
		res.Faults += fmt.Sprintf(": %d requests unanswered", unanswered)
		return err
	})
}
