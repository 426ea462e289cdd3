package harness_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

const (
	// syncPeriod is the operations controller's period in these tests.
	syncPeriod = 300 * time.Millisecond
	// batchTimeout bounds one batch of backups.
	batchTimeout = 2 * time.Minute
	// copySlots is EC2's quota of copies in flight per destination region.
	copySlots = 20
	// logLines is how much of the rig's log a failed test shows.
	logLines = 60
)

// plugin is built once for the go test run.
var plugin *rig.Plugin

func TestMain(m *testing.M) { rig.TestMain(m, &plugin) }

// Several schedules firing one after another: each backup completes with its copies, every pass
// of the operations controller reconciles exactly the backups then waiting, and the account
// never has more than 20 copies in flight.
func TestBackupsWaitTogether(t *testing.T) {
	tests := []struct {
		name         string
		backups, pvs int
		every        time.Duration
	}{
		{"three schedules a second apart", 3, 10, time.Second},
		{"two at the same moment", 2, 8, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.backups*tc.pvs)
			scheduled := rig.Schedules("nightly", tc.backups, tc.every, r.PVs, rig.Location(rig.SourceRegion, rig.CopyRegion))
			ctx, cancel := context.WithTimeout(t.Context(), batchTimeout)
			defer cancel()
			found := &rig.Result{}
			batch, err := r.Backups(ctx, found, scheduled)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range batch.Backups {
				rig.CheckBackup(found, b, tc.pvs, nil)
				r.CheckSnapshots(found, b, rig.CopyRegion)
			}
			if found.Duplicates > 0 || len(found.Problems) > 0 {
				t.Fatalf("%d duplicates; %s", found.Duplicates, strings.Join(found.Problems, "\n"))
			}
			requirePassesCoverWaiting(t, batch)
			t.Logf("%d passes, at most %d backups in one", len(batch.Passes), mostInOnePass(batch))
			if peak := r.Sim.Stats().PeakCopiesInFlight[rig.CopyRegion]; peak > copySlots {
				t.Errorf("%d copies in flight at once, EC2 allows %d", peak, copySlots)
			}
		})
	}
}

// newRig starts a rig on the suites' fast simulator with volumes in the source region.
func newRig(t *testing.T, volumes int) *rig.Rig {
	t.Helper()
	env := &rig.Env{Plugin: plugin, LogDir: t.TempDir(), SyncPeriod: syncPeriod}
	r, err := env.NewRig(t.Name(), rig.FastConfig(3), volumes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", r.LogPath, process.LogTail(r.LogPath, logLines))
		}
	})
	return r
}

// requirePassesCoverWaiting fails unless every pass reconciled exactly the backups waiting for
// plugin operations when it began, and each backup's reconciles are the passes that name it.
func requirePassesCoverWaiting(t *testing.T, batch *harness.Batch) {
	t.Helper()
	for i, p := range batch.Passes {
		for _, b := range batch.Backups {
			waitingFrom := b.Backup.Status.StartTimestamp.Add(b.ItemPhase)
			waiting := !p.Start.Before(waitingFrom) && p.Start.Before(b.Backup.Status.CompletionTimestamp.Time)
			if got := slices.Contains(p.Names, b.Backup.Name); got != waiting {
				t.Errorf("pass %d at %s reconciled %v; %s waiting from %s to %s", i, p.Start.Sub(batch.Start), p.Names, b.Backup.Name,
					waitingFrom.Sub(batch.Start), b.Backup.Status.CompletionTimestamp.Sub(batch.Start))
			}
		}
	}
	for _, b := range batch.Backups {
		n := 0
		for _, p := range batch.Passes {
			if slices.Contains(p.Names, b.Backup.Name) {
				n++
			}
		}
		if n != b.Reconciles || n == 0 || len(b.ReconcileTimes) != n {
			t.Errorf("%s: %d reconciles (%d timed) in %d passes", b.Backup.Name, b.Reconciles, len(b.ReconcileTimes), n)
		}
	}
}

// mostInOnePass is the most backups one pass reconciled.
func mostInOnePass(batch *harness.Batch) int {
	most := 0
	for _, p := range batch.Passes {
		most = max(most, len(p.Names))
	}
	return most
}
