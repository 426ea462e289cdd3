package explore

import (
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"

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
	// notListed: the operation failed for want of its snapshot in EC2's listing (deleted, or
	// listed to other credentials only).
	notListed = "but EC2 lists"
)

// checkEnded checks, once an operation has ended (completed, failed, or timed out with a
// Cancel that reached EC2), that its source once unshared is never shared again, and, once EC2's
// listing lag has passed, that its source is no longer shared with the vault account and that
// every vault copy of it is locked as the location asks.
func (w *world) checkEnded(snaps map[string]ec2sim.Snapshot) {
	for _, op := range w.ops {
		if op.state == opOpen || op.snapshotID == "" || op.upstream {
			continue
		}
		if op.result == "timed out" && op.cancelErr != nil || strings.Contains(op.result, refusedListing) || strings.Contains(op.result, notListed) {
			continue // its one Cancel could not reach EC2, or its source was not listed to it: the plugin cannot see its source
		}
		src, ok := snaps[op.snapshotID]
		shared := ok && !src.DeletePending && len(src.SharedWith) > 0
		switch {
		case !shared:
			op.unsharedAfterEnd = true
		case op.unsharedAfterEnd:
			w.violate(catSharedAgain, "%s ended %s ago (%s, %q), and %s, unshared since, is shared again with %v", op.pv, w.clk.Since(op.endedAt), op.state, op.result, op.snapshotID, src.SharedWith)
			continue
		}
		if w.clk.Now().Before(op.endedAt.Add(w.lag())) {
			continue
		}
		if shared && !strings.Contains(op.result, refusedUnshare) {
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

// unread reports whether desc is that of a Progress call that could read nothing of its
// snapshot from EC2 (unreachable, throttling past its retries, or refusing the listing while the
// operation waits): its figures are 0 of 0, since Velero stores the figures every call returns
// and a fresh plugin process remembers none (see the README's Watching progress).
func unread(desc string) bool {
	return strings.HasPrefix(desc, "waiting for EC2:") || strings.HasPrefix(desc, refusedListing)
}

// checkForward checks an open operation's new progress against the figures it reported before:
// they never go back, but to 0 of 0 while nothing of it can be read from EC2. It holds for an
// operation following the snapshot Velero recorded; not for one whose CreateSnapshot failed
// (its snapshot, if any, is deleted), nor for an earlier release's operation of a static PV
// sharing its volume (it follows whichever snapshot it finds, an open finding); nor while the
// Kubernetes API refuses the plugin its locations (a refusal, not a transient error: it sees
// what the default credentials show), nor once the backup is being deleted.
func (w *world) checkForward(op *operation, done, total int64, desc string) {
	if op.snapshotID == "" || w.setup.upgrade != nil || w.kubeRefused || op.deletedWhileOpen || done == 0 && total == 0 && unread(desc) {
		return
	}
	if done < op.done || total < op.of {
		w.violate(catProgressBack, "%s went from %d/%d to %d/%d: %q", op.pv, op.done, op.of, done, total, desc)
	}
	op.done, op.of = done, total
}

// evidenceSettle is how long an operation's evidence must have been complete before the
// operation must complete: EC2's listing lag twice (the description and the copies' listings
// may each lag) and a reconcile's cache.
func (w *world) evidenceSettle() time.Duration { return 2*w.lag() + syncPeriod }

// evidenceComplete reports whether everything an operation's completion needs is in EC2: its
// recorded snapshot completed, and every copy it asks for completed in the right account and
// region, locked as asked, with nothing left shared. Only runs where nothing else could
// rightly hold it up are judged: this plugin's snapshot of its own volume, the vault's own
// credentials, no earlier release, and no snapshot of its PV's name without a UID that could be
// its (one tagged with another backup's UID is never its, and holds nothing up).
func (w *world) evidenceComplete(op *operation, snaps map[string]ec2sim.Snapshot) bool {
	if op.snapshotID == "" || op.upstream || w.setup.upgrade != nil || w.kubeRefused ||
		w.setup.vault && (w.setup.vaultCredsOf != vaultAccount || w.setup.vaultAccountID != vaultAccount) {
		return false
	}
	src, ok := snaps[op.snapshotID]
	if !ok || src.State != "completed" || src.DeletePending || len(src.SharedWith) > 0 {
		return false
	}
	for _, f := range w.foreign {
		if f.tags[model.TagPV] == op.pv && f.tags[model.TagBackupUID] == "" && (f.volumeID == "" || src.Tags[model.TagBackupUID] == "" && w.inWindow(op, f.started)) {
			return false
		}
	}
	if w.cfg.CopyToRegion != "" && w.copyIn(snaps, op.snapshotID, sourceAccount, copyRegion) == nil {
		return false
	}
	if v := w.cfg.Vault; v.Enabled() {
		c := w.copyIn(snaps, op.snapshotID, v.AccountID, v.Region)
		if c == nil || v.Lock.Mode != "" && !lockedNow(*c) {
			return false
		}
	}
	return true
}

// checkLive checks an operation Velero has just asked about: once its own evidence has been
// complete for evidenceSettle, on a healthy EC2 and Kubernetes API, it completes without error.
func (w *world) checkLive(op *operation, completed bool, desc, perr string) {
	if completed && perr == "" || op.evidenceAt.IsZero() || len(w.faults) > 0 || w.kube != nil || len(w.down) > 0 || w.clk.Since(op.evidenceAt) < w.evidenceSettle() {
		return
	}
	if !w.evidenceComplete(op, w.everything()) {
		return // no longer complete since the last check: a deletion within this step
	}
	if completed {
		w.violate(catNotCompleted, "%s's snapshot and copies have been complete for %s, and it failed: %s", op.pv, w.clk.Since(op.evidenceAt), perr)
		return
	}
	w.violate(catNotCompleted, "%s's snapshot and copies have been complete for %s, and it still reports %q", op.pv, w.clk.Since(op.evidenceAt), desc)
}

// The README's window of an operation: the snapshots without a UID that started from the
// clock-skew margin before it was opened to the create patience plus EC2's listing lag after
// (and the margin again) may be its own.
const (
	windowSkew     = time.Minute
	createPatience = 10 * time.Minute
)

// inWindow reports whether a snapshot started at start may be op's by the operation's window.
func (w *world) inWindow(op *operation, start time.Time) bool {
	return !start.Before(op.issued.Add(-windowSkew)) && !start.After(op.issued.Add(createPatience+w.lag()+windowSkew))
}
