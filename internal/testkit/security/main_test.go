package security

import (
	"context"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// built is the plugin binary, built once for the package.
var built *rig.Plugin

func TestMain(m *testing.M) { rig.TestMain(m, &built) }

// syncPeriod is core's item-operation sync frequency in these tests.
const syncPeriod = 100 * time.Millisecond

// cycle is what a full run needs: the rig and the locations (extra config on both).
type cycle struct {
	rig       *rig.Rig
	extra     map[string]string
	opTimeout time.Duration
	// before runs once the rig is up, before the backup (to set the environment plugin
	// processes inherit).
	before func()
}

// run backs up every PV of the rig with copies, restores them in the copy region, deletes
// the backup, and returns what went wrong: an empty result is a clean run.
func (c cycle) run(ctx context.Context) *rig.Result {
	res := &rig.Result{}
	r := c.rig
	loc := rig.Location(rig.SourceRegion, rig.CopyRegion)
	dr := rig.Location(rig.CopyRegion, "")
	for k, v := range c.extra {
		loc.Spec.Config[k], dr.Spec.Config[k] = v, v
	}
	if c.before != nil {
		c.before()
	}
	b, err := r.BackupPVs(ctx, res, harness.BackupRequest{Name: "cycle", Location: loc, PVs: r.PVs, ItemOperationTimeout: c.opTimeout})
	if err != nil {
		res.Problemf("%v", err)
		return res
	}
	r.Check(res, b, nil)
	restore, err := r.Core.Restore(ctx, harness.RestoreRequest{Name: "cycle-dr", Backup: b, Location: dr, ItemOperationTimeout: c.opTimeout})
	switch {
	case err != nil:
		res.Problemf("restore: %v", err)
	case !restore.Succeeded() || len(restore.Volumes) != len(r.PVs):
		res.Problemf("restore %s with %d of %d volumes: %v %v", restore.Restore.Status.Phase, len(restore.Volumes), len(r.PVs), restore.ItemErrors, restore.OperationErrors)
	}
	r.Delete(res, b, loc)
	r.CountLeaked(res, 5*time.Second)
	return res
}
