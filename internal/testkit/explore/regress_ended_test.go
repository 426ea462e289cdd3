package explore

import (
	"strings"
	"testing"
	"time"
)

// vaultOnly is one or two PVs' location with only a vault copy into the far region, locked when
// lock is set, with the vault's own credentials.
func vaultOnly(s setup, lock bool) setup {
	s.vault, s.vaultRegion, s.lock, s.vaultCredsOf, s.vaultAccountID = true, farRegion, lock, vaultAccount, vaultAccount
	s.timeout = dayTimeout
	return s
}

// refusing is EC2 refusing every action's request made with role's credentials (an IAM or
// KMS key policy of that account).
func refusing(action, role string) faults {
	return faults{{action: action, role: role, effect: faultRefuse, every: 1}}
}

// endedRegressions are the findings of the restored-volume, one-account-refusing,
// slow-copy and progress actors, played by TestRegressions with the others.
var endedRegressions = []regression{
	{
		name:  "a volume this plugin restored, backed up again through the upstream plugin's location, fails naming that location instead of completing without its copy",
		want:  catRestoredVolumeNoCopy,
		setup: setup{pvs: []string{"pvc-1"}, upstream: []bool{true}, copyTo: true, restoredVolumes: true, timeout: dayTimeout, seed: 51},
		steps: func(w *world) {
			w.runAll()
			w.pollUntilEnded()
		},
		kept: func(t *testing.T, w *world) {
			if op := w.ops[0]; op.state != opFailed || !strings.Contains(op.result, "taken through") {
				t.Errorf("the operation ended %s with %q; want it failed, naming the location that took the snapshot", op.state, op.result)
			}
		},
	},
	{
		name: "a regional copy EC2 refuses (its KMS key) fails the operation with nothing left shared with the vault account",
		want: catSharedAfterEnd,
		setup: func() setup {
			s := vaultOnly(onePV(setup{seed: 52}), true)
			s.copyTo = true
			return s
		}(),
		steps: func(w *world) {
			w.runAll()
			w.advanceUntilSnapshotAt(0, 100)
			w.faults = refusing("CopySnapshot", "source")
			w.reconcile()
			w.faults = nil
			w.pollUntilEnded()
			w.advance(w.lag())
		},
		kept: failedNamingRefusal,
	},
	{
		name:  "a vault account refusing CopySnapshot fails each operation once: a later reconcile shares no failed operation's source again",
		want:  catSharedAgain,
		setup: vaultOnly(twoPVs(setup{seed: 53}), false),
		steps: func(w *world) { w.secondOpenWhenFirstMeets(refusing("CopySnapshot", "vault")) },
		kept: func(t *testing.T, w *world) {
			if op := w.ops[0]; op.state != opFailed {
				t.Errorf("%s ended %s with %q; want it failed on the refused vault copy", op.pv, op.state, op.result)
			}
		},
	},
	{
		name:  "a regional copy refused while STS cannot confirm the vault credentials' account fails the operation only once its vault copy is locked",
		want:  catUnlockedAfterEnd,
		setup: regionalRefusedBesideLockedVault(56),
		steps: func(w *world) {
			w.refuseRegionalThenEnd(faults{{action: "GetCallerIdentity", effect: faultServerError, every: 1}}, nil)
		},
		kept: failedNamingRefusal,
	},
	{
		name:  "a regional copy refused while the Kubernetes API refuses to show the backup's locations fails the operation only once its vault copy is locked",
		want:  catUnlockedAfterEnd,
		setup: regionalRefusedBesideLockedVault(57),
		steps: func(w *world) {
			w.refuseRegionalThenEnd(nil, &kubeFault{effect: kubeForbidden, every: 1})
		},
		kept: failedNamingRefusal,
	},
	{
		name: "STS refusing to name the vault credentials' account fails the operation only once the vault copy asked for before is locked",
		want: catUnlockedAfterEnd,
		setup: func() setup {
			s := vaultOnly(onePV(setup{seed: 58}), true)
			s.listingLag = 40 * time.Second
			return s
		}(),
		steps: func(w *world) {
			w.runAll()
			w.advanceUntilSnapshotAt(0, 100)
			w.advance(w.lag())
			w.reconcile() // the vault copy asked for, not listed yet
			w.reconcileUnderThenEnd(faults{{action: "GetCallerIdentity", effect: faultRefuse, every: 1}})
		},
	},
	{
		name: "Velero's item-operation timeout, with a large vault copy still pending, keeps the copy vaultRetainOnDelete keeps",
		want: catCancelDeletedRetained,
		setup: func() setup {
			s := vaultOnly(onePV(setup{seed: 54}), false)
			s.retain, s.slowCopies, s.timeout = true, true, time.Hour
			return s
		}(),
		steps: func(w *world) {
			w.runAll()
			w.advanceUntilSnapshotAt(0, 100)
			for range 3 {
				w.reconcile()
				w.advance(pollEvery)
			}
			w.advance(time.Hour)
			w.reconcile()
		},
	},
	{
		name:  "a DescribeSnapshots throttled past its retries shows 0 of 0 while waiting for EC2, never a smaller figure",
		want:  catProgressBack,
		setup: onePV(setup{copyTo: true, timeout: dayTimeout, seed: 55}),
		steps: func(w *world) {
			w.runAll()
			w.advanceUntilSnapshotAt(0, 100)
			w.reconcile()
			w.advance(pollEvery)
			w.faults = faults{{action: "DescribeSnapshots", effect: faultThrottle, every: 1}}
			w.reconcile()
			w.faults = nil
		},
	},
	{
		name: "an operation failing on its vault account with its copy-failed mark refused and its copy-requested mark failing in that call: a later Progress of the same process copies nothing of it",
		want: catCopiedAfterEnded,
		setup: func() setup {
			s := twoPVs(setup{copyTo: true, vault: true, vaultRegion: farRegion, vaultCredsOf: sourceAccount, vaultAccountID: vaultAccount, timeout: dayTimeout, seed: 57})
			s.markRefused = true
			return s
		}(),
		steps: func(w *world) {
			w.runAll()
			w.advanceUntilSnapshotAt(0, 100)
			w.advanceUntilSnapshotAt(1, 100)
			w.faults = faults{{action: "CreateTags", effect: faultServerError, every: 1, oneCall: true}}
			w.reconcile()
			w.faults = nil
		},
		kept: func(t *testing.T, w *world) {
			if op := w.ops[0]; op.state != opFailed || !strings.Contains(op.result, sourceAccount) {
				t.Errorf("%s ended %s with %q; want it failed, naming the vault credentials' account", op.pv, op.state, op.result)
			}
		},
	},
	{
		name: "an operation failing because EC2 refuses (IAM, for one reconcile) the marks of its source: a later reconcile shares nothing of it with the vault account",
		want: catSharedAgain,
		setup: func() setup {
			s := vaultOnly(twoPVs(setup{seed: 59}), true)
			s.copyTo = true
			return s
		}(),
		steps: func(w *world) { w.secondOpenWhenFirstMeets(refusing("CreateTags", "source")) },
		kept: func(t *testing.T, w *world) {
			if op := w.ops[0]; op.state != opFailed || !strings.Contains(op.result, "CreateTags") {
				t.Errorf("%s ended %s with %q; want it failed, naming the refused CreateTags", op.pv, op.state, op.result)
			}
		},
	},
	{
		name: "vaultRetainOnDelete turned off after the backup: its deletion keeps the vault copy its tag keeps, and audit --delete-orphans keeps it too",
		want: catOrphanDeletion,
		setup: func() setup {
			s := vaultOnly(onePV(setup{seed: 60}), false)
			s.retain, s.earlierBackup = true, true
			return s
		}(),
		steps: func(w *world) {
			w.runAll()
			w.pollUntilEnded()
			w.changeConfig(retainTurnedOff)
			w.checkStep()
			w.settle()
			w.deleteOrphans("", 0, true)
		},
	},
}

func init() { regressions = append(regressions, endedRegressions...) }

// reconcileUnderThenEnd runs one reconcile under faults f, then, without faults, polls until
// every operation has ended and lets EC2's listing lag pass.
func (w *world) reconcileUnderThenEnd(f faults) {
	w.reconcileUnderKubeThenEnd(f, nil)
}

// reconcileUnderKubeThenEnd is reconcileUnderThenEnd with the Kubernetes API failing as k too.
func (w *world) reconcileUnderKubeThenEnd(f faults, k *kubeFault) {
	w.faults, w.kube = f, k
	w.reconcile()
	w.faults, w.kube = nil, nil
	w.checkStep()
	w.pollUntilEnded()
	w.advance(w.lag())
}

// secondOpenWhenFirstMeets completes the first PV's snapshot and takes the second's, then runs
// one reconcile under faults f and ends (reconcileUnderThenEnd): the first operation meets f
// while the second stays open after it, its Progress calls filling copies.
func (w *world) secondOpenWhenFirstMeets(f faults) {
	w.execute(0)
	w.create(0)
	w.advanceUntilSnapshotAt(0, 100)
	w.execute(1)
	w.create(1)
	w.reconcileUnderThenEnd(f)
}

// regionalRefusedBesideLockedVault is one PV's location with a locked vault copy and a regional
// copy EC2 queues until a refusal begins mid-run.
func regionalRefusedBesideLockedVault(seed int64) setup {
	s := vaultOnly(onePV(setup{seed: seed}), true)
	s.copyTo, s.refusedCopy, s.refusalLate, s.regionalQueued = true, regionalCopyRefused, true, true
	return s
}

// refuseRegionalThenEnd runs the backup until its vault copy is asked for and its regional copy
// queued, begins the regional refusal, and reconciles once under f and k, then to the end.
func (w *world) refuseRegionalThenEnd(f faults, k *kubeFault) {
	w.runAll()
	w.advanceUntilSnapshotAt(0, 100)
	w.reconcile() // the regional copy queued, the vault copy asked for
	w.beginRefusal()
	w.reconcileUnderKubeThenEnd(f, k)
}

// failedNamingRefusal checks that the operation failed, naming the refused copy.
func failedNamingRefusal(t *testing.T, w *world) {
	if op := w.ops[0]; op.state != opFailed || !strings.Contains(op.result, "refused") {
		t.Errorf("the operation ended %s with %q; want it failed, naming the refused copy", op.state, op.result)
	}
}
