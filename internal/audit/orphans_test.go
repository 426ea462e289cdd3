package audit

import (
	"slices"
	"strings"
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pastGrace is how long after the snapshots the audits of these tests run.
const pastGrace = DefaultOrphanGrace + time.Minute

// Which snapshots the audit calls this install's orphans, and which it never does.
func TestOrphans(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup takes snapshots and puts the cluster's objects; it returns the snapshots
		// the audit must call orphans, and those it must never.
		setup             func(w *world) (orphans, never []string)
		unknown, other    int
		kept              int
		wantWhy, wantCost string
		// drReady names a backup the audit must show DR-ready.
		drReady string
	}{
		{
			name: "a deleted backup's snapshot and copies are this install's orphans, with their cost",
			setup: func(w *world) ([]string, []string) {
				w.cluster(clusterAUID, locationConfig)
				gone := w.take("deleted", w.vols[0], outcome{unlocked: true})
				kept := w.take("kept", w.vols[1], outcome{})
				w.backup("kept", "", w.clock.Now(), velerov1.BackupPhaseCompleted, kept)
				return []string{gone.source, gone.copy, gone.vault}, []string{kept.source, kept.copy, kept.vault}
			},
			wantWhy: "backup deleted no longer exists", wantCost: "$0.60/month",
		},
		{
			name: "a snapshot left recorded=pending by a finished backup is an orphan, its recorded sibling is not",
			setup: func(w *world) ([]string, []string) {
				w.cluster(clusterAUID, map[string]string{"region": sourceRegion, "profile": sourceProfile})
				stray := w.take("b1", w.vols[0], outcome{recorded: "pending", copy: "missing", vault: "missing"})
				w.clock.Step(time.Minute) // EC2 takes one snapshot of a volume per 15 s
				recorded := w.take("b1", w.vols[0], outcome{copy: "missing", vault: "missing"})
				w.backup("b1", "", w.clock.Now(), velerov1.BackupPhaseCompleted, recorded)
				return []string{stray.source}, []string{recorded.source}
			},
			wantWhy: "left recorded=pending: its CreateSnapshot never returned it to backup b1",
		},
		{
			name: "another install's snapshots in the same account are never this install's orphans",
			setup: func(w *world) ([]string, []string) {
				w.cluster(clusterAUID, locationConfig)
				theirs := w.take("their-deleted", w.vols[0], outcome{install: installB})
				return nil, []string{theirs.source, theirs.copy, theirs.vault}
			},
			other: 3,
		},
		{
			name: "a recovery cluster that synced the backups calls none of the source cluster's snapshots orphans",
			setup: func(w *world) ([]string, []string) {
				// The recovery cluster's location restores in the copy region and copies back.
				w.cluster(recoveryUID, map[string]string{"region": copyRegion, "copyToRegion": sourceRegion, "profile": sourceProfile})
				synced := w.take("nightly-1", w.vols[0], outcome{})
				w.backup("nightly-1", scheduleName, w.clock.Now(), velerov1.BackupPhaseCompleted, synced)
				notYetSynced := w.take("nightly-2", w.vols[1], outcome{})
				deletedAtSource := w.take("nightly-0", w.vols[2], outcome{copy: "completed", vault: "missing"})
				return nil, []string{synced.source, synced.copy, notYetSynced.source, notYetSynced.copy, deletedAtSource.copy}
			},
			other: 4, drReady: "nightly-1",
		},
		{
			name: "snapshots of an earlier release, without the install tag, are listed as an unknown install's, never as orphans",
			setup: func(w *world) ([]string, []string) {
				w.cluster(clusterAUID, locationConfig)
				old := w.take("old", w.vols[0], outcome{install: "-", vault: "missing"})
				return nil, []string{old.source, old.copy}
			},
			unknown: 2,
		},
		{
			name: "a snapshot of a backup still waiting for its copies is never an orphan",
			setup: func(w *world) ([]string, []string) {
				w.cluster(clusterAUID, locationConfig)
				s := w.take("running", w.vols[0], outcome{})
				w.backup("running", "", w.clock.Now(), velerov1.BackupPhaseWaitingForPluginOperations)
				return nil, []string{s.source, s.copy, s.vault}
			},
		},
		{
			name: "a vault copy kept by vaultRetainOnDelete is kept, not an orphan",
			setup: func(w *world) ([]string, []string) {
				w.cluster(clusterAUID, locationConfig)
				s := w.take("deleted", w.vols[0], outcome{retained: true})
				return []string{s.source, s.copy}, []string{s.vault}
			},
			kept: 1,
		},
		{
			name: "with a storage location unavailable, no snapshot of a missing backup is called an orphan",
			setup: func(w *world) ([]string, []string) {
				w.cluster(clusterAUID, locationConfig)
				w.objects = append(w.objects, &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNS, Name: "offsite"},
					Status: velerov1.BackupStorageLocationStatus{Phase: velerov1.BackupStorageLocationPhaseUnavailable}})
				s := w.take("deleted", w.vols[0], outcome{})
				return nil, []string{s.source, s.copy, s.vault}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			orphans, never := tc.setup(w)
			w.clock.Step(pastGrace)
			rep := w.audit(false)
			got := orphanIDs(rep)
			out := text(t, rep)
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
			if tc.drReady != "" && !slices.ContainsFunc(rep.Backups, func(b BackupLine) bool { return b.Name == tc.drReady && b.DRReady }) {
				t.Errorf("backup %s is not shown DR-ready\n%s", tc.drReady, out)
			}
			if len(orphans) > 0 && rep.Exit() != ExitFindings {
				t.Errorf("exit %d with orphans, want %d", rep.Exit(), ExitFindings)
			}
		})
	}
}

// --delete-orphans --confirm: what it deletes and what it refuses.
func TestDeleteOrphans(t *testing.T) {
	w := newWorld(t)
	w.cluster(clusterAUID, locationConfig)
	unlocked := w.take("deleted", w.vols[0], outcome{unlocked: true})
	locked := w.take("deleted-locked", w.vols[1], outcome{})
	retained := w.take("deleted-retained", w.vols[2], outcome{retained: true, unlocked: true})
	theirs := w.take("theirs", w.vols[0], outcome{install: installB, vault: "missing"})
	old := w.take("old", w.vols[1], outcome{install: "-", vault: "missing"})
	live := w.take("live", w.vols[2], outcome{vault: "missing"})
	w.backup("live", "", w.clock.Now(), velerov1.BackupPhaseCompleted, live)
	w.clock.Step(pastGrace)
	before := w.srv.Sim.Stats()
	rep := w.audit(true)
	out := text(t, rep)

	gone := []string{unlocked.source, unlocked.copy, unlocked.vault, locked.source, locked.copy, retained.source, retained.copy}
	left := []string{locked.vault, retained.vault, theirs.source, theirs.copy, old.source, old.copy, live.source, live.copy}
	all := map[string]bool{}
	for _, acc := range []string{sourceAccount, vaultAccount} {
		for _, r := range []string{sourceRegion, copyRegion} {
			for _, s := range w.srv.Sim.SnapshotsIn(acc, r) {
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
	if !strings.Contains(out, "refused "+locked.vault) || !strings.Contains(out, "locked (governance)") {
		t.Errorf("the locked vault copy's refusal is not printed\n%s", out)
	}
	after := w.srv.Sim.Stats()
	dry := after.Total("DeleteSnapshot", "DryRunOperation") - before.Total("DeleteSnapshot", "DryRunOperation")
	real := after.Total("DeleteSnapshot", "ok") - before.Total("DeleteSnapshot", "ok")
	if dry != len(gone) || real != len(gone) {
		t.Errorf("%d dry runs and %d deletions, want %d of each", dry, real, len(gone))
	}
	if rep.Exit() != ExitFindings {
		t.Errorf("exit %d with a refused deletion, want %d", rep.Exit(), ExitFindings)
	}
}

// Without --delete-orphans, every request of the audit is a Describe.
func TestAuditOnlyDescribes(t *testing.T) {
	w := newWorld(t)
	w.cluster(clusterAUID, locationConfig)
	w.take("deleted", w.vols[0], outcome{})
	w.clock.Step(pastGrace)
	before := w.srv.Sim.Stats()
	w.audit(false)
	after := w.srv.Sim.Stats()
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
