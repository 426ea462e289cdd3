package bench

import (
	"context"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

func TestLowerBound(t *testing.T) {
	tests := []struct {
		name string
		sc   func(*Scenario)
		want time.Duration
	}{
		// 100 creates over the burst at 5/s, 10s longest snapshot, 10 waves of 10s copies
		{"standard", func(*Scenario) {}, 130 * time.Second},
		{"within the burst", func(s *Scenario) { s.Volumes = 100 }, 10*time.Second + 5*10*time.Second},
		{"one wave", func(s *Scenario) { s.Volumes = 7 }, 20 * time.Second},
		{"no throttling", func(s *Scenario) { s.ThrottleScale = 0 }, 110 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := Standard()
			tc.sc(&sc)
			if got := sc.LowerBound(); got != tc.want {
				t.Errorf("lower bound %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBaselinesComplete(t *testing.T) {
	sc := Standard()
	sc.Volumes = 25
	sc.Snapshots = ec2sim.Range(200*time.Millisecond, 500*time.Millisecond)
	sc.Copies = ec2sim.Range(300*time.Millisecond, 600*time.Millisecond)
	sc.SyncPeriod.Duration = 200 * time.Millisecond
	r := Runner{LogDir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	naive, err := r.RunNaive(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	if naive.FailedOps != 0 || naive.Calls["CopySnapshot"] < sc.Volumes || naive.Reconciles == 0 {
		t.Errorf("naive: %+v", naive)
	}
	blocking, err := RunBlocking(ctx, sc, 2)
	if err != nil {
		t.Fatal(err)
	}
	if blocking.FailedOps != 0 || blocking.Measured != 2 || blocking.PeakCopies != 1 {
		t.Errorf("blocking: %+v", blocking)
	}
	// serial: scaling to N multiplies the measured time by N/2
	if blocking.Makespan.Duration() < time.Duration(sc.Volumes/2)*(sc.Snapshots.Min.Duration+sc.Copies.Min.Duration) {
		t.Errorf("blocking makespan %.1fs too short for %d serial volumes", blocking.Makespan, sc.Volumes)
	}
}
