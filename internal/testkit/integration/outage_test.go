package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// unansweredAttempts is how many times the plugin tries a request a region does not answer.
const unansweredAttempts = 3

// requestsTo counts the requests the simulator got for region, answered or not.
func requestsTo(sim *ec2sim.Simulator, region string) int {
	n := 0
	for _, outcomes := range sim.Stats().Calls[region] {
		for _, c := range outcomes {
			n += c
		}
	}
	return n
}

// The drill: with the source region down, a recovery cluster in the copy region restores every
// volume from its copy without one request to the source region; deleting the backup there
// fails fast, naming what it could not delete and why, and keeps everything a later deletion
// needs; once the region is back, deleting again leaves nothing, and the source backs up again.
func TestSourceRegionDownRecoveryInCopyRegion(t *testing.T) {
	r := newRig(t, rig.FastConfig(1), 8)
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.PVs))
	requireOneEach(t, r, res, copyRegion)
	if err := r.Sim.TakeDown(sourceRegion, ec2sim.Outage{Frozen: true}); err != nil {
		t.Fatal(err)
	}

	before := requestsTo(r.Sim, sourceRegion)
	restore, err := r.Core.Restore(t.Context(), harness.RestoreRequest{Name: "restore-outage", Backup: res, Location: drLocation()})
	if err != nil {
		t.Fatal(err)
	}
	if !restore.Succeeded() || len(restore.Volumes) != len(r.PVs) {
		t.Fatalf("restore %s with %d of %d volumes; errors %v %v", restore.Restore.Status.Phase, len(restore.Volumes), len(r.PVs), restore.ItemErrors, restore.OperationErrors)
	}
	copies := map[string]bool{}
	for _, s := range r.Sim.Snapshots(copyRegion) {
		copies[s.ID] = true
	}
	for _, v := range r.Sim.Volumes(copyRegion) {
		if !copies[v.SnapshotID] {
			t.Errorf("volume %s in %s made from %q, not from a copy", v.ID, copyRegion, v.SnapshotID)
		}
	}
	if n := requestsTo(r.Sim, sourceRegion) - before; n != 0 {
		t.Errorf("the restore sent %d requests to %s, which is down", n, sourceRegion)
	}

	before = requestsTo(r.Sim, sourceRegion)
	start := time.Now()
	err = r.Core.DeleteBackup(res, drLocation())
	t.Logf("deletion during the outage: %s, %d requests to %s; error: %v", time.Since(start).Round(100*time.Millisecond),
		requestsTo(r.Sim, sourceRegion)-before, sourceRegion, err)
	if err == nil {
		t.Fatal("deleting the backup with its source region down reported success")
	}
	for _, s := range res.Snapshots {
		if !strings.Contains(err.Error(), s.SnapshotID) {
			t.Errorf("the deletion error does not name snapshot %s: %v", s.SnapshotID, err)
		}
	}
	if !strings.Contains(err.Error(), sourceRegion) || !strings.Contains(err.Error(), "copies") {
		t.Errorf("the deletion error does not say the region and that the copies are kept: %v", err)
	}
	if n, most := requestsTo(r.Sim, sourceRegion)-before, unansweredAttempts*len(res.Snapshots); n > most {
		t.Errorf("the deletion sent %d requests to %s, which is down; want at most %d (%d tries per snapshot)", n, sourceRegion, most, unansweredAttempts)
	}
	for _, region := range []string{sourceRegion, copyRegion} {
		if n := len(r.Sim.Snapshots(region)); n != len(r.PVs) {
			t.Errorf("%d snapshots left in %s after the failed deletion, want all %d kept for the next one", n, region, len(r.PVs))
		}
	}

	r.Sim.BringUp(sourceRegion)
	if err := r.Core.DeleteBackup(res, drLocation()); err != nil {
		t.Fatalf("deleting again after the outage: %v", err)
	}
	found := &rig.Result{}
	r.CountLeaked(found, 20*time.Second)
	require(t, found)

	ctx, cancel := context.WithTimeout(t.Context(), backupTimeout)
	defer cancel()
	again, err := r.Core.Backup(ctx, harness.BackupRequest{Name: "after-outage", Location: location(copyRegion), PVs: r.PVs})
	if err != nil {
		t.Fatal(err)
	}
	requireCompleted(t, again, len(r.PVs))
	requireOneEach(t, r, again, copyRegion)
}

// A backup whose copy region goes down while its copies are under way waits, saying why, and
// completes once the region is back, with one copy per source.
func TestCopyRegionDownMidBackupWaits(t *testing.T) {
	cfg := rig.FastConfig(1)
	cfg.CopyDuration = ec2sim.Fixed(3 * time.Second)
	r := newRig(t, cfg, 10)
	var outage time.Time
	r.Core.Hooks = harness.Hooks{BeforeReconcile: func(n int) {
		switch {
		case n == 3:
			if err := r.Sim.TakeDown(copyRegion, ec2sim.Outage{Mode: ec2sim.OutageUnavailable, Frozen: true}); err != nil {
				t.Error(err)
			}
			outage = time.Now()
		case !outage.IsZero() && time.Since(outage) > 5*time.Second:
			r.Sim.BringUp(copyRegion)
		}
	}}
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.PVs))
	requireOneEach(t, r, res, copyRegion)
	said := false
	for _, op := range res.Operations {
		for _, p := range op.History {
			said = said || strings.Contains(p.Description, copyRegion) && strings.Contains(p.Description, "Unavailable")
		}
	}
	if !said {
		t.Errorf("no Progress description said %s was unavailable", copyRegion)
	}
	if n := r.Sim.Stats().Calls[copyRegion]; n == nil {
		t.Errorf("no request reached %s", copyRegion)
	}
}
