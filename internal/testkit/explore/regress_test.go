package explore

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// The regression scenarios: each finding the explorer found, shrunk to an explicit sequence of
// steps and named after what the user sees. While its category is in knownOpen the scenario
// expects it (and says so when it no longer shows, so that the category can be taken out);
// once taken out, the scenario fails if it comes back. Any other broken promise fails.

// pollsToSettle bounds the polls a scenario makes while waiting for its operations.
const pollsToSettle = 40

// pollUntilEnded reconciles every 20 s until no operation is open.
func (w *world) pollUntilEnded() {
	for range pollsToSettle {
		if !w.waiting() {
			return
		}
		w.advance(pollEvery)
		w.reconcile()
		w.checkStep()
	}
}

// runAll executes and snapshots every PV in order.
func (w *world) runAll() {
	for i := range w.ops {
		w.execute(i)
		w.create(i)
		w.checkStep()
	}
}

func onePV(s setup) setup {
	s.pvs, s.upstream = []string{"pvc-1"}, []bool{false}
	return s
}

func twoPVs(s setup) setup {
	s.pvs, s.upstream = []string{"pvc-1", "pvc-2"}, []bool{false, false}
	return s
}

const dayTimeout = 24 * time.Hour

// regression is a finding kept as a scenario: its steps, on the code that had it, break want.
type regression struct {
	name  string
	want  category
	setup setup
	steps func(w *world)
	// kept, when set, checks what the user sees once the finding is fixed.
	kept func(t *testing.T, w *world)
}

var regressions = []regression{
	{
		name:  "a volume whose snapshot EC2 does not list yet completes with no snapshot when another install has same-named snapshots",
		want:  catCompletedWithoutSnapshot,
		setup: twoPVs(setup{listingLag: 5 * time.Second, timeout: dayTimeout, seed: 1}),
		steps: func(w *world) {
			w.otherInstallSnapshot(false, "pvc-1")
			w.advance(20 * time.Second)
			w.otherInstallSnapshot(false, "pvc-2")
			w.advance(10 * time.Second)
			w.runAll()
			w.reconcile()
		},
	},
	{
		name: "vault credentials of the source account give a vault copy that is not in the vault account",
		want: catVaultCopyNotInVault,
		setup: onePV(setup{copyTo: true, vault: true, vaultRegion: copyRegion, lock: true, vaultCredsOf: sourceAccount, vaultAccountID: vaultAccount,
			timeout: dayTimeout, seed: 2}),
		steps: func(w *world) {
			w.runAll()
			w.pollUntilEnded()
		},
	},
	{
		name: "a recovery cluster restoring from the vault deletes vault copies kept by vaultRetainOnDelete",
		want: catKeptDeleted,
		setup: onePV(setup{vault: true, vaultRegion: copyRegion, retain: true, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
			timeout: dayTimeout, seed: 3}),
		steps: func(w *world) {
			w.runAll()
			w.pollUntilEnded()
			w.deleteBackup(deleteByVaultRecovery, -1, 0)
		},
	},
	{
		name:  "a snapshot whose CreateSnapshot Velero recorded as failed is copied and never deleted",
		want:  catFailedSnapshotLeaked,
		setup: onePV(setup{copyTo: true, timeout: dayTimeout, seed: 4}),
		steps: func(w *world) {
			w.itemPhaseOf(0, &faultRule{action: "CreateSnapshot", effect: faultLoseThenDown, every: 1})
		},
	},
	{
		name:  "a deletion racing the copy of a source it saw pending leaves the copy",
		want:  catCopyLeaked,
		setup: onePV(setup{copyTo: true, timeout: dayTimeout, seed: 5}),
		steps: func(w *world) {
			w.runAll()
			w.reconcile()
			w.restart()
			w.advanceUntilSnapshotAt(0, 90)
			w.deleteBackup(deleteBySource, 2, 30*time.Second)
		},
	},
	{
		name: "a mistyped vaultAccountId waits until the item-operation timeout",
		want: catStalled,
		setup: onePV(setup{vault: true, vaultRegion: farRegion, vaultCredsOf: vaultAccount, vaultAccountID: strangerAccount,
			timeout: dayTimeout, seed: 6}),
		steps: func(w *world) { w.runAll() },
	},
	{
		name:  "a PV snapshotted by the upstream plugin's location completes without the copy the backup's location asks for",
		want:  catOtherProviderNoCopy,
		setup: setup{pvs: []string{"pvc-1"}, upstream: []bool{true}, copyTo: true, timeout: dayTimeout, seed: 8},
		steps: func(w *world) {
			w.runAll()
			w.pollUntilEnded()
		},
	},
	{
		name:  "a Cancel whose mark failed lets a later reconcile copy the cancelled source",
		want:  catCopiedAfterEnd,
		setup: twoPVs(setup{copyTo: true, timeout: time.Hour, seed: 9}),
		steps: func(w *world) {
			w.setDown(copyRegion, true)
			w.execute(0)
			w.create(0)
			w.advance(30 * time.Minute)
			w.execute(1)
			w.create(1)
			w.advance(31 * time.Minute)
			w.setDown(copyRegion, false)
			w.faults = faults{{action: "CreateTags", effect: faultServerError, every: 1}}
			w.reconcile()
			w.faults = nil
			w.advance(pollEvery)
			w.reconcile()
		},
	},
	{
		name:  "CreateSnapshot answered 5xx every time stops within its patience, naming the cause",
		want:  catHung,
		setup: onePV(setup{timeout: dayTimeout, seed: 10}),
		steps: func(w *world) {
			w.itemPhaseOf(0, &faultRule{action: "CreateSnapshot", effect: faultServerError, every: 1})
		},
		kept: func(t *testing.T, w *world) {
			if err := w.ops[0].createErr; !strings.Contains(err, "got no answer or a server error") || !strings.Contains(err, "InternalError") {
				t.Errorf("CreateSnapshot's error %q does not name the server errors it got", err)
			}
		},
	},
	{
		name:  "a recovery cluster's deletion of a backup whose copy never started deletes the source in the region it copies back to",
		want:  catSourceLeaked,
		setup: onePV(setup{copyTo: true, timeout: time.Hour, seed: 11}),
		steps: func(w *world) {
			w.copyNeverStarted()
			w.deleteBackup(deleteByRecovery, -1, 0)
		},
	},
	{
		name:  "a recovery cluster's deletion of a backup whose copy never started, its source region down, fails naming that region",
		want:  catSourceLeaked,
		setup: onePV(setup{copyTo: true, timeout: time.Hour, seed: 15}),
		steps: func(w *world) {
			w.copyNeverStarted()
			w.setDown(sourceRegion, true)
			w.deleteBackup(deleteByRecovery, -1, 0)
			w.setDown(sourceRegion, false)
		},
		kept: func(t *testing.T, w *world) {
			for _, line := range w.trace {
				if strings.Contains(line, "velero: DeleteSnapshot "+w.ops[0].snapshotID) {
					if !strings.Contains(line, sourceRegion) || !strings.Contains(line, "nothing deleted") {
						t.Errorf("the recovery cluster's deletion says %q; want it to fail naming %s, nothing deleted", line, sourceRegion)
					}
					return
				}
			}
			t.Error("the recovery cluster's deletion made no DeleteSnapshot call")
		},
	},
	{
		name:  "an operation EC2 refuses to list, after a CreateSnapshot Velero recorded as failed, waits and deletes the snapshot that call made",
		want:  catRefusedSnapshotLeaked,
		setup: onePV(setup{timeout: dayTimeout, seed: 12}),
		steps: func(w *world) {
			w.execute(0)
			w.failCreate(0)
			w.faults = faults{{action: "DescribeSnapshots", effect: faultRefuse, every: 1}}
			w.reconcile()
			w.faults = nil
		},
		kept: func(t *testing.T, w *world) {
			if op := w.ops[0]; !strings.Contains(op.result, "deleted and not copied") {
				t.Errorf("the operation ended with %q; want it to say the snapshot was deleted", op.result)
			}
		},
	},
	{
		name:  "a timed-out operation whose one Cancel cannot reach EC2 leaves its failed CreateSnapshot's snapshot to the backup's deletion",
		want:  catRefusedSnapshotLeaked,
		setup: twoPVs(setup{timeout: time.Hour, seed: 13}),
		steps: func(w *world) {
			w.execute(0)
			w.create(0)
			w.execute(1)
			w.failCreate(1)
			w.setDown(sourceRegion, true)
			w.reconcile()
			w.advance(time.Hour)
			w.reconcile()
			w.setDown(sourceRegion, false)
		},
	},
	{
		name:  "a backup deleted while an operation waits for its failed CreateSnapshot's snapshot deletes that snapshot too",
		want:  catDeletedBeforeCleanup,
		setup: twoPVs(setup{copyTo: true, timeout: time.Hour, seed: 14}),
		steps: func(w *world) {
			w.execute(0)
			w.execute(1)
			w.failCreate(1)
			w.create(0)
			w.reconcile()
			w.restart()
			w.deleteBackup(deleteBySource, -1, 0)
		},
	},
	{
		name:  "an operation whose snapshot EC2 does not list yet fails following another cluster's snapshot of the backup's name, taken through the upstream plugin",
		want:  catEndedOnOthers,
		setup: twoPVs(setup{copyTo: true, listingLag: 5 * time.Second, timeout: time.Hour, seed: 16}),
		steps: func(w *world) {
			w.execute(0)
			w.sameVolumeSnapshot(0, false, byUpstream)
			w.advance(10 * time.Second)
			w.create(0)
			w.execute(1)
			w.create(1)
			w.reconcile()
			w.pollUntilEnded()
		},
		kept: func(t *testing.T, w *world) {
			if op := w.ops[0]; op.state != opCompleted {
				t.Errorf("%s ended %v (%q); want it completed following its own snapshot", op.pv, op.state, op.result)
			}
		},
	},
	{
		name:  "a snapshot a failed CreateSnapshot made without the UID, beside another cluster's snapshot of its PV through the upstream plugin, is left after the deletion",
		want:  catUIDLessLeaked,
		setup: setup{pvs: []string{"pvc-1", "pvc-2"}, upstream: []bool{true, false}, copyTo: true, timeout: time.Hour, seed: 17},
		steps: func(w *world) {
			w.execute(1)
			w.restartItemProcess()
			w.failCreate(1)
			w.execute(0)
			w.sameVolumeSnapshot(1, false, byUpstream)
			w.create(0)
			w.pollUntilEnded()
			w.deleteBackup(deleteBySource, -1, 0)
		},
	},
}

// failCreate is PV i's CreateSnapshot taking effect while its answer is lost and the region
// stays unreachable for the rest of the call: Velero records it as failed, with no snapshot ID.
func (w *world) failCreate(i int) {
	w.faults = faults{{action: "CreateSnapshot", effect: faultLoseThenDown, every: 1}}
	w.create(i)
	w.faults = nil
}

func TestRegressions(t *testing.T) {
	for _, tt := range regressions {
		t.Run(tt.name, func(t *testing.T) {
			w, err := newWorld(tt.setup)
			if err != nil {
				t.Fatal(err)
			}
			tt.steps(w)
			w.checkStep()
			w.settle()
			seen := false
			for _, v := range w.violations {
				switch {
				case v.cat == tt.want:
					seen = true
				case !knownOpen[v.cat]:
					t.Errorf("%s", v)
				}
			}
			if tt.kept != nil && !knownOpen[tt.want] {
				tt.kept(t, w)
			}
			trace := strings.Join(w.trace, "\n")
			switch {
			case seen && !knownOpen[tt.want]:
				t.Errorf("%s: fixed, and back:\n%s", tt.want, trace)
			case !seen && knownOpen[tt.want]:
				t.Logf("%s no longer shows: take it out of knownOpen", tt.want)
			case seen:
				t.Logf("known open: %s", tt.want)
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("trace:\n%s", trace)
			}
		})
	}
}

// TestAHealthyBackupKeepsEveryPromise checks the checks: a backup on a healthy EC2, followed to
// the end and deleted, breaks no promise, whatever the location asks for.
func TestAHealthyBackupKeepsEveryPromise(t *testing.T) {
	tests := []struct {
		name  string
		setup setup
	}{
		{"no copy", twoPVs(setup{timeout: dayTimeout, seed: 21})},
		{"copy to another region", twoPVs(setup{copyTo: true, listingLag: 5 * time.Second, timeout: dayTimeout, seed: 22})},
		{"copy and locked vault copy", twoPVs(setup{copyTo: true, vault: true, vaultRegion: farRegion, lock: true,
			vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount, timeout: dayTimeout, seed: 23})},
		{"vault copy kept on deletion", twoPVs(setup{vault: true, vaultRegion: copyRegion, retain: true,
			vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount, timeout: dayTimeout, seed: 24})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := newWorld(tt.setup)
			if err != nil {
				t.Fatal(err)
			}
			w.otherInstallSnapshot(true, "pvc-1")
			w.runAll()
			w.pollUntilEnded()
			w.settle()
			for _, op := range w.ops {
				if op.state != opCompleted {
					t.Errorf("%s", op)
				}
			}
			for _, v := range w.violations {
				t.Errorf("%s", v)
			}
			if t.Failed() {
				t.Logf("trace:\n%s", strings.Join(w.trace, "\n"))
			}
		})
	}
}

// TestScenariosKeepEveryPromise plays the explorer's newer actors through the cases the users
// rely on, on steps named in full: each breaks no promise.
func TestScenariosKeepEveryPromise(t *testing.T) {
	tests := []struct {
		name  string
		setup setup
		steps func(w *world)
	}{
		{
			name:  "a restore whose CreateVolume answers are all lost returns the one volume it made",
			setup: onePV(setup{listingLag: 5 * time.Second, timeout: dayTimeout, seed: 31}),
			steps: func(w *world) {
				w.runAll()
				w.pollUntilEnded()
				w.faults = faults{{action: "CreateVolume", effect: faultLoseAnswer, every: 1}}
				w.restore(0, sourceRegion)
				w.faults = nil
				if c := w.restores[0]; c.volumeID == "" {
					w.violate(catRestoreLeaked, "the restore of %s whose answers were lost returned %s, not the volume it made", c.pv, c.err)
				}
				w.restore(0, sourceRegion)
			},
		},
		{
			name:  "a restore in the copy region throttled and answered 5xx makes one volume from the copy",
			setup: twoPVs(setup{copyTo: true, listingLag: 40 * time.Second, timeout: dayTimeout, seed: 32}),
			steps: func(w *world) {
				w.runAll()
				w.pollUntilEnded()
				w.faults = faults{{action: "CreateVolume", effect: faultThrottle, every: 1}}
				w.restore(0, copyRegion)
				w.faults = faults{{action: "CreateVolume", effect: faultServerError, every: 2}}
				w.restore(0, copyRegion)
				w.restore(1, copyRegion)
				w.faults = nil
			},
		},
		{
			name:  "a restore whose answer is lost while the region goes down says which volume may appear",
			setup: onePV(setup{timeout: dayTimeout, seed: 33}),
			steps: func(w *world) {
				w.runAll()
				w.pollUntilEnded()
				w.faults = faults{{action: "CreateVolume", effect: faultLoseThenDown, every: 1}}
				w.restore(0, sourceRegion)
				w.faults = nil
			},
		},
		{
			name: "a Kubernetes API answering 503 and timing out, and STS failing, only make the operations wait with the location's credentials",
			setup: twoPVs(setup{copyTo: true, vault: true, vaultRegion: farRegion, lock: true, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
				timeout: dayTimeout, seed: 34}),
			steps: func(w *world) {
				w.runAll()
				w.kube = &kubeFault{effect: kubeUnavailable, every: 1}
				for range 50 { // past the 15 minutes a snapshot not listed is waited for
					w.advance(pollEvery)
					w.reconcile()
					w.checkStep()
				}
				w.kube = &kubeFault{effect: kubeTimeout, every: 2}
				w.faults = faults{{action: "GetCallerIdentity", effect: faultServerError, every: 1}}
				w.pollUntilEnded()
				w.kube, w.faults = nil, nil
				w.pollUntilEnded()
				for _, op := range w.ops {
					if op.state != opCompleted {
						w.violate(catStalled, "%s", op)
					}
				}
			},
		},
		{
			name: "a Cancel of an operation whose vault copy is locked while pending sends no DeleteSnapshot for it and returns nil",
			setup: onePV(setup{vault: true, vaultRegion: farRegion, lock: true, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
				timeout: time.Hour, slowCopies: true, seed: 35}),
			steps: func(w *world) {
				w.timeOutWithCopiesPending(farRegion, 3)
				w.requireLockedPendingCancelledQuietly()
			},
		},
		{
			name:  "many operations timing out in one reconcile at EC2's request rate each cancel within the budget",
			setup: manyPVs(24, setup{copyTo: true, timeout: time.Hour, slowCopies: true, requestTime: mutatingRequestTime, seed: 36}),
			steps: func(w *world) {
				w.timeOutWithCopiesPending(copyRegion, 4)
				if w.cancels.copyDeletions == 0 {
					w.violate(catCancelOverBudget, "no pending copy was deleted by the Cancels: the scenario tests nothing")
				}
				w.logf("the reconcile's Cancels deleted %d pending copies", w.cancels.copyDeletions)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := newWorld(tt.setup)
			if err != nil {
				t.Fatal(err)
			}
			tt.steps(w)
			w.checkStep()
			settleAndJudge(t, w)
		})
	}
}

// laterRegressions are the findings of the restore, Kubernetes API, old-operation and Cancel
// actors, played by TestRegressions with the others.
var laterRegressions = []regression{
	{
		name:  "with the Kubernetes API refusing the plugin, a PV snapshotted by the upstream plugin's location completes without the copy the backup's location asks for",
		want:  catOtherProviderUnread,
		setup: setup{pvs: []string{"pvc-1"}, upstream: []bool{true}, copyTo: true, timeout: dayTimeout, seed: 41},
		steps: func(w *world) {
			w.runAll()
			w.kube = &kubeFault{effect: kubeForbidden, every: 1}
			w.pollUntilEnded()
			w.kube = nil
		},
	},
	{
		name:  "a v1 operation of a static PV sharing its EBS volume completes following the other PV's snapshot while its own is not listed yet",
		want:  catOldOperationOtherPV,
		setup: upgradeSetup(setup{listingLag: 5 * time.Second, timeout: dayTimeout, seed: 42}, true, false),
		steps: func(w *world) {
			w.execute(0)
			w.create(0)
			w.advance(time.Minute)
			w.execute(1)
			w.create(1)
			w.reconcile()
		},
	},
	{
		name:  "a CreateSnapshot whose returned mark took effect with every answer lost fails, and its snapshot, marked returned, is never deleted",
		want:  catMarkedReturnedLeaked,
		setup: onePV(setup{listingLag: 40 * time.Second, requestTime: mutatingRequestTime, timeout: dayTimeout, seed: 43}),
		steps: func(w *world) {
			w.itemPhaseOf(0, &faultRule{action: "CreateTags", effect: faultLoseAnswer, every: 1})
		},
	},
	{
		name: "a vault copy not listed yet when a reconcile described it is copied again after a slow STS answer",
		want: catDuplicateAfterSlow,
		setup: onePV(setup{vault: true, vaultRegion: copyRegion, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
			listingLag: 40 * time.Second, timeout: dayTimeout, seed: 44}),
		steps: func(w *world) {
			w.runAll()
			for range 12 {
				w.advance(10 * time.Second)
				w.faults = faults{{action: "GetCallerIdentity", effect: faultSlow, every: 1}}
				w.reconcile()
				w.faults = nil
				w.checkStep()
			}
		},
	},
}

func init() { regressions = append(regressions, laterRegressions...) }

// TestOldOperationsOfStaticPVsOnOneVolumeKeepEveryPromise follows, on this release, the v1
// operations of two static PVs on one EBS volume whose snapshots an earlier release took
// without create tokens: neither PV's recorded snapshot is deleted as the other's stray, and
// both operations end.
func TestOldOperationsOfStaticPVsOnOneVolumeKeepEveryPromise(t *testing.T) {
	// oldSnapshotsApart separates the two PVs' snapshots: EC2 takes one snapshot of a volume
	// every 15 seconds.
	const oldSnapshotsApart = 20 * time.Second
	for _, withUID := range []bool{false, true} {
		for _, marked := range []bool{false, true} {
			t.Run("UID tag "+strconv.FormatBool(withUID)+", recorded mark "+strconv.FormatBool(marked), func(t *testing.T) {
				w, err := newWorld(upgradeSetup(setup{timeout: dayTimeout, seed: 51}, withUID, marked))
				if err != nil {
					t.Fatal(err)
				}
				w.execute(0)
				w.create(0)
				w.advance(oldSnapshotsApart)
				w.execute(1)
				w.create(1)
				w.pollUntilEnded()
				settleAndJudge(t, w)
			})
		}
	}
	// The earlier release's CreateSnapshot of the first PV retried after a lost answer: two
	// snapshots with the UID of one PV, only the returned one marked. They count as one of the
	// snapshots Velero recorded, so the other PV's operation, its own not listed yet, does not
	// follow the first PV's completed one; the unmarked one goes with the backup.
	t.Run("a CreateSnapshot retried after a lost answer", func(t *testing.T) {
		s := upgradeSetup(setup{listingLag: 5 * time.Second, timeout: dayTimeout, seed: 52}, true, true)
		s.upgrade.retried = true
		w, err := newWorld(s)
		if err != nil {
			t.Fatal(err)
		}
		w.execute(0)
		w.create(0)
		w.advanceUntilSnapshotAt(0, 100)
		w.execute(1)
		w.create(1)
		w.reconcile()
		w.checkStep()
		w.pollUntilEnded()
		settleAndJudge(t, w)
	})
	// The returned snapshot of the retried call not listed yet while the lost answer's is: the
	// first PV's operation does not follow the unmarked one before every snapshot its call may
	// have made is listed.
	t.Run("a CreateSnapshot retried after a lost answer, the returned snapshot not listed yet", func(t *testing.T) {
		s := upgradeSetup(setup{listingLag: 40 * time.Second, timeout: time.Hour, seed: 54}, true, true)
		s.upgrade.retried = true
		w, err := newWorld(s)
		if err != nil {
			t.Fatal(err)
		}
		w.execute(0)
		w.execute(1)
		w.create(0)
		w.create(1)
		w.advance(30 * time.Second)
		w.reconcile()
		w.checkStep()
		w.pollUntilEnded()
		settleAndJudge(t, w)
	})
	// On an st1 volume (one pending snapshot) the retry is refused while the lost answer's
	// snapshot is pending: both CreateSnapshot calls fail, and Velero records no native snapshot.
	// The snapshot the lost answer made is then deleted by the operations, not followed to
	// completion and left by the backup's deletion, which Velero sends for no snapshot.
	t.Run("a CreateSnapshot retried after a lost answer on an st1 volume, every native snapshot recorded failed", func(t *testing.T) {
		s := upgradeSetup(setup{timeout: time.Hour, seed: 53}, true, true)
		s.upgrade.retried, s.hddVolumes = true, true
		w, err := newWorld(s)
		if err != nil {
			t.Fatal(err)
		}
		w.execute(0)
		w.create(0)
		w.execute(1)
		w.create(1)
		if w.ops[0].createErr == "" || w.ops[1].createErr == "" {
			t.Fatalf("want both CreateSnapshot calls failed on the st1 volume's pending snapshot; trace:\n%s", strings.Join(w.trace, "\n"))
		}
		w.reconcile()
		w.checkStep()
		w.pollUntilEnded()
		settleAndJudge(t, w)
	})
}

// manyPVs is s with n PVs, none through the upstream plugin.
func manyPVs(n int, s setup) setup {
	s.pvs, s.upstream = nil, nil
	for i := range n {
		s.pvs = append(s.pvs, "pvc-"+strconv.Itoa(i+1))
		s.upstream = append(s.upstream, false)
	}
	return s
}

// requireLockedPendingCancelledQuietly checks the scenario of a Cancel with a vault copy locked
// while pending: the copy was locked and pending when Velero cancelled, and Cancel returned nil.
func (w *world) requireLockedPendingCancelledQuietly() {
	op := w.ops[0]
	if op.result != "timed out" || !strings.HasSuffix(w.trace[len(w.trace)-1], "Cancel -> <nil>") {
		w.violate(catCancelDeletedLocked, "the operation was not cancelled quietly: %s; last step %q", op, w.trace[len(w.trace)-1])
	}
	for _, s := range w.sim.SnapshotsIn(vaultAccount, farRegion) {
		if s.SourceSnapshotID == op.snapshotID && s.StartTime.Before(op.cancelledAt) && !(lockedNow(s) && s.State == "pending") {
			w.violate(catCancelDeletedLocked, "vault copy %s was %s, lock %q, at the Cancel: the scenario does not test a locked pending copy", s.ID, s.State, s.LockState)
		}
	}
}

// timeOutWithCopiesPending runs the backup, copies outlasting the timeout (setup.slowCopies),
// with region down until shortly before the last moment a copy is started (a create window
// before the timeout), brings region back for reconciles reconciles 10 s apart (the copies
// start, still pending), and then lets Velero's one-hour item-operation timeout pass and cancel
// them.
func (w *world) timeOutWithCopiesPending(region string, reconciles int) {
	w.setDown(region, true)
	w.runAll()
	w.advance(45 * time.Minute)
	w.setDown(region, false)
	for range reconciles {
		w.reconcile()
		w.advance(10 * time.Second)
	}
	w.advance(15 * time.Minute)
	w.reconcile()
	w.checkStep()
}

// itemPhaseOf runs Execute and CreateSnapshot of PV i with EC2 injecting f during the create.
func (w *world) itemPhaseOf(i int, f *faultRule) {
	w.execute(i)
	w.faults = faults{f}
	w.create(i)
	w.faults = nil
}

// copyNeverStarted runs the backup with the copy region down until Velero's one-hour
// item-operation timeout has passed: its sources are kept, no copy of them ever started.
func (w *world) copyNeverStarted() {
	w.setDown(copyRegion, true)
	w.runAll()
	w.advance(time.Hour)
	w.reconcile()
	w.setDown(copyRegion, false)
}

// settleAndJudge settles w's run and fails t for each promise it broke, logging the trace when
// t failed or runs verbose.
func settleAndJudge(t *testing.T, w *world) {
	t.Helper()
	w.settle()
	for _, v := range w.violations {
		t.Errorf("%s", v)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("trace:\n%s", strings.Join(w.trace, "\n"))
	}
}
