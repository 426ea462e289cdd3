package rig

import (
	"fmt"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// Throttled is the error code of throttled EC2 requests.
const Throttled = "RequestLimitExceeded"

// FastConfig is the simulator of the suites: AWS's request rates, lifecycles of about a second
// (snapshots 0.3–1.2 s, copies 0.5–1.5 s, new volumes 0.3 s). A test that needs other times
// changes the fields it needs.
func FastConfig(seed int64) ec2sim.Config {
	return ec2sim.Config{
		SnapshotDuration:     ec2sim.Range(300*time.Millisecond, 1200*time.Millisecond),
		CopyDuration:         ec2sim.Range(500*time.Millisecond, 1500*time.Millisecond),
		VolumeCreateDuration: ec2sim.Fixed(300 * time.Millisecond),
		Seed:                 seed,
	}
}

// StartSimulator starts the EC2 simulator on loopback and points plugin processes started
// afterwards at it (see UseEndpoint).
func StartSimulator(cfg ec2sim.Config) (*ec2sim.Server, error) {
	srv, err := ec2sim.Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the EC2 simulator: %w", err)
	}
	UseEndpoint(srv.URL)
	return srv, nil
}

// CallsByAction sums a simulator's responses per action over regions and outcomes.
func CallsByAction(st ec2sim.Stats) map[string]int {
	return sumCalls(st, func(action, _ string) string { return action })
}

// CallsByOutcome sums a simulator's responses per outcome ("ok" or an error code).
func CallsByOutcome(st ec2sim.Stats) map[string]int {
	return sumCalls(st, func(_, outcome string) string { return outcome })
}

// sumCalls sums a simulator's responses over regions by the key of their action and outcome.
func sumCalls(st ec2sim.Stats, key func(action, outcome string) string) map[string]int {
	out := map[string]int{}
	for _, actions := range st.Calls {
		for action, outcomes := range actions {
			for outcome, n := range outcomes {
				out[key(action, outcome)] += n
			}
		}
	}
	return out
}

// TotalCalls sums every response of the simulator.
func TotalCalls(st ec2sim.Stats) int {
	n := 0
	for _, c := range CallsByAction(st) {
		n += c
	}
	return n
}

// SnapshotsLeft counts the snapshots and copies that still exist, per region.
func SnapshotsLeft(sim *ec2sim.Simulator, regions ...string) map[string]int {
	out := map[string]int{}
	for _, r := range regions {
		out[r] = len(sim.Snapshots(r))
	}
	return out
}
