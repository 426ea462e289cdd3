package explore

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// coreRegressions are the findings of the actors of core_actors.go and of the location's config
// changed, played by TestRegressions with the others.
var coreRegressions = []regression{
	{
		name:  "an operation whose CreateSnapshot failed neither follows nor deletes another cluster's snapshot of the same backup, PV and volume, marked pending without the UID",
		want:  catForeignTouched,
		setup: onePV(setup{copyTo: true, timeout: dayTimeout, seed: 71}),
		steps: func(w *world) {
			w.execute(0)
			// Another cluster backs up the same static PV's EBS volume under the same schedule
			// name; its handoff is lost too, and its CreateSnapshot has not returned.
			w.pendingOtherSnapshot(w.ops[0].pv, w.ops[0].volumeID, false, theirInstall)
			w.faults = faults{{action: "CreateSnapshot", effect: faultRefuse, every: 1}}
			w.create(0)
			w.faults = nil
			w.pollUntilEnded()
		},
		kept: func(t *testing.T, w *world) {
			if op := w.ops[0]; !strings.Contains(op.result, "no native snapshot") {
				t.Errorf("the operation ended %q, not as one whose volume has no snapshot of this backup", op.result)
			}
		},
	},
	{
		name: "Cancel at the item-operation timeout keeps a pending vault copy that vaultRetainOnDelete, turned on since the backup, keeps",
		want: catCancelDeletedRetained,
		setup: onePV(setup{vault: true, vaultRegion: farRegion, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
			slowCopies: true, timeout: time.Hour, seed: 72}),
		steps: func(w *world) {
			w.runAll()
			w.advanceUntilSnapshotAt(0, 100)
			w.reconcile() // the vault copy starts, and outlasts the timeout
			w.changeConfig(retainTurnedOn)
			w.reconcileAtTimeout(syncPeriod)
		},
	},
}

func init() { regressions = append(regressions, coreRegressions...) }

// The races, restores and volumes of core_actors.go on steps named in full: each keeps every
// promise, and each shows what it is there to show.
func TestCoreScenariosKeepEveryPromise(t *testing.T) {
	raceSetup := func(seed int64) setup {
		s := onePV(setup{copyTo: true, vault: true, vaultRegion: farRegion, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
			listingLag: 40 * time.Second, timeout: dayTimeout, seed: seed})
		s.requestTime = mutatingRequestTime
		return s
	}
	race := func(write, yield int) func(t *testing.T, w *world) {
		return func(t *testing.T, w *world) {
			w.runAll()
			w.advanceUntilSnapshotAt(0, 100)
			w.advance(w.setup.listingLag) // listed
			w.restart()
			w.raceDeletion(deleteBySource, write, yield)
		}
	}
	tests := []struct {
		name  string
		setup setup
		steps func(t *testing.T, w *world)
		// copyAfterMark says whether a copy of the source is sent after EC2 took its deletion's mark.
		copyAfterMark bool
	}{
		{
			name:  "a deletion landing before a fill, its mark taken first: the fill, on a view read before the mark, reads its batch again and starts no copy",
			setup: raceSetup(73), steps: race(1, 1),
		},
		{
			name:  "a deletion landing between a fill's read of its batch and its CopySnapshot: the copy, sent after the mark, is waited for and deleted with the backup",
			setup: raceSetup(74), steps: race(2, 1), copyAfterMark: true,
		},
		{
			name:  "a deletion landing whole inside a Progress call: the call goes on on what it read before, and nothing of the backup is left",
			setup: raceSetup(75), steps: race(1, -1),
		},
		{
			name:  "a deletion's wait for a copy asked for before its mark outlasts the Progress call it landed in: the call is cut short at Velero's deadline",
			setup: raceSetup(76), steps: race(2, 2),
		},
		{
			name: "a restore in the copy region while the copy is pending fails saying so, without asking EC2 for a volume",
			setup: onePV(setup{copyTo: true, vault: true, vaultRegion: farRegion, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
				refusedCopy: vaultCopyRefused, timeout: dayTimeout, seed: 77}),
			steps: func(t *testing.T, w *world) {
				w.runAll()
				w.pollUntilEnded() // the vault copy refused: the operation fails, its copy under way
				if len(w.pendingRestorable()) == 0 {
					t.Fatalf("no copy pending once the operation ended (%s)", w.ops[0])
				}
				w.restore(0, copyRegion)
				if c := w.restores[0]; !strings.Contains(c.err, "pending") {
					t.Errorf("the restore returned %q %q, not an error naming the pending copy", c.volumeID, c.err)
				}
			},
		},
		{
			name:  "restores in both regions recreate a gp3 volume's provisioned IOPS and throughput, and an io2 volume's IOPS",
			setup: twoPVs(setup{copyTo: true, timeout: dayTimeout, seed: 78, volumeKinds: volumeKinds[1:]}),
			steps: func(t *testing.T, w *world) {
				w.runAll()
				w.pollUntilEnded()
				for i := range w.ops {
					w.restore(i, sourceRegion)
					w.restore(i, copyRegion)
				}
				for _, c := range w.restores {
					if v, ok := w.volume(c.region, c.volumeID); !ok || v.Type == "gp3" && v.Throughput != 500 || v.Type == "io2" && v.IOPS != 3000 {
						t.Errorf("the restore of %s in %s made %+v (%q)", c.pv, c.region, v, c.err)
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := newWorld(tt.setup)
			if err != nil {
				t.Fatal(err)
			}
			tt.steps(t, w)
			w.checkStep()
			if got := w.copiedAfterMark(); got != tt.copyAfterMark {
				t.Errorf("a copy sent after the deletion's mark: %v, want %v", got, tt.copyAfterMark)
			}
			settleAndJudge(t, w)
		})
	}
}

// copiedAfterMark reports whether EC2 answered a CopySnapshot after it took a source's deletion
// mark (the scenarios have one source).
func (w *world) copiedAfterMark() bool {
	for _, marked := range w.marks.deleting {
		if slices.ContainsFunc(w.requests, func(q request) bool { return q.action == "CopySnapshot" && q.answered && q.completed > marked }) {
			return true
		}
	}
	return false
}
