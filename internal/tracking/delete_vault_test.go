package tracking_test

import (
	"context"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/deleting"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// Deleting a backup with vault copies from each location that may delete it: the source
// cluster's, and a recovery cluster's location restoring from the vault (the vault region,
// the vault account's credentials), which finds the vault copy as a plain copy of the source
// Velero recorded. Retention and locks hold whichever deletes.
func TestDeletingABackupFromTheVaultLocation(t *testing.T) {
	dayLock := model.Lock{Mode: model.LockModeGovernance, Days: 1}
	tests := []struct {
		name   string
		lock   model.Lock
		retain bool // the source location has vaultRetainOnDelete, and its snapshot says so
		// fromSourceToo deletes the backup from the source cluster afterwards, with a location
		// that no longer says vaultRetainOnDelete.
		fromSourceToo bool
		wantKept      bool
	}{
		{name: "a vault copy not retained is deleted, the source left to its account"},
		{name: "a vault copy marked vaultRetainOnDelete is kept", retain: true, wantKept: true},
		{name: "a vault copy marked vaultRetainOnDelete is kept by the source cluster too, whatever its location says now", retain: true, fromSourceToo: true, wantKept: true},
		{name: "a locked vault copy is kept", lock: dayLock, wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			w := newVaultWorld(t, ec2sim.Faults{})
			cfg := vaultConfig(tt.lock)
			cfg.Vault.RetainOnDelete = tt.retain
			srcID := completedVaultBackup(t, w, cfg)
			vaultLocation := deleting.NewDeleter(model.Config{Region: vaultRegion}, w.Vault, w.Options()...)
			if err := vaultLocation.DeleteSnapshot(ctx, srcID); err != nil {
				t.Fatalf("DeleteSnapshot from the vault location: %v", err)
			}
			if left := w.Sim.SnapshotsIn(sourceAccount, sourceRegion); len(left) != 1 || left[0].ID != srcID {
				t.Errorf("source account holds %+v, want the source %s untouched: it is not the vault account's", left, srcID)
			}
			if tt.fromSourceToo {
				cfg.Vault.RetainOnDelete = false
				if err := deleting.NewDeleter(cfg, w.Source, w.Options()...).DeleteSnapshot(ctx, srcID); err != nil {
					t.Fatalf("DeleteSnapshot from the source location: %v", err)
				}
				if left := w.Sim.SnapshotsIn(sourceAccount, sourceRegion); len(left) != 0 {
					t.Errorf("source account keeps %+v after the source cluster's deletion", left)
				}
			}
			copies := w.VaultCopies(vaultRegion, srcID)
			switch {
			case tt.wantKept && (len(copies) != 1 || copies[0].Tags[model.TagBackupDeletedAt] == ""):
				t.Errorf("vault copies %+v: want the one copy kept, tagged %s", copies, model.TagBackupDeletedAt)
			case !tt.wantKept && len(copies) != 0:
				t.Errorf("vault copies %+v left after deletion", copies)
			}
		})
	}
}
