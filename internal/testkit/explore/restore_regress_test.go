package explore

import (
	"math"
	"testing"
	"time"
)

// The restore actor's cases, on steps named in full: each keeps every promise. The first is the
// finding of the promise that a transient error never makes an open restore operation's
// progress go back; the second the window in which a restore must send the same ClientToken
// again; the third the finding of a restore giving up on throttling after a lost answer, with an
// error that did not name the volume it made.
func TestRestoreScenariosKeepEveryPromise(t *testing.T) {
	throttled := faults{{action: "DescribeVolumeStatus", effect: faultThrottle, every: 1}}
	tests := []struct {
		name  string
		setup setup
		steps func(t *testing.T, w *world)
	}{
		{
			name:  "a restore waiting for initialization that EC2 throttles for a whole poll shows no figure, then EC2's again, never 0 of 100",
			setup: onePV(setup{timeout: dayTimeout, seed: 51}),
			steps: func(t *testing.T, w *world) {
				w.runAll()
				w.pollUntilEnded()
				w.restore(0, sourceRegion)
				shown := w.followRestore(w.restores[0], []restorePoll{{gap: time.Minute}, {gap: syncPeriod, faults: throttled}, {gap: syncPeriod}})
				if len(shown) != 3 || shown[0].NCompleted == 0 || shown[1].NTotal != 0 || shown[2].NCompleted < shown[0].NCompleted {
					t.Errorf("polls showed %+v; want a figure, then none while throttled, then EC2's again", shown)
				}
			},
		},
		{
			name:  "a restore whose CreateVolume answers are lost while EC2 does not list the volume yet sends the same ClientToken and makes one volume",
			setup: onePV(setup{listingLag: 40 * time.Second, timeout: dayTimeout, seed: 52}),
			steps: func(t *testing.T, w *world) {
				w.runAll()
				w.pollUntilEnded()
				w.restoreScripted(0, sourceRegion, restoreScript{lostEvery: 1})
				if c := w.restores[0]; c.volumeID == "" {
					t.Errorf("the restore returned %s, not the volume it made", c.err)
				}
			},
		},
		{
			name:  "a restore whose first CreateVolume answer is lost, then every request throttled, returns the volume it made, found by its token",
			setup: onePV(setup{listingLag: 40 * time.Second, timeout: dayTimeout, seed: 53}),
			steps: func(t *testing.T, w *world) {
				w.runAll()
				w.pollUntilEnded()
				w.faults = faults{
					{action: "CreateVolume", effect: faultLoseAnswer, every: math.MaxInt},
					{action: "CreateVolume", effect: faultThrottle, every: 1},
				}
				w.restore(0, sourceRegion)
				w.faults = nil
				if c := w.restores[0]; c.volumeID == "" {
					t.Errorf("the restore returned %s, not the volume it made", c.err)
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
			settleAndJudge(t, w)
		})
	}
}
