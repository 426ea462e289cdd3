// Package bench measures a whole backup with cross-region copies for three strategies
// against the same simulated EC2: this plugin driven through Velero's plugin client, a
// blocking baseline (snapshot, wait, copy, wait, one volume after another) and a naive
// asynchronous baseline (one DescribeSnapshots per operation per poll, one copy per Progress
// call of its own operation).
package bench

import (
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Scenario is one benchmark setting, shared by every strategy.
type Scenario struct {
	// Volumes is the number of PVs backed up.
	Volumes int `json:"volumes"`
	// Snapshots and Copies are how long snapshots and copies stay pending.
	Snapshots ec2sim.DurationRange `json:"snapshotDuration"`
	Copies    ec2sim.DurationRange `json:"copyDuration"`
	// SyncPeriod is Velero's --item-operation-sync-frequency (and the baselines' poll interval).
	SyncPeriod ec2sim.Duration `json:"syncPeriod"`
	// ThrottleScale multiplies AWS's request rates (1: AWS's documented rates).
	ThrottleScale float64 `json:"throttleScale"`
	// SourceRegion holds the volumes; CopyRegion receives the copies.
	SourceRegion string `json:"sourceRegion"`
	CopyRegion   string `json:"copyRegion"`
}

// Standard is the benchmark's standard scenario: 200 volumes, snapshots of 5–10 s, copies of
// 8–12 s, a 1 s sync period and throttling at AWS's documented rates.
func Standard() Scenario {
	return Scenario{
		Volumes:       200,
		Snapshots:     ec2sim.Range(5*time.Second, 10*time.Second),
		Copies:        ec2sim.Range(8*time.Second, 12*time.Second),
		SyncPeriod:    ec2sim.Duration{Duration: time.Second},
		ThrottleScale: 1,
		SourceRegion:  "us-east-1",
		CopyRegion:    "us-west-2",
	}
}

// Storm is the throttling storm: 300 volumes with copies, EC2's token buckets at 10% of AWS's
// sizes and rates, second-long lifecycles (the suites' rig.FastConfig) and Velero's default
// 10 s sync period.
func Storm() Scenario {
	fast := rig.FastConfig(0)
	sc := Standard()
	sc.Volumes, sc.Snapshots, sc.Copies = 300, fast.SnapshotDuration, fast.CopyDuration
	sc.SyncPeriod.Duration, sc.ThrottleScale = 10*time.Second, 0.1
	return sc
}

// newResult is an empty result of strategy on the scenario, measured on measured volumes.
func (s Scenario) newResult(strategy string, measured int) Result {
	return Result{Strategy: strategy, Volumes: s.Volumes, Measured: measured, ThrottleScale: s.ThrottleScale}
}

// simConfig is the simulator configuration of the scenario.
func (s Scenario) simConfig() ec2sim.Config {
	return ec2sim.Config{SnapshotDuration: s.Snapshots, CopyDuration: s.Copies, ThrottleScale: s.ThrottleScale,
		Unthrottled: s.ThrottleScale <= 0, CopyLimit: copySlots, Seed: 42}
}

// LowerBound is the shortest any strategy can take: the time to issue every CreateSnapshot at
// EC2's CreateSnapshot rate (a burst of 100, then 5 per second), then the copy phase, as
// copies start after the item phase (Velero calls Progress only once the backup waits for
// plugin operations): the longest snapshot plus ceil(N/20) copy waves (the 20-copy quota) of
// the mean copy duration or, when longer, the time to issue every CopySnapshot at its rate (50,
// then 5 per second) plus the mean copy duration.
func (s Scenario) LowerBound() time.Duration {
	create := newBucket(createSnapshotBurst, createSnapshotRate, s.ThrottleScale)
	return create.issueTime(s.Volumes) + copyPhase(s.Volumes, s.Snapshots, s.Copies, s.ThrottleScale)
}
