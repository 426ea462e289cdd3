package explore

import "github.com/velero-async/velero-plugin-for-aws/internal/audit"

// auditRegressions are the findings of the audit's orphan deletion and verdicts, played by
// TestRegressions with the others.
var auditRegressions = []regression{
	{
		name:  "after a reinstall, audit --delete-orphans before Velero's sync deletes nothing a backup in the bucket names",
		want:  catOrphanDeletion,
		setup: onePV(setup{copyTo: true, timeout: dayTimeout, seed: 71}),
		steps: func(w *world) {
			w.runAll()
			w.pollUntilEnded()
			w.reinstall()
			w.advance(2 * audit.DefaultOrphanGrace)
			w.deleteOrphans("", audit.DefaultOrphanGrace, true)
			w.sync()
		},
	},
	{
		name: "audit --location of the location restoring from the vault never asks EC2 to delete a locked vault copy",
		want: catAuditDeletedLocked,
		setup: onePV(setup{vault: true, vaultRegion: farRegion, lock: true, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
			timeout: dayTimeout, seed: 72}),
		steps: func(w *world) {
			w.runAll()
			w.pollUntilEnded()
			w.deleteBackup(deleteBySource, -1, 0)
			w.advance(2 * audit.DefaultOrphanGrace)
			w.deleteOrphans(vaultRecoveryLocation, audit.DefaultOrphanGrace, true)
		},
	},
	{
		name:  "a backup whose copy region cannot be read is never called DR-ready",
		want:  catAuditVerdict,
		setup: onePV(setup{copyTo: true, timeout: dayTimeout, seed: 73}),
		steps: func(w *world) {
			w.runAll()
			w.advanceUntilSnapshotAt(0, 100)
			w.reconcile() // the copy starts
			w.setDown(copyRegion, true)
			w.deleteOrphans("", audit.DefaultOrphanGrace, true)
			w.setDown(copyRegion, false)
		},
	},
	{
		name: "vaultRetainOnDelete turned on after the backup: audit --delete-orphans keeps the vault copies its deletion kept",
		want: catOrphanDeletion,
		setup: onePV(setup{vault: true, vaultRegion: farRegion, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
			timeout: dayTimeout, seed: 74}),
		steps: func(w *world) {
			w.runAll()
			w.pollUntilEnded()
			w.changeConfig(retainTurnedOn)
			w.deleteBackup(deleteBySource, -1, 0)
			w.advance(2 * audit.DefaultOrphanGrace)
			w.deleteOrphans("", audit.DefaultOrphanGrace, true)
		},
	},
}

func init() { regressions = append(regressions, auditRegressions...) }
