package explore

import "time"

// deletionRegressions are the findings of deletions racing a reconcile, played by
// TestRegressions with the others.
var deletionRegressions = []regression{
	{
		name: "a copy started by a reconcile while the deletion's mark is on its way is deleted with the backup",
		want: catCopyLeaked,
		setup: func() setup {
			s := onePV(setup{copyTo: true, listingLag: 40 * time.Second, timeout: dayTimeout, seed: 61})
			s.requestTime = mutatingRequestTime
			return s
		}(),
		steps: func(w *world) {
			w.runAll()
			w.advanceUntilSnapshotAt(0, 100)
			w.advance(1400 * time.Millisecond)
			w.restart()
			// The deletion reads the source, its copies and the backup's failed snapshots, and
			// asks EC2 to mark the source; before EC2 takes the mark, a reconcile asks for the copy.
			w.deleteBackup(deleteBySource, 3, 5*time.Second)
		},
	},
	{
		name:  "a backup deleted while an operation waits for its failed CreateSnapshot's snapshot, made without the UID by a restarted plugin process, deletes that snapshot too",
		want:  catUIDLessLeaked,
		setup: twoPVs(setup{copyTo: true, timeout: time.Hour, seed: 62}),
		steps: func(w *world) {
			w.execute(0)
			w.execute(1)
			w.restartItemProcess()
			w.failCreate(1)
			w.create(0)
			w.reconcile()
			w.restart()
			w.deleteBackup(deleteBySource, -1, 0)
		},
	},
	{
		name: "an earlier release's operation of a static PV, tagged without the backup's UID, does not follow the other PV's snapshot once its own is deleted with the backup",
		want: catOldOperationOtherPV,
		setup: func() setup {
			s := upgradeSetup(setup{timeout: 4 * time.Hour, seed: 63}, false, false)
			s.requestTime = mutatingRequestTime
			return s
		}(),
		steps: func(w *world) {
			w.execute(0)
			w.execute(1)
			w.create(0)
			w.advance(20 * time.Second)
			w.create(1)
			w.reconcile()
			w.advance(time.Hour) // past the operations' create window
			w.restart()
			// The deletion deletes the first PV's snapshot; a reconcile comes after its third request.
			w.deleteBackup(deleteBySource, 3, 0)
		},
	},
}

func init() { regressions = append(regressions, deletionRegressions...) }
