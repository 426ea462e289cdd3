package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
)

func TestBackupWithCopiesReportsForwardOnlyProgress(t *testing.T) {
	r := newRig(t, rig.FastConfig(1), 30)
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.PVs))
	requireOneEach(t, r, res, copyRegion)
	for _, op := range res.Operations {
		if len(op.History) == 0 {
			t.Errorf("%s: no Progress answers", op.Resource.Name)
		}
		var prev *velero.OperationProgress
		for i, cur := range op.History {
			if waitingForEC2(cur) {
				continue // 0 of 0 while nothing of EC2 can be read, as the README says
			}
			if prev != nil && (cur.NCompleted < prev.NCompleted || cur.NTotal < prev.NTotal) {
				t.Errorf("%s: progress went back from %d/%d to %d/%d (%q → %q)", op.Resource.Name,
					prev.NCompleted, prev.NTotal, cur.NCompleted, cur.NTotal, prev.Description, cur.Description)
			}
			prev = &op.History[i]
		}
		if last := op.History[len(op.History)-1]; last.NCompleted != last.NTotal || last.NTotal == 0 {
			t.Errorf("%s: completed at %d/%d", op.Resource.Name, last.NCompleted, last.NTotal)
		}
	}
}

// waitingForEC2 reports whether p is the progress of a call that could read nothing of its
// snapshot from EC2: 0 of 0, its description saying it waits for EC2.
func waitingForEC2(p velero.OperationProgress) bool {
	return p.NCompleted == 0 && p.NTotal == 0 && strings.HasPrefix(p.Description, "waiting for EC2:")
}

func TestMoreCopiesThanSlotsKeepSlotsFull(t *testing.T) {
	cfg := rig.FastConfig(1)
	cfg.SnapshotDuration = ec2sim.Range(300*time.Millisecond, 600*time.Millisecond)
	cfg.CopyDuration = ec2sim.Fixed(2 * time.Second)
	r := newRig(t, cfg, 70)
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.PVs))
	requireOneEach(t, r, res, copyRegion)
	st := r.Sim.Stats()
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
	r := newRig(t, rig.FastConfig(1), 200)
	r.Core.Workers = 4 // Velero's --item-block-worker-count: four PVs at once
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.PVs))
	requireOneEach(t, r, res, copyRegion)
	st := r.Sim.Stats()
	t.Logf("backup took %s (items %s) over %d reconciles; %d EC2 calls, %d throttled", res.Total, res.ItemPhase, res.Reconciles,
		rig.TotalCalls(st), rig.CallsByOutcome(st)[rig.Throttled])
}

func TestItemOperationTimeoutCancelsPendingCopy(t *testing.T) {
	cfg := rig.FastConfig(1)
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
	for _, s := range r.Sim.Snapshots(copyRegion) {
		if !s.DeletePending {
			t.Errorf("copy %s of %s is %s and not being deleted after Cancel", s.ID, s.Tags["velero.io/pv"], s.State)
		}
	}
	// EC2 deletes a pending snapshot once it completes.
	waitFor(t, 10*time.Second, func() bool { return len(r.Sim.Snapshots(copyRegion)) == 0 }, "copies gone")
}

func TestBackupWithoutCopyCompletesWithSources(t *testing.T) {
	cfg := rig.FastConfig(1)
	cfg.SnapshotDuration = ec2sim.Fixed(time.Second)
	cfg.CopyDuration = ec2sim.Fixed(time.Minute)
	r := newRig(t, cfg, 10)
	res := r.backup(location(""), 0)
	requireCompleted(t, res, len(r.PVs))
	requireOneEach(t, r, res, "")
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
