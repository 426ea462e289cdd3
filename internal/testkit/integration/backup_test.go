package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
)

func TestBackupWithCopiesReportsForwardOnlyProgress(t *testing.T) {
	r := newRig(t, fastConfig(), 30)
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.pvs))
	requireOneEach(t, r.sim, res, copyRegion)
	for _, op := range res.Operations {
		if len(op.History) == 0 {
			t.Errorf("%s: no Progress answers", op.Resource.Name)
		}
		for i := 1; i < len(op.History); i++ {
			prev, cur := op.History[i-1], op.History[i]
			if cur.NCompleted < prev.NCompleted || cur.NTotal < prev.NTotal {
				t.Errorf("%s: progress went back from %d/%d to %d/%d (%q → %q)", op.Resource.Name,
					prev.NCompleted, prev.NTotal, cur.NCompleted, cur.NTotal, prev.Description, cur.Description)
			}
		}
		if last := op.History[len(op.History)-1]; last.NCompleted != last.NTotal || last.NTotal == 0 {
			t.Errorf("%s: completed at %d/%d", op.Resource.Name, last.NCompleted, last.NTotal)
		}
	}
}

func TestBackupSurvivesPluginKills(t *testing.T) {
	tests := []struct {
		name string
		// kill reports whether to kill the plugin in the item phase after item i, or in
		// reconcile n before the Progress call of open operation i (item < 0).
		kill func(item, n, i int) bool
	}{
		{"between items", func(item, _, _ int) bool { return item%7 == 3 }},
		{"mid-reconcile", func(item, _, i int) bool { return item < 0 && (i == 5 || i == 17) }},
		{"in every reconcile", func(item, _, i int) bool { return item < 0 && i == 2 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.Faults.InvisibleFor = ec2sim.Range(0, 500*time.Millisecond)
			r := newRig(t, cfg, 24)
			kills, survivors := 0, 0
			r.core.Hooks = harness.Hooks{
				AfterItem: func(item int) {
					if tc.kill(item, 0, 0) {
						kills += plugin.KillPlugins()
					}
				},
				// Between reconciles there is nothing to kill: core stops the plugin
				// processes of a reconcile at its end and starts fresh ones in the next.
				BeforeReconcile: func(int) { survivors += plugin.Running() },
				BeforeProgress: func(n, i int) {
					if tc.kill(-1, n, i) {
						kills += plugin.KillPlugins()
					}
				},
			}
			res := r.backup(location(copyRegion), 0)
			requireCompleted(t, res, len(r.pvs))
			requireOneEach(t, r.sim, res, copyRegion)
			if kills == 0 {
				t.Errorf("no plugin process was killed")
			}
			if survivors != 0 {
				t.Errorf("%d plugin processes outlived their reconcile", survivors)
			}
			t.Logf("killed %d plugin processes over %d reconciles", kills, res.Reconciles)
		})
	}
}

func TestMoreCopiesThanSlotsKeepSlotsFull(t *testing.T) {
	cfg := fastConfig()
	cfg.SnapshotDuration = ec2sim.Range(300*time.Millisecond, 600*time.Millisecond)
	cfg.CopyDuration = ec2sim.Fixed(2 * time.Second)
	r := newRig(t, cfg, 70)
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.pvs))
	requireOneEach(t, r.sim, res, copyRegion)
	st := r.sim.Stats()
	if peak := st.PeakCopiesInFlight[copyRegion]; peak != 20 {
		t.Errorf("peak copies in flight %d, want 20 (the quota, reached and never exceeded)", peak)
	}
	for _, err := range res.OperationErrors {
		if strings.Contains(err, "ResourceLimitExceeded") {
			t.Errorf("operation failed on the copy quota: %s", err)
		}
	}
	// 70 copies need 4 waves of 2s; slots refilled only a reconcile late would take longer.
	if res.Total > 20*time.Second {
		t.Errorf("backup took %s", res.Total)
	}
	t.Logf("backup took %s over %d reconciles; CopySnapshot answers %v", res.Total, res.Reconciles, st.Calls[copyRegion]["CopySnapshot"])
}

func TestThrottlingAtAWSRatesFailsNoOperation(t *testing.T) {
	r := newRig(t, fastConfig(), 200)
	r.core.Workers = 4 // Velero's --item-block-worker-count: four PVs at once
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.pvs))
	requireOneEach(t, r.sim, res, copyRegion)
	st := r.sim.Stats()
	t.Logf("backup took %s (items %s) over %d reconciles; %d EC2 calls, %d throttled", res.Total, res.ItemPhase, res.Reconciles,
		harness.TotalCalls(st), harness.CallsByOutcome(st)[harness.Throttled])
}

func TestEventualConsistency(t *testing.T) {
	cfg := fastConfig()
	cfg.Faults.InvisibleFor = ec2sim.Range(time.Second, 3*time.Second)
	r := newRig(t, cfg, 20)
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.pvs))
	requireOneEach(t, r.sim, res, copyRegion)
}

func TestAmbiguousFailuresMakeNoDuplicates(t *testing.T) {
	cfg := fastConfig()
	cfg.Faults.DropAfterEffectRate = 0.3
	cfg.Faults.InvisibleFor = ec2sim.Range(0, time.Second)
	r := newRig(t, cfg, 20)
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.pvs))
	requireOneEach(t, r.sim, res, copyRegion)
}

func TestSnapshotErrorFailsOnlyItsOperation(t *testing.T) {
	cfg := fastConfig()
	r := newRig(t, cfg, 10)
	broken := r.pvs[3]
	brokenVolume := harness.VolumeIDOf(broken)
	r.sim.SetFaults(ec2sim.Faults{ErrorVolumes: []string{brokenVolume}})
	res := r.backup(location(copyRegion), 0)
	if got := string(res.Backup.Status.Phase); got != "PartiallyFailed" {
		t.Fatalf("backup phase %s, want PartiallyFailed", got)
	}
	failed := failedOps(res)
	if len(failed) != 1 {
		t.Fatalf("failed operations %v, want only %s", failed, broken.Name)
	}
	msg, ok := failed[broken.Name]
	if !ok || !strings.Contains(msg, "Snapshot failed: simulated internal error for volume "+brokenVolume) {
		t.Errorf("%s failed with %q, want EC2's status message", broken.Name, msg)
	}
	if st := res.Backup.Status; st.BackupItemOperationsCompleted != len(r.pvs)-1 || st.BackupItemOperationsFailed != 1 {
		t.Errorf("operations %d completed, %d failed", st.BackupItemOperationsCompleted, st.BackupItemOperationsFailed)
	}
}

func TestItemOperationTimeoutCancelsPendingCopy(t *testing.T) {
	cfg := fastConfig()
	cfg.SnapshotDuration = ec2sim.Fixed(300 * time.Millisecond)
	cfg.CopyDuration = ec2sim.Fixed(6 * time.Second)
	r := newRig(t, cfg, 3)
	res := r.backup(location(copyRegion), 2*time.Second)
	if got := string(res.Backup.Status.Phase); got != "PartiallyFailed" {
		t.Fatalf("backup phase %s, want PartiallyFailed", got)
	}
	for _, op := range res.Operations {
		if op.Status.Phase != itemoperation.OperationPhaseFailed || op.Status.Error != "Asynchronous action timed out" {
			t.Errorf("%s: %s %q, want failed on the timeout", op.Resource.Name, op.Status.Phase, op.Status.Error)
		}
	}
	for _, s := range r.sim.Snapshots(copyRegion) {
		if !s.DeletePending {
			t.Errorf("copy %s of %s is %s and not being deleted after Cancel", s.ID, s.Tags["velero.io/pv"], s.State)
		}
	}
	// EC2 deletes a pending snapshot once it completes.
	waitFor(t, 10*time.Second, func() bool { return len(r.sim.Snapshots(copyRegion)) == 0 }, "copies gone")
}

func TestDeletionRemovesSourcesAndCopies(t *testing.T) {
	r := newRig(t, fastConfig(), 12)
	loc := location(copyRegion)
	res := r.backup(loc, 0)
	requireCompleted(t, res, len(r.pvs))
	if err := r.core.DeleteBackup(res, loc); err != nil {
		t.Fatalf("delete: %v", err)
	}
	left := harness.SnapshotsLeft(r.sim, sourceRegion, copyRegion)
	if left[sourceRegion] != 0 || left[copyRegion] != 0 {
		t.Errorf("snapshots left after deletion: %v", left)
	}
}

func TestBackupWithoutCopyCompletesWithSources(t *testing.T) {
	cfg := fastConfig()
	cfg.SnapshotDuration = ec2sim.Fixed(time.Second)
	cfg.CopyDuration = ec2sim.Fixed(time.Minute)
	r := newRig(t, cfg, 10)
	res := r.backup(location(""), 0)
	requireCompleted(t, res, len(r.pvs))
	requireOneEach(t, r.sim, res, "")
	// Copies would take a minute; the sources take a second.
	if wait := res.Total - res.ItemPhase; wait > 10*time.Second {
		t.Errorf("backup waited %s for 1s snapshots", wait)
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
