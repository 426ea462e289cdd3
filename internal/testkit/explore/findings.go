package explore

// finding is one way today's code breaks a promise, as the explorer finds it: the issue's
// finding it is, and the category it shows as.
type finding struct {
	// id is the finding's number in issue 21 ("1" to "8", "cancel"), or "new" for one the
	// explorer found beyond the list.
	id  string
	cat category
	// fixed is true once the code no longer shows it.
	fixed bool
}

// findings maps each known finding to the promise it breaks.
var findings = []finding{
	{"1", catCompletedWithoutSnapshot, true},
	{"2", catVaultCopyNotInVault, true},
	{"2, 6", catWrongSigner, true},
	{"3", catKeptDeleted, true},
	{"4", catFailedSnapshotLeaked, true},
	{"5", catCopyLeaked, true},
	{"6", catStalled, true},
	{"8", catOtherProviderNoCopy, true},
	{"cancel", catCopiedAfterEnd, true},
	{"new: CreateSnapshot retries a 5xx answer for ever", catHung, true},
	{"new: a copy-region location's deletion says deleted and leaves the source", catSourceLeaked, true},
	{"new: an operation that ends on an EC2 refusal, or whose one Cancel cannot reach EC2, leaves the snapshot its failed CreateSnapshot made", catRefusedSnapshotLeaked, true},
	{"new: a backup deleted while an operation is open leaves the snapshot its failed CreateSnapshot made", catDeletedBeforeCleanup, true},
	{"new: with the Kubernetes API refusing the plugin, a PV the upstream plugin's location snapshotted completes without the copy the backup's location asks for", catOtherProviderUnread, true},
	{"new: a v1 operation of a static PV sharing its EBS volume completes following the other PV's snapshot while its own is not listed yet", catOldOperationOtherPV, true},
	{"new: a CreateSnapshot whose returned mark took effect with every answer lost returns an error, and the snapshot, marked returned, is completed and never deleted", catMarkedReturnedLeaked, true},
	{"restored: a volume this plugin restored, snapshotted by the upstream plugin, completes without the copy this plugin's location asks for", catRestoredVolumeNoCopy, true},
	{"shared: a failed regional copy, or a vault refusing CopySnapshot, leaves the source shared with the vault account", catSharedAfterEnd, true},
	{"shared again: a later reconcile shares a failed operation's source again (the vault account refusing CopySnapshot)", catSharedAgain, true},
	{"unlocked: a failed regional copy leaves the vault copy unlocked", catUnlockedAfterEnd, true},
	{"retained: Cancel deletes a pending vault copy kept by vaultRetainOnDelete", catCancelDeletedRetained, true},
	{"shared again, marks refused: an operation failing because EC2 refuses (IAM) the marks of its source, copy-failed included, looks open to a later reconcile's fresh process, whose fill shares the source with the vault account and copies it, with no call of the operation to remove the share", catSharedAgain, true},
	{"progress: a transient error takes an open operation's progress back (to 0 of 0, as documented, only while nothing of EC2 can be read)", catProgressBack, true},
	{"lost handoff: a snapshot whose CreateSnapshot failed is left when its operation ends without deleting it (timed out, or the backup deleted while it was open) and it, or every snapshot Velero recorded, lacks the backup's UID: the deletion finds failed snapshots by the recorded snapshots' UID", catUIDLessLeaked, true},
	{"deletion race: a copy a reconcile sends while the deletion's mark is on its way is listed just after the deletion stops waiting for it, and is left", catCopyLeaked, true},
	{"restore: a restore whose CreateVolume answer was lost gives up on throttling with an error that does not name the volume it made, and the volume is left", catRestoreLeaked, true},
	{"new: a vault copy requested one listing lag ago, not listed when a reconcile described it, is copied again after a slow STS answer in the same reconcile", catDuplicateAfterSlow, true},
	{"unlocked while STS fails: a regional copy refused while STS cannot confirm the vault credentials' account fails the operation with its vault copy neither locked nor its source unshared", catUnlockedAfterEnd, true},
	{"unlocked, STS refusing: STS refusing to name the vault credentials' account, in the reconcile after a vault copy was asked for, fails the operation at once and the copy is never locked", catUnlockedAfterEnd, true},
	{"unlocked, location unread: a regional copy refused while the Kubernetes API refuses to show the backup's locations fails the operation with its vault copy, requested a reconcile before, never locked", catUnlockedAfterEnd, true},
	{"st1, earlier release: an earlier release's CreateSnapshot on an st1 volume, retried after a lost answer and refused while that answer's snapshot is pending, fails; Velero records every native snapshot failed, and the operations complete following the snapshot, which the backup's deletion leaves", catUIDLessLeaked, true},
	{"v1 static PVs without the UID, deletion: a backup deleted while an earlier release's operations, tagged without the backup's UID, wait past their create window: the first PV's snapshot deleted, its operation completed following the other PV's", catOldOperationOtherPV, true},
	{"v1 retried, listing lag: an earlier release's CreateSnapshot retried after a lost answer, its returned snapshot not listed yet: the operation completes following the lost answer's unmarked snapshot while the returned one is pending", catOldOperationOtherPV, true},
	{"another cluster's upstream snapshot: an operation whose own snapshot EC2 does not list yet fails following another cluster's snapshot of the backup's name and PV, taken through the upstream plugin on the same volume, as one taken through another provider's location (its own is then copied after it ended)", catEndedOnOthers, true},
	{"another cluster's upstream snapshot, a failed CreateSnapshot: a snapshot a failed CreateSnapshot made without the UID (the handoff lost), beside another cluster's snapshot of the same PV and volume through the upstream plugin, is ambiguous with it; the operation fails naming both and the snapshot is left after the deletion", catUIDLessLeaked, true},
	{"reinstall: after Velero is reinstalled, audit --delete-orphans before Velero's backup sync has brought the backups back deletes the snapshots their records in the bucket name", catOrphanDeletion, true},
	{"vault location's locks: audit --location of a location restoring from the vault reads no lock there, and asks EC2 to delete a locked vault copy kept after its backup's deletion", catAuditDeletedLocked, true},
	{"unread copy place: a backup is called DR-ready while a region its copies are in could not be read", catAuditVerdict, true},
	{"retain turned on: vaultRetainOnDelete turned on after the backup: its deletion keeps the vault copies, and audit --delete-orphans deletes them", catOrphanDeletion, true},
}

// knownOpen are the broken promises the code is known to show (the findings not fixed yet).
// The explorer tolerates them and their regression scenarios expect them. When a fix lands, its
// finding is marked fixed: from then on the explorer and the scenario fail if it comes back.
var knownOpen = map[category]bool{}

func init() {
	for _, f := range findings {
		if !f.fixed {
			knownOpen[f.cat] = true
		}
	}
}
