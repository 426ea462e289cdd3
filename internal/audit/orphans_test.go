package audit_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/audittest"
)

// pastGrace is how long after the snapshots the audits of these tests run.
const pastGrace = audit.DefaultOrphanGrace + time.Minute

// retainingConfig is LocationConfig with vaultRetainOnDelete turned on.
func retainingConfig() map[string]string {
	cfg := maps.Clone(audittest.LocationConfig)
	cfg[model.ConfigVaultRetainOnDelete] = "true"
	return cfg
}

// Which snapshots the audit calls this install's orphans, and which it never does: one row per
// clause of the orphan rule.
func TestOrphans(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup takes snapshots and puts the cluster's objects and the storage location's
		// records; it returns the snapshots the audit must call orphans, and those it must
		// never.
		setup func(w *audittest.World) (orphans, never []string)
		// only is the audit's --location.
		only                 string
		unknown, other, kept int
		unjudged             int
		wantWhy, wantCost    string
		wantExit             int
	}{
		{
			name: "a deleted backup's snapshot and copies are this install's orphans, with their cost",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				gone := w.Take("deleted", w.Vols[0], audittest.Outcome{Unlocked: true})
				kept := w.Take("kept", w.Vols[1], audittest.Outcome{})
				w.Backup("kept", "", w.Clock.Now(), velerov1.BackupPhaseCompleted, kept)
				return []string{gone.Source, gone.Copy, gone.Vault}, []string{kept.Source, kept.Copy, kept.Vault}
			},
			wantWhy: "backup deleted is in no storage location of this cluster", wantCost: "$0.60/month", wantExit: audit.ExitFindings,
		},
		{
			name: "a snapshot left recorded=pending by a finished backup is an orphan, its recorded sibling is not",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, map[string]string{"region": audittest.SourceRegion, "profile": audittest.SourceProfile})
				stray := w.Take("b1", w.Vols[0], audittest.Outcome{Recorded: "pending", Copy: "missing", Vault: "missing"})
				w.Clock.Step(time.Minute) // EC2 takes one snapshot of a volume per 15 s
				recorded := w.Take("b1", w.Vols[0], audittest.Outcome{Copy: "missing", Vault: "missing"})
				w.Backup("b1", "", w.Clock.Now(), velerov1.BackupPhaseCompleted, recorded)
				return []string{stray.Source}, []string{recorded.Source}
			},
			wantWhy: "left recorded=pending: its CreateSnapshot never returned it to backup b1", wantExit: audit.ExitFindings,
		},
		{
			name: "after a reinstall, a backup the storage location holds but Velero has not synced back keeps its snapshots",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("nightly-1", w.Vols[0], audittest.Outcome{Unlocked: true})
				w.Stored("nightly-1", s)
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
			wantExit: audit.ExitOK,
		},
		{
			name: "a backup left waiting for its operations by a Velero that is gone, which Velero never syncs, keeps its snapshots",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("waiting", w.Vols[0], audittest.Outcome{Copy: "pending", Vault: "missing"})
				w.Stored("waiting", s)
				return nil, []string{s.Source, s.Copy}
			},
			wantWhy: "", wantExit: audit.ExitOK,
		},
		{
			name: "a storage location that cannot be listed leaves the snapshots of missing backups unjudged, and the audit incomplete",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				w.StoreErr = errors.New("AccessDenied")
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{Unlocked: true})
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
			unjudged: 4, wantWhy: "backup storage location default could not be listed: AccessDenied", wantExit: audit.ExitError,
		},
		{
			name: "a storage location that lists no backup this install's snapshots name proves nothing absent: a wrong bucket or prefix would look the same",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				w.Put(&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: "offsite"},
					Status: velerov1.BackupStorageLocationStatus{Phase: velerov1.BackupStorageLocationPhaseAvailable}})
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{StorageLocation: "offsite", Unlocked: true})
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
			unjudged: 3, wantWhy: "backup storage location offsite lists no backup this install's snapshots name", wantExit: audit.ExitOK,
		},
		{
			name: "a snapshot whose backup's storage location is not in the cluster is not judged",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("elsewhere", w.Vols[0], audittest.Outcome{StorageLocation: "old-bucket", Unlocked: true})
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
			unjudged: 3, wantWhy: "backup elsewhere's storage location old-bucket is not in this cluster", wantExit: audit.ExitOK,
		},
		{
			name: "a Failed backup whose storage location holds no record of its snapshots recorded none: they are orphans, and the audit reads everything",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("failed", w.Vols[0], audittest.Outcome{Unlocked: true})
				w.Backup("failed", "", w.Clock.Now(), velerov1.BackupPhaseFailed, s)
				w.Records["failed"] = nil
				return []string{s.Source, s.Copy, s.Vault}, nil
			},
			wantWhy: "not among backup failed's snapshots", wantExit: audit.ExitFindings,
		},
		{
			name: "a Completed backup whose storage location holds no record of its snapshots cannot be judged",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("completed", w.Vols[0], audittest.Outcome{})
				w.Backup("completed", "", w.Clock.Now(), velerov1.BackupPhaseCompleted, s)
				w.Records["completed"] = nil
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
			unjudged: 3, wantWhy: "Velero's record of backup completed could not be read", wantExit: audit.ExitError,
		},
		{
			name: "another install's snapshots in the same account are never this install's orphans",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				theirs := w.Take("their-deleted", w.Vols[0], audittest.Outcome{Install: audittest.InstallB})
				return nil, []string{theirs.Source, theirs.Copy, theirs.Vault}
			},
			other: 3, wantExit: audit.ExitOK,
		},
		{
			name: "a recovery cluster that synced the backups calls none of the source cluster's snapshots orphans",
			setup: func(w *audittest.World) ([]string, []string) {
				// The recovery cluster's location restores in the copy region and copies back.
				w.Cluster(audittest.RecoveryUID, map[string]string{"region": audittest.CopyRegion, "copyToRegion": audittest.SourceRegion, "profile": audittest.SourceProfile})
				synced := w.Take("nightly-1", w.Vols[0], audittest.Outcome{})
				w.Backup("nightly-1", audittest.ScheduleName, w.Clock.Now(), velerov1.BackupPhaseCompleted, synced)
				notYetSynced := w.Take("nightly-2", w.Vols[1], audittest.Outcome{})
				deletedAtSource := w.Take("nightly-0", w.Vols[2], audittest.Outcome{Copy: "completed", Vault: "missing"})
				return nil, []string{synced.Source, synced.Copy, notYetSynced.Source, notYetSynced.Copy, deletedAtSource.Copy}
			},
			other: 4, wantExit: audit.ExitOK,
		},
		{
			name: "snapshots of an earlier release, without the install tag, are listed as an unknown install's, never as orphans",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				old := w.Take("old", w.Vols[0], audittest.Outcome{Install: "-", Vault: "missing"})
				return nil, []string{old.Source, old.Copy}
			},
			unknown: 2, wantExit: audit.ExitOK,
		},
		{
			name: "a snapshot of a backup still waiting for its copies is never an orphan",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("running", w.Vols[0], audittest.Outcome{})
				w.Backup("running", "", w.Clock.Now(), velerov1.BackupPhaseWaitingForPluginOperations)
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
			wantExit: audit.ExitOK,
		},
		{
			name: "a snapshot of a backup Velero is deleting, its files still in the storage location, is never an orphan",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("deleting", w.Vols[0], audittest.Outcome{})
				w.Backup("deleting", "", w.Clock.Now(), velerov1.BackupPhaseDeleting, s)
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
			wantExit: audit.ExitOK,
		},
		{
			name: "the snapshots of a backup left in phase Deleting after its files were removed are orphans",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("deleting", w.Vols[0], audittest.Outcome{Unlocked: true})
				w.Backup("deleting", "", w.Clock.Now(), velerov1.BackupPhaseDeleting)
				delete(w.Records, "deleting")
				return []string{s.Source, s.Copy, s.Vault}, nil
			},
			wantWhy: "backup deleting is in no storage location of this cluster", wantExit: audit.ExitFindings,
		},
		{
			name: "a vault copy its tag keeps by vaultRetainOnDelete is kept, not an orphan",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{Retained: true, Unlocked: true})
				return []string{s.Source, s.Copy}, []string{s.Vault}
			},
			kept: 1, wantWhy: "kept: it is tagged velero-async.io/vault-retain-on-delete", wantExit: audit.ExitFindings,
		},
		{
			name: "a vault copy is kept when vaultRetainOnDelete was turned on after it was made",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, retainingConfig())
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{Unlocked: true})
				return []string{s.Source, s.Copy}, []string{s.Vault}
			},
			kept: 1, wantWhy: "kept: vaultRetainOnDelete is true", wantExit: audit.ExitFindings,
		},
		{
			name: "a locked vault copy of a deleted backup is kept, not an orphan, and costs nothing among the orphans",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{})
				return []string{s.Source, s.Copy}, []string{s.Vault}
			},
			kept: 1, wantWhy: "kept: its governance lock lasts until", wantCost: "$0.40/month", wantExit: audit.ExitFindings,
		},
		{
			name: "the location restoring from the vault reads the locks there: a locked vault copy is kept",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				w.RestoreFromVault()
				live := w.Take("live", w.Vols[1], audittest.Outcome{})
				w.Backup("live", "", w.Clock.Now(), velerov1.BackupPhaseCompleted, live)
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{})
				return nil, []string{s.Vault, live.Vault}
			},
			only: audittest.VaultRecoveryLocation, kept: 1, wantWhy: "kept: its governance lock lasts until", wantExit: audit.ExitOK,
		},
		{
			name: "the location restoring from the vault keeps a vault copy the source location's config retains, counted once",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, retainingConfig())
				w.RestoreFromVault()
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{Unlocked: true})
				return []string{s.Source, s.Copy}, []string{s.Vault}
			},
			kept: 1, wantWhy: "kept: vaultRetainOnDelete is true", wantExit: audit.ExitFindings,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := audittest.New(t)
			orphans, never := tc.setup(w)
			w.Clock.Step(pastGrace)
			rep := w.AuditOf(tc.only, false)
			got := audittest.OrphanIDs(rep)
			out := audittest.Text(t, rep)
			for _, id := range orphans {
				if !slices.Contains(got, id) {
					t.Errorf("%s is not listed as an orphan\n%s", id, out)
				}
			}
			for _, id := range never {
				if slices.Contains(got, id) {
					t.Errorf("%s is listed as an orphan\n%s", id, out)
				}
			}
			if len(rep.Unknown) != tc.unknown || rep.OtherInstalls != tc.other || len(rep.Kept) != tc.kept || len(rep.Unjudged) != tc.unjudged {
				t.Errorf("unknown install %d, other installs %d, kept %d, not judged %d; want %d, %d, %d, %d\n%s",
					len(rep.Unknown), rep.OtherInstalls, len(rep.Kept), len(rep.Unjudged), tc.unknown, tc.other, tc.kept, tc.unjudged, out)
			}
			if !strings.Contains(out, tc.wantWhy) || !strings.Contains(out, tc.wantCost) {
				t.Errorf("want %q and %q in\n%s", tc.wantWhy, tc.wantCost, out)
			}
			if rep.Exit() != tc.wantExit {
				t.Errorf("exit %d, want %d\n%s", rep.Exit(), tc.wantExit, out)
			}
		})
	}
}

// --delete-orphans --confirm: what it deletes, and what it never asks EC2 to delete.
func TestDeleteOrphans(t *testing.T) {
	w := audittest.New(t)
	w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
	unlocked := w.Take("deleted", w.Vols[0], audittest.Outcome{Unlocked: true})
	locked := w.Take("deleted-locked", w.Vols[1], audittest.Outcome{})
	retained := w.Take("deleted-retained", w.Vols[2], audittest.Outcome{Retained: true, Unlocked: true})
	theirs := w.Take("theirs", w.Vols[0], audittest.Outcome{Install: audittest.InstallB, Vault: "missing"})
	old := w.Take("old", w.Vols[1], audittest.Outcome{Install: "-", Vault: "missing"})
	live := w.Take("live", w.Vols[2], audittest.Outcome{Vault: "missing"})
	w.Backup("live", "", w.Clock.Now(), velerov1.BackupPhaseCompleted, live)
	w.Clock.Step(pastGrace)
	before := w.Srv.Sim.Stats()
	rep := w.Audit(true)
	out := audittest.Text(t, rep)

	gone := []string{unlocked.Source, unlocked.Copy, unlocked.Vault, locked.Source, locked.Copy, retained.Source, retained.Copy}
	left := []string{locked.Vault, retained.Vault, theirs.Source, theirs.Copy, old.Source, old.Copy, live.Source, live.Copy}
	all := map[string]bool{}
	for _, acc := range []string{audittest.SourceAccount, audittest.VaultAccount} {
		for _, r := range []string{audittest.SourceRegion, audittest.CopyRegion} {
			for _, s := range w.Srv.Sim.SnapshotsIn(acc, r) {
				if !s.DeletePending {
					all[s.ID] = true
				}
			}
		}
	}
	for _, id := range gone {
		if all[id] {
			t.Errorf("orphan %s was not deleted\n%s", id, out)
		}
	}
	for _, id := range left {
		if !all[id] {
			t.Errorf("%s was deleted\n%s", id, out)
		}
	}
	if !strings.Contains(out, locked.Vault) || !strings.Contains(out, "kept: its governance lock lasts until") {
		t.Errorf("the locked vault copy is not shown kept by its lock\n%s", out)
	}
	if slices.ContainsFunc(rep.Deletions, func(d audit.Deletion) bool { return d.ID == locked.Vault || d.ID == retained.Vault }) {
		t.Errorf("a deletion of a kept vault copy was tried\n%s", out)
	}
	after := w.Srv.Sim.Stats()
	dry := after.Total("DeleteSnapshot", "DryRunOperation") - before.Total("DeleteSnapshot", "DryRunOperation")
	real := after.Total("DeleteSnapshot", "ok") - before.Total("DeleteSnapshot", "ok")
	if dry != len(gone) || real != len(gone) {
		t.Errorf("%d dry runs and %d deletions, want %d of each", dry, real, len(gone))
	}
	if rep.Exit() != audit.ExitFindings {
		t.Errorf("exit %d with backup live not DR-ready, want %d\n%s", rep.Exit(), audit.ExitFindings, out)
	}
}

// Without --delete-orphans, every request of the audit is a Describe.
func TestAuditOnlyDescribes(t *testing.T) {
	w := audittest.New(t)
	w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
	w.Take("deleted", w.Vols[0], audittest.Outcome{})
	w.Clock.Step(pastGrace)
	before := w.Srv.Sim.Stats()
	w.Audit(false)
	after := w.Srv.Sim.Stats()
	for region, actions := range after.Calls {
		for action, outcomes := range actions {
			for outcome, n := range outcomes {
				if n != before.Calls[region][action][outcome] && !strings.HasPrefix(action, "Describe") {
					t.Errorf("the audit sent %s in %s", action, region)
				}
			}
		}
	}
}

// When the audit cannot read everything, --delete-orphans deletes nothing and says why.
func TestDeleteOrphansRefusesAnIncompleteAudit(t *testing.T) {
	w := audittest.New(t)
	w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
	w.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: "unreadable"},
		Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider, Config: map[string]string{"region": audittest.CopyRegion},
			Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "cloud"}}})
	gone := w.Take("deleted", w.Vols[0], audittest.Outcome{Unlocked: true})
	w.Clock.Step(pastGrace)
	rep := w.Audit(true)
	out := audittest.Text(t, rep)
	for _, id := range []string{gone.Source, gone.Copy, gone.Vault} {
		if !slices.ContainsFunc(rep.Deletions, func(d audit.Deletion) bool { return d.ID == id && !d.Deleted }) {
			t.Errorf("%s: want its deletion refused\n%s", id, out)
		}
	}
	if !strings.Contains(out, "could not audit: location unreadable") || rep.Exit() != audit.ExitError {
		t.Errorf("exit %d, want %d and the unreadable location named\n%s", rep.Exit(), audit.ExitError, out)
	}
}
