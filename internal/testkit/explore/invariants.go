package explore

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// category names a broken promise. Each finding of issue 21 shows as one of them.
type category string

// The promises the explorer checks, by what the user would see broken.
const (
	// An operation completed without error…
	catCompletedWithoutSnapshot category = "completed without following its snapshot, or while it is missing or not completed"
	// catOldOperationOtherPV is catCompletedWithoutSnapshot for a v1 operation (no PV in its
	// ID) of a static PV sharing its EBS volume with another PV of the backup.
	catOldOperationOtherPV  category = "a v1 operation of a static PV completed while its snapshot is not completed, following another PV's on the same volume"
	catCompletedWithoutCopy category = "completed without the copy it asked for"
	catVaultCopyNotInVault  category = "completed with a vault copy that is not in the vault account"
	catOtherProviderNoCopy  category = "completed without its copy, the PV snapshotted by another provider's location"
	// catOtherProviderUnread is catOtherProviderNoCopy while the Kubernetes API refused the
	// plugin the backup's location (Forbidden): the copy it asks for is not known.
	catOtherProviderUnread category = "completed without its copy, the PV snapshotted by another provider's location, the backup's location unread (Kubernetes API Forbidden)"
	// catRestoredVolumeNoCopy is catOtherProviderNoCopy for a volume this plugin restored: its
	// snapshot carries the plugin's restore token, copied from the volume by the upstream plugin.
	catRestoredVolumeNoCopy category = "completed without its copy, a volume this plugin restored snapshotted by another provider's location"
	catLeftShared           category = "completed with the source still shared"
	// Ended operations.
	catSharedAfterEnd category = "a source still shared with the vault account once its operation has ended and the listing lag has passed"
	// catSharedAgain is catSharedAfterEnd for a source unshared once its operation had ended and
	// shared again since: a later Progress call of another operation copying it.
	catSharedAgain      category = "a failed operation's source, unshared, shared again with the vault account"
	catUnlockedAfterEnd category = "a vault copy left unlocked once its operation has ended and the listing lag has passed, though the location asks for a lock"
	catProgressBack     category = "an open operation's progress went back"
	// Liveness.
	catNotCompleted category = "an operation whose own evidence is complete does not complete"
	// Duplicates.
	catDuplicateCopy category = "more than one copy of a source in a target"
	// catDuplicateAfterSlow is catDuplicateCopy in a run where an answer came slowly.
	catDuplicateAfterSlow category = "more than one copy of a source in a target, an answer having come slowly"
	catDuplicateSource    category = "more than one source kept for a PV of the backup"
	// Others' snapshots and what must stay.
	catForeignTouched  category = "another install's or tool's snapshot deleted, copied, shared or retagged"
	catEndedOnOthers   category = "an operation ended on another install's or tool's snapshot, not the one Velero recorded"
	catKeptDeleted     category = "a locked or retained snapshot deleted"
	catRecordedDeleted category = "a snapshot Velero recorded deleted while its backup is kept"
	// Deletion.
	catFailedSnapshotLeaked category = "a snapshot Velero recorded as failed left behind after the deletion"
	// catRefusedSnapshotLeaked is catFailedSnapshotLeaked when the operation that would have
	// deleted the snapshot ended first without deleting it: EC2 refused it a request (IAM), or
	// it timed out and its one Cancel could not reach EC2.
	catRefusedSnapshotLeaked category = "a snapshot Velero recorded as failed left behind, its operation ended first without reaching it"
	// catDeletedBeforeCleanup is catFailedSnapshotLeaked when the backup was deleted while the
	// operation that would have deleted the snapshot was still open.
	catDeletedBeforeCleanup category = "a snapshot Velero recorded as failed left behind, the backup deleted while its operation was open"
	// catUIDLessLeaked is catFailedSnapshotLeaked when the snapshot, or every snapshot Velero
	// recorded for the backup, lacks the backup's UID (a plugin process restarted between
	// Execute and CreateSnapshot), and its operation did not delete it: the deletion finds the
	// backup's failed snapshots by the UID of the snapshots Velero recorded.
	catUIDLessLeaked category = "a snapshot Velero recorded as failed left behind after the deletion, it or every snapshot Velero recorded without the backup's UID"
	// catMarkedReturnedLeaked is catFailedSnapshotLeaked when the snapshot carries the mark
	// "returned" though its CreateSnapshot returned an error: the mark's answers were lost.
	catMarkedReturnedLeaked category = "a snapshot Velero recorded as failed left behind, marked returned by a CreateTags whose answers were lost"
	// recordedReturnedMark is the plugin's mark on a snapshot its CreateSnapshot returned.
	recordedReturnedMark          = "returned"
	catCopyLeaked        category = "a copy left behind after the deletion"
	catSourceLeaked      category = "a snapshot of the backup left behind after the deletion"
	// Restores.
	catRestoreDuplicate  category = "more than one volume made for a PV in one restore"
	catRestoreLeaked     category = "a restore that returned an error left a volume behind"
	catRestoredFromOther category = "a volume restored from something other than the backup's snapshot or its completed copy"
	// Accounts.
	catWrongSigner category = "a vault request signed by an account the location does not name"
	// The Kubernetes API.
	catSwitchedOnBlip category = "a request signed with other credentials than the location's while the Kubernetes API refused nothing"
	catFailedOnBlip   category = "an operation failed for good on a Kubernetes API blip"
	// Cancel.
	catCancelDeletedLocked category = "a Cancel asked EC2 to delete a locked copy, or failed on its lock"
	catCancelOverBudget    category = "a Progress or Cancel past its deadline, or a reconcile's Cancels past its budget for EC2 requests"
	// catCancelDeletedRetained is a Cancel deleting a pending vault copy vaultRetainOnDelete keeps.
	catCancelDeletedRetained category = "a Cancel deleted a vault copy kept by vaultRetainOnDelete"
	// catDeletedLocked is any request asking EC2 to delete a locked snapshot.
	catDeletedLocked category = "a request asked EC2 to delete a locked copy"
	// Time.
	catStalled        category = "an operation that does not end once faults stop"
	catCopiedAfterEnd category = "a copy started after its operation was cancelled"
	catHung           category = "a plugin call that does not return"
)

// violation is one broken promise, as seen at one step.
type violation struct {
	cat    category
	detail string
}

func (v violation) String() string { return string(v.cat) + ": " + v.detail }

// violate records a broken promise in the world and its trace.
func (w *world) violate(cat category, format string, args ...any) {
	v := violation{cat: cat, detail: fmt.Sprintf(format, args...)}
	if slices.Contains(w.violations, v) {
		return // reported at an earlier step
	}
	w.violations = append(w.violations, v)
	w.logf("VIOLATION %s", v)
}

// accounts and regions the checks look at.
var (
	allAccounts = []string{sourceAccount, vaultAccount, strangerAccount}
	allRegions  = []string{sourceRegion, copyRegion, farRegion}
)

// everything lists every snapshot of every account and region, by ID.
func (w *world) everything() map[string]ec2sim.Snapshot {
	out := map[string]ec2sim.Snapshot{}
	for _, a := range allAccounts {
		for _, r := range allRegions {
			for _, s := range w.sim.SnapshotsIn(a, r) {
				out[s.ID] = s
			}
		}
	}
	return out
}

// lockedNow reports whether a snapshot's lock forbids deleting it now.
func lockedNow(s ec2sim.Snapshot) bool {
	return s.LockState != "" && s.LockState != "expired"
}

// checkStep checks, after every step, the promises that hold at any time.
func (w *world) checkStep() {
	snaps := w.everything()
	w.checkSigners()
	w.checkRestores(false)
	w.checkRecordedKept(snaps)
	w.checkEnded(snaps)
	for _, op := range w.ops {
		switch {
		case op.state != opOpen || !w.evidenceComplete(op, snaps):
			op.evidenceAt = time.Time{}
		case op.evidenceAt.IsZero():
			op.evidenceAt = w.clk.Now()
		}
	}
	for id, f := range w.foreign {
		s, ok := snaps[id]
		switch {
		case !ok:
			w.violate(catForeignTouched, "%s of another install or tool was deleted", id)
		case len(s.SharedWith) > 0:
			w.violate(catForeignTouched, "%s of another install or tool is shared with %v", id, s.SharedWith)
		case !sameTags(s.Tags, f.tags):
			w.violate(catForeignTouched, "%s of another install or tool was retagged: %v, was %v", id, s.Tags, f.tags)
		default:
			continue
		}
		delete(w.foreign, id) // reported once
	}
	for _, ids := range []map[string]bool{w.locked, w.retained} {
		for id := range ids {
			if _, ok := snaps[id]; !ok {
				w.violate(catKeptDeleted, "%s was deleted", id)
				delete(ids, id)
			}
		}
	}
	copies := map[string][]string{}
	for _, s := range sortedSnaps(snaps) {
		if lockedNow(s) {
			w.locked[s.ID] = true
		}
		// Kept, pending or completed, as vaultRetainOnDelete asks: the location's config now or
		// the copy's tag, written from the config when its source was taken.
		if w.retainAsked(s) && s.State != "error" && !s.DeletePending && s.Account == w.cfg.Vault.AccountID && s.SourceSnapshotID != "" && w.recorded(s.SourceSnapshotID) != nil {
			w.retained[s.ID] = true
		}
		if s.SourceSnapshotID == "" || s.DeletePending {
			continue
		}
		if _, theirs := w.foreign[s.SourceSnapshotID]; theirs {
			if _, alsoTheirs := w.foreign[s.ID]; !alsoTheirs {
				w.violate(catForeignTouched, "%s of another install or tool was copied into %s of %s as %s", s.SourceSnapshotID, s.Region, s.Account, s.ID)
				delete(w.foreign, s.SourceSnapshotID)
			}
			continue
		}
		if _, theirs := w.foreign[s.ID]; theirs {
			continue
		}
		key := s.SourceSnapshotID + " into " + s.Region + " of " + s.Account
		copies[key] = append(copies[key], s.ID)
		if op := w.opOfVolume(s.VolumeID); op != nil && !op.cancelledAt.IsZero() && (s.StartTime.After(op.cancelledAt) || s.SourceSnapshotID == op.snapshotID && !op.copiesAtCancel[s.ID]) && !w.unmarkedShortTimeout(s) {
			w.violate(catCopiedAfterEnd, "copy %s of %s started at %s, after %s's operation was cancelled at %s", s.ID, s.SourceSnapshotID, s.StartTime.Sub(t0), op.pv, op.cancelledAt.Sub(t0))
			op.cancelledAt = time.Time{} // reported once
		}
	}
	for key, ids := range copies {
		if len(ids) > 1 {
			cat := w.duplicateCopyCategory()
			if w.cfg.Vault.Enabled() && w.setup.vaultCredsOf == sourceAccount && strings.HasSuffix(key, " into "+w.cfg.Vault.Region+" of "+sourceAccount) {
				cat = catVaultCopyNotInVault // the "vault copy" made in the source account, beside the regional copy
			}
			w.violate(cat, "%d copies of %s: %v", len(ids), key, ids)
		}
	}
}

// checkSigners checks the requests made since the last check: every change made with the vault
// credentials is signed by the vault account the location names.
func (w *world) checkSigners() {
	for _, q := range w.requests[w.checked:] {
		if q.role == defaultChainRole && !q.apiRefused {
			w.violate(catSwitchedOnBlip, "%s in %s signed with the Velero server's default credential chain, not the location's credentials", q.action, q.region)
		}
		if q.role == "vault" && mutating[q.action] && q.signer != w.cfg.Vault.AccountID {
			w.violate(catWrongSigner, "%s in %s signed by account %s with the vault credentials; the location names vault account %s", q.action, q.region, q.signer, w.cfg.Vault.AccountID)
			break
		}
	}
	w.checked = len(w.requests)
}

// checkEndedOnOwn checks an operation Velero has just seen end: the snapshot its result names
// is the one Velero recorded, not another install's or tool's in its place. Not judged once
// the backup's deletion, begun while the operation was open, has deleted that snapshot: EC2
// then lists nothing of it in its region for any rule to prefer (a reconcile racing the
// deletion).
func (w *world) checkEndedOnOwn(op *operation) {
	if op.snapshotID == "" || strings.Contains(op.result, op.snapshotID) {
		return
	}
	if s, ok := w.everything()[op.snapshotID]; op.deletedWhileOpen && (!ok || s.DeletePending) {
		return
	}
	for id := range w.foreign {
		if strings.Contains(op.result, id) {
			w.violate(catEndedOnOthers, "%s ended on %s of another install or tool, not on %s, which Velero recorded: %q", op.pv, id, op.snapshotID, op.result)
			return
		}
	}
}

// checkCompleted checks an operation Velero has just seen complete without error: its recorded
// snapshot is completed and every copy it asked for exists, completed, in the right account and
// region, locked as configured, with nothing left shared.
func (w *world) checkCompleted(op *operation) {
	if op.snapshotID == "" {
		return // Velero recorded no snapshot: nothing to have completed
	}
	snaps := w.completedOn()
	src, ok := snaps[op.snapshotID]
	if op.total == 0 {
		w.violate(catCompletedWithoutSnapshot, "%s completed (%q) following no snapshot, while Velero recorded %s (%s)", op.pv, op.result, op.snapshotID, stateOf(src, ok))
		return
	}
	if !ok || src.State != "completed" {
		w.violate(w.withoutSnapshotCategory(), "%s completed (%q) while its snapshot %s is %s", op.pv, op.result, op.snapshotID, stateOf(src, ok))
		return
	}
	if w.cfg.CopyToRegion != "" && w.copyIn(snaps, op.snapshotID, sourceAccount, copyRegion) == nil {
		cat := catCompletedWithoutCopy
		if op.upstream {
			cat = w.otherProviderCategory()
		}
		w.violate(cat, "%s completed (%q) with no completed copy of %s in %s", op.pv, op.result, op.snapshotID, copyRegion)
		return
	}
	if v := w.cfg.Vault; v.Enabled() {
		c := w.copyIn(snaps, op.snapshotID, v.AccountID, v.Region)
		switch {
		case c == nil && op.upstream:
			w.violate(w.otherProviderCategory(), "%s completed (%q) with no vault copy of %s", op.pv, op.result, op.snapshotID)
			return
		case c == nil && w.setup.vaultCredsOf != v.AccountID:
			w.violate(catVaultCopyNotInVault, "%s completed (%q) with no vault copy of %s in account %s %s (the vault credentials are account %s's)", op.pv, op.result, op.snapshotID, v.AccountID, v.Region, w.setup.vaultCredsOf)
			return
		case c == nil:
			w.violate(catCompletedWithoutCopy, "%s completed (%q) with no completed vault copy of %s in account %s %s", op.pv, op.result, op.snapshotID, v.AccountID, v.Region)
			return
		case v.Lock.Mode != "" && !lockedNow(*c):
			w.violate(catCompletedWithoutCopy, "%s completed (%q) with vault copy %s not locked (%q)", op.pv, op.result, c.ID, c.LockState)
			return
		}
	}
	if len(src.SharedWith) > 0 {
		w.violate(catLeftShared, "%s completed (%q) with %s still shared with %v", op.pv, op.result, op.snapshotID, src.SharedWith)
	}
}

// copyIn returns a completed copy of source in account and region that is not another tool's.
func (w *world) copyIn(snaps map[string]ec2sim.Snapshot, source, account, region string) *ec2sim.Snapshot {
	for _, s := range sortedSnaps(snaps) {
		if _, theirs := w.foreign[s.ID]; !theirs && s.SourceSnapshotID == source && s.Account == account && s.Region == region && s.State == "completed" && !s.DeletePending {
			return &s
		}
	}
	return nil
}

// checkSources checks that at most one source this release made (with its create token) is
// kept per PV of the backup (UID-tagged). An earlier release's CreateSnapshot retried after a
// lost answer made two; they go with the backup (checkDeleted).
func (w *world) checkSources() {
	perPV := map[string][]string{}
	for _, s := range sortedSnaps(w.everything()) {
		if s.SourceSnapshotID == "" && !s.DeletePending && s.Tags[model.TagBackupUID] == backupUID && s.Tags[model.TagCreateToken] != "" {
			perPV[s.Tags[model.TagPV]] = append(perPV[s.Tags[model.TagPV]], s.ID)
		}
	}
	for pv, ids := range perPV {
		if len(ids) > 1 {
			w.violate(catDuplicateSource, "%d sources kept for %s: %v", len(ids), pv, ids)
		}
	}
}

// checkDeleted checks, after a deletion and the listing lag, that nothing of the backup is left
// anywhere but locked or retained copies.
func (w *world) checkDeleted() {
	all := w.everything()
	for _, s := range sortedSnaps(all) {
		if _, theirs := w.foreign[s.ID]; theirs || s.DeletePending || lockedNow(s) || w.retained[s.ID] || s.Tags[model.TagBackup] == leftBehindBackup {
			continue // not the backup's, or kept; a deleted backup's leftover is the audit's
		}
		root := s.ID
		if s.SourceSnapshotID != "" {
			root = s.SourceSnapshotID
		}
		if _, theirs := w.foreign[root]; theirs {
			continue
		}
		op := w.opOfVolume(s.VolumeID)
		switch {
		case s.SourceSnapshotID != "" && s.Tags[model.TagSourceAccount] != "" && w.cfg.Vault.Enabled() && w.setup.vaultCredsOf != w.cfg.Vault.AccountID && s.Account == w.setup.vaultCredsOf && s.Region == w.cfg.Vault.Region:
			w.violate(catVaultCopyNotInVault, "the \"vault copy\" %s of %s is left in %s of %s, the account of the vault credentials", s.ID, s.SourceSnapshotID, s.Region, s.Account)
		case op != nil && op.snapshotID == "" && op.createErr != "" && !op.polled:
			// Velero deleted the backup before it asked for the operation's progress: nothing
			// told the plugin of this snapshot, whose ID Velero never had.
			w.logf("left: %s of %s, whose CreateSnapshot failed, deleted before any Progress", s.ID, op.pv)
		case op != nil && op.snapshotID == "" && op.createErr != "" && (op.deletedWhileOpen || op.result == "timed out") && w.recordedOne() == nil:
			// Velero deleted the backup while the operation waited out the create window, or
			// its one Cancel could not reach EC2, and it recorded no snapshot of this plugin
			// for the backup: its deletion calls no DeleteSnapshot of this plugin, and no call
			// of the plugin is made for the backup any more.
			w.logf("left: %s of %s, whose CreateSnapshot failed, with no snapshot of this plugin recorded for the backup and no call of the plugin to come", s.ID, op.pv)
		case op != nil && op.snapshotID == "" && op.createErr != "" && (s.Tags[model.TagBackupUID] == "" || !w.recordedWithUID()) && !strings.Contains(op.result, "deleted and not copied"):
			w.violate(catUIDLessLeaked, "%s (%s of %s, UID tag %q, whose CreateSnapshot Velero recorded as failed: %s) is left in %s of %s; its operation ended %s with %q", s.ID, kindOf(s), op.pv, s.Tags[model.TagBackupUID], op.createErr, s.Region, s.Account, op.state, op.result)
		case op != nil && op.snapshotID == "" && op.createErr != "" && op.state == opFailed && !strings.Contains(op.result, "deleted and not copied"):
			w.violate(catRefusedSnapshotLeaked, "%s (%s of %s, whose CreateSnapshot Velero recorded as failed: %s) is left in %s of %s; the operation failed with %q", s.ID, kindOf(s), op.pv, op.createErr, s.Region, s.Account, op.result)
		case op != nil && op.snapshotID == "" && op.createErr != "" && op.deletedWhileOpen:
			w.violate(catDeletedBeforeCleanup, "%s (%s of %s, whose CreateSnapshot Velero recorded as failed: %s) is left in %s of %s; the backup was deleted while the operation was open", s.ID, kindOf(s), op.pv, op.createErr, s.Region, s.Account)
		case op != nil && op.snapshotID == "" && op.createErr != "" && s.Tags[model.TagRecorded] == recordedReturnedMark:
			w.violate(catMarkedReturnedLeaked, "%s (%s of %s, whose CreateSnapshot Velero recorded as failed: %s) is left in %s of %s, marked returned", s.ID, kindOf(s), op.pv, op.createErr, s.Region, s.Account)
		case op != nil && op.snapshotID == "" && op.createErr != "":
			w.violate(catFailedSnapshotLeaked, "%s (%s of %s, whose CreateSnapshot Velero recorded as failed: %s) is left in %s of %s", s.ID, kindOf(s), op.pv, op.createErr, s.Region, s.Account)
		case s.SourceSnapshotID != "" && all[s.SourceSnapshotID].ID != "":
			// Its source is left too: the deletion never got to the copies.
			w.violate(catSourceLeaked, "copy %s is left in %s of %s with its source %s", s.ID, s.Region, s.Account, s.SourceSnapshotID)
		case s.SourceSnapshotID != "":
			w.violate(catCopyLeaked, "copy %s of %s is left in %s of %s", s.ID, s.SourceSnapshotID, s.Region, s.Account)
		default:
			w.violate(catSourceLeaked, "snapshot %s is left in %s of %s (tags %v)", s.ID, s.Region, s.Account, s.Tags)
		}
	}
}

// recordedWithUID reports whether a snapshot this plugin took that Velero recorded was made
// with the backup's UID.
func (w *world) recordedWithUID() bool {
	for _, op := range w.ops {
		if op.snapshotID != "" && !op.upstream && op.uidTagged {
			return true
		}
	}
	return false
}

// copiesOf returns the copies of source EC2 holds, in every account and region.
func (w *world) copiesOf(source string) map[string]bool {
	out := map[string]bool{}
	for id, s := range w.everything() {
		if source != "" && s.SourceSnapshotID == source {
			out[id] = true
		}
	}
	return out
}

// recorded returns the operation whose recorded snapshot is id.
func (w *world) recorded(id string) *operation {
	for _, op := range w.ops {
		if op.snapshotID == id {
			return op
		}
	}
	return nil
}

// opOfVolume returns the operation of a volume of the backup.
func (w *world) opOfVolume(vol string) *operation {
	for _, op := range w.ops {
		if op.volumeID == vol {
			return op
		}
	}
	return nil
}

func kindOf(s ec2sim.Snapshot) string {
	if s.SourceSnapshotID != "" {
		return "a copy"
	}
	return "the snapshot"
}

func stateOf(s ec2sim.Snapshot, ok bool) string {
	if !ok {
		return "not there"
	}
	return s.State
}

func sameTags(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// sortedSnaps orders snapshots by ID, so that checks report in a stable order.
func sortedSnaps(m map[string]ec2sim.Snapshot) []ec2sim.Snapshot {
	out := make([]ec2sim.Snapshot, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// unmarkedShortTimeout reports whether copy cp started under the README's limit of a short
// item-operation timeout: one under four create windows keeps three quarters of it for the
// copy, so a source whose CreateSnapshot took longer than a quarter of it is kept from a copy
// after the Cancel by the copy-cancelled mark alone, and cp's source does not carry it.
func (w *world) unmarkedShortTimeout(cp ec2sim.Snapshot) bool {
	window := ebs.NewSettings(w.options()).CreateWindow()
	if w.setup.timeout >= 4*window {
		return false
	}
	for _, s := range w.sim.SnapshotsIn(sourceAccount, sourceRegion) {
		if s.ID == cp.SourceSnapshotID {
			return s.Tags[model.TagCopyCancelled] == "" && cp.StartTime.Before(s.StartTime.Add(w.setup.timeout*3/4))
		}
	}
	return false
}
