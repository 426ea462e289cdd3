package explore

import (
	"net/url"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// Cancel and the time a reconcile spends in EC2. When drawn, EC2 answers each mutating request
// in requestTime of the fake clock (its rate for mutating requests is 5 a second), so that the
// plugin's budget for EC2 requests, measured on its clock, is spent as in a large backup.

// The time promises on Cancel and Progress.
const (
	// mutatingRequestTime is how long EC2 takes per mutating request at its request rate.
	mutatingRequestTime = 200 * time.Millisecond
	// reconcileEC2Budget is the time a reconcile of a backup spends starting copies and
	// deleting the pending copies of cancelled operations, as the README states (3 s a
	// description, checked between requests).
	reconcileEC2Budget = 3 * time.Second
	// callDeadline is Velero's deadline on one Progress or Cancel, which the plugin's adapter
	// applies: a call past it is cut short.
	callDeadline = ec2api.ItemActionCallTimeout
)

// cancelState is what the checks remember of the Cancels of the reconcile under way.
type cancelState struct {
	// inCancel is true while a Cancel call runs.
	inCancel bool
	// copyDeletions counts the DeleteSnapshot requests of the reconcile's Cancels.
	copyDeletions int
}

// startReconcile forgets the Cancels of the last reconcile.
func (w *world) startReconcile() { w.cancels = cancelState{} }

// costOf is the fake time EC2 takes to answer a request of action, as the run draws it.
func (w *world) costOf(action string) time.Duration {
	if mutating[action] {
		return w.setup.requestTime
	}
	return 0
}

// checkCancelRequest checks a DeleteSnapshot request: no request asks EC2 to delete a locked
// snapshot (EC2 would refuse it with SnapshotLocked); a Cancel never deletes a vault copy
// vaultRetainOnDelete keeps; and the reconcile's Cancels delete no more pending copies than its
// budget for EC2 requests allows (each deletion takes at least a request's time, and none
// starts once the budget is spent).
func (w *world) checkCancelRequest(q request, form url.Values) {
	if q.action != "DeleteSnapshot" {
		return
	}
	id := form.Get("SnapshotId")
	isCopy := false
	for _, s := range w.sim.SnapshotsIn(q.signer, q.region) {
		if s.ID != id {
			continue
		}
		switch {
		case lockedNow(s) && w.cancels.inCancel:
			w.violate(catCancelDeletedLocked, "Cancel asked EC2 to delete %s in %s of %s, locked (%s) while %s", id, q.region, q.signer, s.LockState, s.State)
		case lockedNow(s) && q.role == auditRole:
			w.violate(catAuditDeletedLocked, "audit asked EC2 to delete %s in %s of %s, locked (%s) while %s", id, q.region, q.signer, s.LockState, s.State)
		case lockedNow(s):
			w.violate(catDeletedLocked, "a %s request asked EC2 to delete %s in %s of %s, locked (%s) while %s", q.role, id, q.region, q.signer, s.LockState, s.State)
		}
		if w.cancels.inCancel && w.retainAsked(s) && s.SourceSnapshotID != "" && s.Account == w.cfg.Vault.AccountID && s.State != "error" {
			w.violate(catCancelDeletedRetained, "Cancel asked EC2 to delete vault copy %s of %s in %s (%s), kept by vaultRetainOnDelete", id, s.SourceSnapshotID, q.region, s.State)
			delete(w.retained, id) // reported here, not again as a kept snapshot deleted
		}
		isCopy = s.SourceSnapshotID != ""
	}
	if !w.cancels.inCancel || !isCopy {
		return // a snapshot Velero recorded as failed: deleted whatever the budget
	}
	w.cancels.copyDeletions++
	if w.setup.requestTime > 0 && time.Duration(w.cancels.copyDeletions-1)*w.setup.requestTime > reconcileEC2Budget {
		w.violate(catCancelOverBudget, "one reconcile's Cancels sent %d DeleteSnapshot requests at %s each, past its %s for EC2 requests", w.cancels.copyDeletions, w.setup.requestTime, reconcileEC2Budget)
	}
}

// checkCall checks one Progress or Cancel call: it ends within Velero's deadline, and a Cancel
// does not fail on a lock (a locked vault copy is the backup's, and left alone).
func (w *world) checkCall(what, pv string, took time.Duration, err error) {
	if took > callDeadline {
		w.violate(catCancelOverBudget, "%s of %s took %s of EC2's time, past Velero's %s deadline", what, pv, took, callDeadline)
	}
	if what == "Cancel" && err != nil && strings.Contains(err.Error(), "SnapshotLocked") {
		w.violate(catCancelDeletedLocked, "Cancel of %s failed on a locked snapshot: %v", pv, err)
	}
}
