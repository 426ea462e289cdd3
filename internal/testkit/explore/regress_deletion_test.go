package explore

import (
	"testing"
	"time"
)

// deletionRegressions are the findings of deletions racing a reconcile, played by
// TestRegressions with the others.
var deletionRegressions = []struct {
	name  string
	want  category
	setup setup
	steps func(w *world)
	kept  func(t *testing.T, w *world)
}{
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
}

func init() {
	for _, r := range deletionRegressions {
		regressions = append(regressions, r)
	}
}
