package main

// mutant breaks one rule the README states, by replacing one snippet of the plugin's code.
type mutant struct {
	// name is how MUTANTS names it.
	name string
	// rule is the README's rule it breaks, quoted briefly.
	rule string
	// file is the Go file it changes, relative to the module's root.
	file string
	// old is the exact snippet replaced, found once in file; new replaces it.
	old, new string
}

// mutants are the one-rule mutants the explorer must kill: one or more per numbered rule of
// "What is this backup's" and per promise of the explorer's list that code enforces.
var mutants = []mutant{
	{
		name: "owns-ignores-uid",
		rule: `rule 1: "A snapshot tagged with another UID (another cluster's, an earlier backup's) is never tracked, copied, counted or deleted"`,
		file: "internal/model/identity.go",
		old: `	uid, tagged := tags[TagBackupUID]
	if tagged && id.UID != "" {
		return uid == id.UID
	}
`,
		new: ``,
	},
	{
		name: "candidates-window-dropped",
		rule: `rule 1: "the snapshots without a UID that started within the operation's window"`,
		file: "internal/model/identity.go",
		old:  `		if start.Before(op.Issued.Add(-ClockSkew)) || start.After(op.Issued.Add(window)) {`,
		new:  `		if start.IsZero() {`,
	},
	{
		name: "untokened-strays",
		rule: `rule 2: "snapshots without a token are never each other's strays"`,
		file: "internal/model/identity.go",
		old:  `if i != chosen && token != "" && TagMap(cands[i].Tags)[TagCreateToken] == token {`,
		new:  `if i != chosen && TagMap(cands[i].Tags)[TagCreateToken] == token {`,
	},
	{
		name: "pending-source-copied",
		rule: `rule 3: "A source still pending is never copied, shared or locked"`,
		file: "internal/tracking/decide_copy.go",
		old:  `f.timedOut || f.unreturned || f.deleting:`,
		new:  `f.timedOut || f.deleting:`,
	},
	{
		name: "strays-counted-as-recorded",
		rule: `rule 4: "distinct recorded sources ... (one per PV and volume ...; strays and snapshots without the UID do not count)"`,
		file: "internal/model/identity.go",
		old:  `			seen[sourceKeyOf(s)] = true`,
		new:  `			seen[sourceKey{pv: aws.ToString(s.SnapshotId)}] = true`,
	},
	{
		name: "stray-source-copied",
		rule: `rule 6: a Progress call fills copy slots with the sources an operation of the backup follows; a stray no operation could claim is never copied`,
		file: "internal/tracking/decide_copy.go",
		old:  `	case !f.followed || f.vault && !f.claimed:`,
		new:  `	case f.vault && !f.claimed:`,
	},
	{
		name: "ended-source-copied",
		rule: `promise: "nothing stays shared once its operation has ended": no copy of a source is started once its operation ended`,
		file: "internal/tracking/decide_copy.go",
		old:  `case f.ended || f.failed ||`,
		new:  `case f.failed ||`,
	},
	{
		name: "copy-failed-source-copied",
		rule: `rule 6: "Never copied: a source marked ... copy-failed": no process shares or copies it again`,
		file: "internal/tracking/decide_copy.go",
		old:  `f.ended || f.failed || f.failing ||`,
		new:  `f.ended || f.failing ||`,
	},
	{
		name: "failing-source-copied",
		rule: `promise: "nothing stays shared once its operation has ended": no copy of a source whose operation fails is started`,
		file: "internal/tracking/decide_copy.go",
		old:  `f.failed || f.failing || f.copied`,
		new:  `f.failed || f.copied`,
	},
	{
		name: "failed-before-vault-copy-locked",
		rule: `promise: "A vault copy that was made is locked as configured whether its operation completed or failed, and nothing stays shared once the operation has ended"`,
		file: "internal/tracking/decide.go",
		old:  `case len(failed) > 0 && len(busy) > 0:`,
		new:  `case false && len(failed) > 0 && len(busy) > 0:`,
	},
	{
		name: "failed-leaves-vault-share",
		rule: `promise: "nothing stays shared once the operation has ended": a failed phase ends the vault phase and removes its share`,
		file: "internal/tracking/decide.go",
		old:  `if !slices.ContainsFunc(phases, func(ph phase) bool { return ph.err != "" }) {`,
		new:  `if len(phases) >= 0 || !slices.ContainsFunc(phases, func(ph phase) bool { return ph.err != "" }) {`,
	},
	{
		name: "vault-owner-unchecked",
		rule: `rule 5: "a snapshot the vault credentials list that another account owns means those credentials are not the vault's, and the operation fails naming both accounts"`,
		file: "internal/tracking/view.go",
		old:  `if owner := aws.ToString(cp.OwnerId); tg.Vault() && owner != tg.Account {`,
		new:  `if owner := aws.ToString(cp.OwnerId); false && tg.Vault() && owner != tg.Account {`,
	},
	{
		name: "vault-account-unconfirmed",
		rule: `rule 5: "the vault credentials' account is also confirmed with STS GetCallerIdentity ... before anything is shared"`,
		file: "internal/tracking/decide_vault.go",
		old: `	case account != tg.Account:
		return vaultCheck{wrong: wrongVaultAccount(tg, account)}
`,
		new: ``,
	},
	{
		name: "cancelled-source-copied",
		rule: `rule 6: "Never copied: a source marked copy-cancelled"`,
		file: "internal/tracking/decide_copy.go",
		old:  `cancelled:  v.cancelled[id] || model.TagValue(s.Tags, model.TagCopyCancelled) != "",`,
		new:  `cancelled:  v.cancelled[id],`,
	},
	{
		name: "timed-out-source-copied",
		rule: `rule 6: "Never copied: ... one whose operation is past the backup's item-operation timeout"`,
		file: "internal/tracking/decide_copy.go",
		old:  `f.cancelled || f.timedOut || f.unreturned`,
		new:  `f.cancelled || f.unreturned`,
	},
	{
		name: "restored-volume-tag-trusted",
		rule: `rule 7: "a snapshot of another provider is told apart by what this plugin writes at creation, not by any tag a volume can carry"`,
		file: "internal/model/identity.go",
		old:  `return TagValue(s.Tags, TagCreateToken) != "" ||`,
		new:  `return TagValue(s.Tags, TagRestoreToken) != "" || TagValue(s.Tags, TagCreateToken) != "" ||`,
	},
	{
		name: "foreign-source-completes",
		rule: `rule 7: "When the backup names this plugin's location and that location asks for a copy or a vault copy, the operation fails naming the other location"`,
		file: "internal/tracking/decide.go",
		old:  `if len(wanted) == 0 {`,
		new:  `if len(wanted) >= 0 {`,
	},
	{
		name: "cancel-deletes-locked-copy",
		rule: `promise: "one reconcile's Cancels ... never ask EC2 to delete a locked copy and never fail on one"`,
		file: "internal/tracking/decide_cancel.go",
		old:  `return model.Locked(lock) || tg.Vault() && retained`,
		new:  `return tg.Vault() && retained`,
	},
	{
		name: "cancel-deletes-retained-copy",
		rule: `promise: "Cancel never deletes a copy kept by vaultRetainOnDelete"`,
		file: "internal/tracking/decide_cancel.go",
		old:  `return model.Locked(lock) || tg.Vault() && retained`,
		new:  `return model.Locked(lock) || false && tg.Vault() && retained`,
	},
	{
		name: "deletion-deletes-locked-copy",
		rule: `promise: "nothing locked or kept by vaultRetainOnDelete is deleted"; no request asks EC2 to delete a locked copy`,
		file: "internal/deleting/delete_plan.go",
		old:  `if st := seen.locks[c.regionalSnapshot]; model.Locked(st) {`,
		new:  `if st := seen.locks[c.regionalSnapshot]; false && model.Locked(st) {`,
	},
	{
		name: "deletion-deletes-retained-copy",
		rule: `vaultRetainOnDelete: "the vault copy is kept whichever location deletes the backup"`,
		file: "internal/deleting/delete_plan.go",
		old:  `	if c.isVaultCopy() {`,
		new:  `	if false && c.isVaultCopy() {`,
	},
	{
		name: "restore-resends-without-token",
		rule: `restores: "a lost answer is followed by a look-up by that tag and the same request again, with the same token"; "a restore makes at most one volume per PV"`,
		file: "internal/restoring/restore.go",
		old:  `		out, err := c.CreateVolume(ctx, a.in)`,
		new: `		resend := *a.in
		if len(seen.sent) > 0 {
			resend.ClientToken = nil
		}
		out, err := c.CreateVolume(ctx, &resend)`,
	},
	{
		name: "orphan-record-ignored",
		rule: `the orphan rule, 1: "A snapshot is needed when a record read names it, or, for a copy, its source"`,
		file: "internal/audit/orphans.go",
		old: `	if by, ok := v.named[sourceID]; ok {
		return ruling{verdict: needed, why: "Velero's record of backup " + by + " names it"}
	}
`,
		new: ``,
	},
	{
		name: "orphan-grace-ignored",
		rule: `the orphan rule, 1: "while it is younger than --orphan-grace"`,
		file: "internal/audit/orphans.go",
		old:  `	if now.Sub(s.Started) < grace {`,
		new:  `	if false {`,
	},
	{
		name: "orphan-running-backup",
		rule: `the orphan rule, 1: "while its backup ... is in the cluster and not finished"`,
		file: "internal/audit/orphans.go",
		old:  `	if inCluster && !finished(b) && b.Status.Phase != velerov1.BackupPhaseDeleting {`,
		new:  `	if false {`,
	},
	{
		name: "orphan-unsynced-backup",
		rule: `the orphan rule, 2: "A backup a storage location holds keeps its snapshots while it is not in the cluster"`,
		file: "internal/audit/orphans.go",
		old:  `		case !inCluster:`,
		new:  `		case false:`,
	},
	{
		name: "orphan-deleting-backup",
		rule: `the orphan rule, 2: "... or is being deleted"`,
		file: "internal/audit/orphans.go",
		old:  `		case b.Status.Phase == velerov1.BackupPhaseDeleting:`,
		new:  `		case false:`,
	},
	{
		name: "orphan-unread-record",
		rule: `the orphan rule, 3: "A snapshot of a finished backup in the cluster that its record, read, does not name is an orphan"`,
		file: "internal/audit/orphans.go",
		old:  `		case !read || rec.Err != "":`,
		new:  `		case !read && rec.Err == "x":`,
	},
	{
		name: "orphan-unlisted-storage",
		rule: `the orphan rule, 4: "every storage location was listed"`,
		file: "internal/audit/orphans.go",
		old:  `		if v.w.Stored[l.Name].Err != "" {`,
		new:  `		if false {`,
	},
	{
		name: "orphan-unanchored-listing",
		rule: `the orphan rule, 4: "the one its backup named ... lists a backup this install's snapshots name"`,
		file: "internal/audit/orphans.go",
		old:  `	case !v.anchored[bsl]:`,
		new:  `	case false:`,
	},
	{
		name: "orphan-other-install",
		rule: `the orphan rule, 5: "Other installs' and untagged snapshots are never orphans"`,
		file: "internal/audit/orphans.go",
		old:  `	case install != v.w.Install || v.w.Install == "":`,
		new:  `	case false:`,
	},
	{
		name: "orphan-lock-ignored",
		rule: `the orphan rule, 6: "An orphan a lock still holds ... is kept"`,
		file: "internal/audit/orphans.go",
		old:  `	if s.Lock.Held() {`,
		new:  `	if false {`,
	},
	{
		name: "orphan-retain-config-ignored",
		rule: `the orphan rule, 6: "or the config, now, of any location naming its vault account"`,
		file: "internal/audit/orphans.go",
		old:  `		configured = configured || l.Config.Vault.AccountID == s.Account && l.Config.Vault.RetainOnDelete`,
		new:  `		configured = configured && l.Config.Vault.RetainOnDelete`,
	},
	{
		name: "orphan-retain-tag-ignored",
		rule: `the orphan rule, 6: "a vault copy vaultRetainOnDelete keeps (its tag, its source's ...)"`,
		file: "internal/audit/orphans.go",
		old:  `	return model.RetainReason(s.Tags[model.TagVaultRetainOnDelete] == "true", seen && src.Tags[model.TagVaultRetainOnDelete] == "true", configured)`,
		new:  `	return model.RetainReason(false, seen && src.ID == "", configured)`,
	},
	{
		name: "orphan-locks-unread-through-any-location",
		rule: `the orphan rule, 6: "Locks are read wherever a vault copy is listed, whichever location reaches it"`,
		file: "internal/audit/read.go",
		old:  `	if slices.ContainsFunc(out, func(s Snapshot) bool { return s.Kind == KindVault }) {`,
		new:  `	if p.kind == KindVault {`,
	},
	{
		name: "dr-ready-unread-place",
		rule: `DR-ready: "A place the audit could not read ... is unknown ... never DR-ready"`,
		file: "internal/audit/decide.go",
		old:  `	line.DRReady = line.AsksCopies && !notReady && len(unknown) == 0`,
		new:  `	line.DRReady = line.AsksCopies && !notReady`,
	},
	{
		name: "dr-ready-copy-region-from-config",
		rule: `DR-ready: "the copies in the region each source asked for (its tags, whatever copyToRegion says now)"`,
		file: "internal/audit/decide.go",
		old: `		if r := src.Tags[model.TagCopyToRegion]; r != "" {
			out = append(out, wants{kind: KindCopy, region: r})
		}
		if a := src.Tags[model.TagVaultAccount]; a != "" {`,
		new: `		if r := loc.Config.CopyToRegion; r != "" {
			out = append(out, wants{kind: KindCopy, region: r})
		}
		if a := src.Tags[model.TagVaultAccount]; a != "" {`,
	},
	{
		name: "vault-restorable-record-ignored",
		rule: `audit: "vault-restorable when its vault copies completed (and are locked, where asked) and its record is in the vault bucket"`,
		file: "internal/audit/decide_vault.go",
		old:  `		case !held:`,
		new:  `		case false && !held:`,
	},
	{
		name: "vault-restorable-unread-bucket",
		rule: `audit: "unknown, never restorable, when the vault or its bucket could not be read"`,
		file: "internal/audit/decide_vault.go",
		old: `		case b.Err != "":
			unknown = append(unknown, fmt.Sprintf("vault bucket %s could not be read: %s", b.Bucket.Name, b.Err))
`,
		new: ``,
	},
	{
		name: "recovery-point-any-phase",
		rule: `Recovery points: "the newest Completed backup whose copies there are all completed"`,
		file: "internal/audit/decide.go",
		old:  `			if pt.decided || b.Phase != string(velerov1.BackupPhaseCompleted) {`,
		new:  `			if pt.decided {`,
	},
	{
		name: "deletion-waits-not-for-a-fill-under-way",
		rule: `deletion: "a copy asked for just before the mark is waited for, as long as its fill may send it and EC2 list it" (a deletion landing inside a Progress call, between its fill's re-read and its CopySnapshot)`,
		file: "internal/deleting/delete_plan.go",
		old:  `if u := later(markedAt, requested.Add(copyRequestSpread)).Add(lag); u.After(until) {`,
		new:  `if u := later(markedAt, requested).Add(lag); u.After(until) {`,
	},
	{
		name: "fill-copies-a-source-being-deleted",
		rule: `rule 6: "Never copied: a source marked ... deletion-requested-at": a fill on a view read before the deletion's mark reads its batch again after marking it`,
		file: "internal/tracking/tracker.go",
		old:  `		if model.TagValue(s.Tags, model.TagDeletionRequestedAt) != "" {`,
		new:  `		if false && model.TagValue(s.Tags, model.TagDeletionRequestedAt) != "" {`,
	},
	{
		name: "deletion-takes-another-installs-pending",
		rule: `rule 1: "A snapshot tagged with another UID ... is never ... deleted": a deletion leaves another install's snapshot of the backup's name still marked pending`,
		file: "internal/deleting/delete_plan.go",
		old:  `		return uid == b.uid`,
		new:  `		return uid != ""`,
	},
	{
		name: "owns-ignores-install",
		rule: `rule 1: "nor is one without a UID tagged with another install's identity" tracked or deleted`,
		file: "internal/model/identity.go",
		old:  `if install := tags[TagInstall]; install != "" && id.Install != "" && install != id.Install {`,
		new:  `if false {`,
	},
	{
		name: "restore-from-pending-copy",
		rule: `restores: "in the copy region, from its completed copy": a restore while the copy is pending fails saying so, without asking EC2 for a volume`,
		file: "internal/restoring/restore_decide.go",
		old:  `		if c.State == types.SnapshotStateCompleted {`,
		new:  `		if c.State != types.SnapshotStateError {`,
	},
	{
		name: "restore-drops-throughput",
		rule: `restores: "with the backed-up volume's settings" (velero-async.io/volume-throughput, recreated at restore)`,
		file: "internal/restoring/restore_decide.go",
		old:  `		in.Throughput = int32Of(nil, tags[model.TagVolumeThroughput])`,
		new:  ``,
	},
	{
		name: "cancel-ignores-retain-turned-on",
		rule: `promise: "Cancel never deletes a copy kept by vaultRetainOnDelete", as the location's config says now`,
		file: "internal/tracking/decide_cancel.go",
		old:  `return err == nil && cfg.Vault.RetainOnDelete && cfg.Vault.AccountID == tg.Account`,
		new:  `return false && err == nil && cfg.Vault.RetainOnDelete && cfg.Vault.AccountID == tg.Account`,
	},
}
