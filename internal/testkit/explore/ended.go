package explore

import (
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The promises on operations that have ended, and on the progress of open ones.

// Why an ended operation may leave its source shared or its vault copy unlocked: EC2 refused
// the removal of the share or the lock, and the operation failed saying so.
const (
	refusedUnshare = "may be left shared"
	refusedLock    = "locking vault copy"
	// refusedListing: EC2 refused the operation the listing of its volume's snapshots.
	refusedListing = "EC2 refuses to list"
)

// checkEnded checks, once an operation has ended (completed, failed, or timed out with a
// Cancel that reached EC2) and EC2's listing lag has passed, that its source is no longer shared
// with the vault account and that every vault copy of it is locked as the location asks.
func (w *world) checkEnded(snaps map[string]ec2sim.Snapshot) {
	for _, op := range w.ops {
		if op.state == opOpen || op.snapshotID == "" || op.upstream || w.clk.Now().Before(op.endedAt.Add(w.lag())) {
			continue
		}
		if op.result == "timed out" && op.cancelErr != nil || strings.Contains(op.result, refusedListing) {
			continue // its one Cancel could not reach EC2, or EC2 refused it the listing: the plugin cannot see its source
		}
		src, ok := snaps[op.snapshotID]
		if ok && !src.DeletePending && len(src.SharedWith) > 0 && !strings.Contains(op.result, refusedUnshare) {
			w.violate(catSharedAfterEnd, "%s ended %s ago (%s, %q) with %s still shared with %v", op.pv, w.clk.Since(op.endedAt), op.state, op.result, op.snapshotID, src.SharedWith)
		}
		if !w.setup.lock || op.result == "timed out" || strings.Contains(op.result, refusedLock) || w.setup.vaultCredsOf != vaultAccount || w.setup.vaultAccountID != vaultAccount {
			continue
		}
		for _, s := range sortedSnaps(snaps) {
			if s.SourceSnapshotID == op.snapshotID && s.Account == vaultAccount && s.State != "error" && !s.DeletePending && !lockedNow(s) {
				w.violate(catUnlockedAfterEnd, "%s ended %s ago (%s, %q) with vault copy %s (%s) not locked", op.pv, w.clk.Since(op.endedAt), op.state, op.result, s.ID, s.State)
			}
		}
	}
}

// waitingForEC2 begins the description of a Progress call that could read nothing of its
// snapshot from EC2: its figures are 0 of 0, since Velero stores the figures every call returns
// and a fresh plugin process remembers none (see the README's Watching progress).
const waitingForEC2 = "waiting for EC2"

// checkForward checks an open operation's new progress against the figures it reported before:
// they never go back, but to 0 of 0 while it waits for EC2 to answer at all.
func (w *world) checkForward(op *operation, done, total int64, desc string) {
	if done == 0 && total == 0 && strings.HasPrefix(desc, waitingForEC2) {
		return
	}
	if done < op.done || total < op.of {
		w.violate(catProgressBack, "%s went from %d/%d to %d/%d: %q", op.pv, op.done, op.of, done, total, desc)
	}
	op.done, op.of = done, total
}
