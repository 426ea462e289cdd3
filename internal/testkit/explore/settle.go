package explore

import (
	"time"
)

// What happens once faults stop.
const (
	// settleBound is the promise: once faults stop, every operation ends (completed, or failed
	// naming its cause) within this much fake time. It outlasts the longest wait the plugin may
	// rightly make: the grace for a snapshot EC2 does not list yet (15 min), a snapshot and its
	// copies (minutes each in the simulator), and several sync periods.
	settleBound = 45 * time.Minute
	// settleEvery is the fake time between two reconciles while settling.
	settleEvery = time.Minute
	// queuesDrain is how long EC2's copy queues (setup.regionalQueued, slotsHeldPast) last once faults stop:
	// long enough for a source to complete and be shared with the vault account, which begins
	// the refusal of the queued regional copies.
	queuesDrain = 10 * time.Minute
	// deletionTries is how many times the user deletes the backup again after a failed deletion.
	deletionTries = 3
)

// settle ends a run: faults stop, the item phase ends, Velero reconciles (cancelling what
// passes the item-operation timeout, as it does) until every operation has ended or the
// bound has passed (unless a reinstall abandoned them), restores a PV, audits it with its vault
// bucket (vault_bucket.go), then the backup is deleted, and once the listing lag has passed nothing of it may be left.
func (w *world) settle() {
	w.faults, w.kube = nil, nil
	if w.waitsOnSTS() {
		w.setup.stsUnavailable = false // nothing tells the vault credentials wrong without it
	}
	for r := range w.down {
		delete(w.down, r)
	}
	w.logf("settle: faults stop")
	for i, op := range w.ops {
		if !op.executed {
			w.execute(i)
		}
		if !op.attempted {
			w.create(i)
		}
	}
	if w.notInCluster {
		// Velero's sync brings the backup back (one waiting for its operations once it
		// expires, for its garbage collection to delete).
		w.notInCluster = false
		w.logf("settle: Velero's sync brings %s back into the cluster", backupName)
	}
	if !w.deleted && !w.abandoned {
		// Velero goes on cancelling what passes its item-operation timeout, as it would.
		end, drained := w.clk.Now().Add(settleBound), w.clk.Now().Add(queuesDrain)
		if w.setup.slowCopies {
			// Copies outlasting the timeout end only with Velero's Cancel.
			for _, op := range w.ops {
				end = later(end, op.issued.Add(w.setup.timeout+2*settleEvery))
			}
		}
		for w.waiting() && w.clk.Now().Before(end) {
			w.reconcile()
			w.refuseOnceShared()
			if w.clk.Now().After(drained) {
				w.setup.regionalQueued, w.setup.vaultQueued, w.setup.slotsHeldPast = false, false, 0
			}
			w.checkStep()
			w.clk.Step(settleEvery)
		}
		for _, op := range w.ops {
			if op.state == opOpen {
				w.violate(catStalled, "%s still open %s after faults stopped", op.pv, settleBound)
			}
		}
		w.checkSources()
		// Velero restores the finished backup's first PV in every region it may.
		if pvs := w.restorable(); len(pvs) > 0 {
			for _, r := range w.restoreRegions() {
				w.restore(pvs[0], r)
			}
			w.checkStep()
		}
		w.auditVaultBucket()
	}
	w.setup.stsUnavailable = false
	for try := 0; w.deletions == 0 && try < deletionTries; try++ {
		w.clk.Step(w.lag())
		w.deleted = false
		w.deleteBackup(deleteBySource, -1, 0)
		w.checkStep()
	}
	w.clk.Step(2*w.lag() + settleEvery)
	w.logf("settle: listing lag passed")
	w.checkStep()
	w.checkDeleted()
	w.checkRestores(true)
}

// waitsOnSTS reports whether an operation may rightly wait for STS: its vault credentials'
// account unconfirmed, with nothing EC2 lists with them owned by another account than the
// vault's. Vault credentials of the source account see the regional copy of a vault region
// that is the copy region: a copy the vault account does not own, telling them wrong, so STS
// stays unavailable while the operations settle.
func (w *world) waitsOnSTS() bool {
	s := w.setup
	wrongSeen := s.vaultCredsOf == sourceAccount && s.vaultRegion == copyRegion && s.copyTo && s.refusedCopy != regionalCopyRefused
	return s.stsUnavailable && !wrongSeen
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// lag is the listing lag the plugin is told of: from a request to EC2 listing what it made, the
// request's own time included.
func (w *world) lag() time.Duration {
	return max(w.setup.listingLag, 30*time.Second) + w.setup.requestTime
}
