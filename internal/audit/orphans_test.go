package audit_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/audit/audittest"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

// pastGrace is how long after the snapshots the audits of these tests run.
const pastGrace = audit.DefaultOrphanGrace + time.Minute

// Which snapshots the audit calls this install's orphans, and which it never does.
func TestOrphans(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup takes snapshots and puts the cluster's objects; it returns the snapshots
		// the audit must call orphans, and those it must never.
		setup             func(w *audittest.World) (orphans, never []string)
		unknown, other    int
		kept              int
		wantWhy, wantCost string
		// drReady names a backup the audit must show DR-ready.
		drReady string
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
			wantWhy: "backup deleted no longer exists", wantCost: "$0.60/month",
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
			wantWhy: "left recorded=pending: its CreateSnapshot never returned it to backup b1",
		},
		{
			name: "another install's snapshots in the same account are never this install's orphans",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				theirs := w.Take("their-deleted", w.Vols[0], audittest.Outcome{Install: audittest.InstallB})
				return nil, []string{theirs.Source, theirs.Copy, theirs.Vault}
			},
			other: 3,
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
			other: 4, drReady: "nightly-1",
		},
		{
			name: "snapshots of an earlier release, without the install tag, are listed as an unknown install's, never as orphans",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				old := w.Take("old", w.Vols[0], audittest.Outcome{Install: "-", Vault: "missing"})
				return nil, []string{old.Source, old.Copy}
			},
			unknown: 2,
		},
		{
			name: "a snapshot of a backup still waiting for its copies is never an orphan",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("running", w.Vols[0], audittest.Outcome{})
				w.Backup("running", "", w.Clock.Now(), velerov1.BackupPhaseWaitingForPluginOperations)
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
		},
		{
			name: "a snapshot of a backup Velero is deleting is never an orphan",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("deleting", w.Vols[0], audittest.Outcome{})
				w.Backup("deleting", "", w.Clock.Now(), velerov1.BackupPhaseDeleting, s)
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
		},
		{
			name: "a vault copy kept by vaultRetainOnDelete is kept, not an orphan",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{Retained: true})
				return []string{s.Source, s.Copy}, []string{s.Vault}
			},
			kept: 1,
		},
		{
			name: "a vault copy kept by vaultRetainOnDelete is kept, counted once, when a location restoring from the vault reaches it too",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				w.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: "vault-recovery"},
					Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider,
						Config: map[string]string{"region": audittest.CopyRegion, "profile": audittest.VaultProfile}}})
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{Retained: true})
				return []string{s.Source, s.Copy}, []string{s.Vault}
			},
			kept: 1,
		},
		{
			name: "with a storage location unavailable, no snapshot of a missing backup is called an orphan",
			setup: func(w *audittest.World) ([]string, []string) {
				w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
				w.Put(&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: "offsite"},
					Status: velerov1.BackupStorageLocationStatus{Phase: velerov1.BackupStorageLocationPhaseUnavailable}})
				s := w.Take("deleted", w.Vols[0], audittest.Outcome{})
				return nil, []string{s.Source, s.Copy, s.Vault}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := audittest.New(t)
			orphans, never := tc.setup(w)
			w.Clock.Step(pastGrace)
			rep := w.Audit(false)
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
			if len(rep.Unknown) != tc.unknown || rep.OtherInstalls != tc.other || len(rep.Kept) != tc.kept {
				t.Errorf("unknown install %d, other installs %d, kept %d; want %d, %d, %d\n%s",
					len(rep.Unknown), rep.OtherInstalls, len(rep.Kept), tc.unknown, tc.other, tc.kept, out)
			}
			if !strings.Contains(out, tc.wantWhy) || !strings.Contains(out, tc.wantCost) {
				t.Errorf("want %q and %q in\n%s", tc.wantWhy, tc.wantCost, out)
			}
			if tc.drReady != "" && !slices.ContainsFunc(rep.Backups, func(b audit.BackupLine) bool { return b.Name == tc.drReady && b.DRReady }) {
				t.Errorf("backup %s is not shown DR-ready\n%s", tc.drReady, out)
			}
			if len(orphans) > 0 && rep.Exit() != audit.ExitFindings {
				t.Errorf("exit %d with orphans, want %d", rep.Exit(), audit.ExitFindings)
			}
		})
	}
}

// --delete-orphans --confirm: what it deletes and what it refuses.
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
	if !strings.Contains(out, "refused "+locked.Vault) || !strings.Contains(out, "locked (governance)") {
		t.Errorf("the locked vault copy's refusal is not printed\n%s", out)
	}
	after := w.Srv.Sim.Stats()
	dry := after.Total("DeleteSnapshot", "DryRunOperation") - before.Total("DeleteSnapshot", "DryRunOperation")
	real := after.Total("DeleteSnapshot", "ok") - before.Total("DeleteSnapshot", "ok")
	if dry != len(gone) || real != len(gone) {
		t.Errorf("%d dry runs and %d deletions, want %d of each", dry, real, len(gone))
	}
	if rep.Exit() != audit.ExitFindings {
		t.Errorf("exit %d with a refused deletion, want %d", rep.Exit(), audit.ExitFindings)
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
