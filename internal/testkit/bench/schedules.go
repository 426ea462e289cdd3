package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Schedules is the many-backups scenario: schedules firing one after another, each backup
// waiting for its copies while the next one runs, all of them sharing the account's
// CreateSnapshot rate (one item phase at a time), its CopySnapshot rate and its 20 copy slots
// into the copy region. Its durations are real ones; the run multiplies every one of them
// (snapshot and copy durations, the time between schedules, the sync period) by TimeScale, so
// that the sync period stays in proportion. EC2's request rates are not scaled: against the
// shorter durations they are 1/TimeScale times tighter than in real time.
type Schedules struct {
	// Backups is the number of schedules; Volumes the PVs each backs up (PVs of its own).
	Backups int `json:"backups"`
	Volumes int `json:"volumesPerBackup"`
	// Every is the time between one schedule's backup and the next one's.
	Every ec2sim.Duration `json:"every"`
	// Snapshots and Copies are how long snapshots and copies stay pending.
	Snapshots ec2sim.DurationRange `json:"snapshotDuration"`
	Copies    ec2sim.DurationRange `json:"copyDuration"`
	// SyncPeriod is Velero's --item-operation-sync-frequency.
	SyncPeriod ec2sim.Duration `json:"syncPeriod"`
	// TimeScale multiplies every duration above in the run.
	TimeScale float64 `json:"timeScale"`
	// ThrottleScale multiplies AWS's request rates (1: AWS's documented rates).
	ThrottleScale float64 `json:"throttleScale"`
}

// StandardSchedules is 5 schedules of 100 volumes each, 30 s apart, with copies, Velero's
// default 10 s sync period, snapshots of 50–100 s and copies of 80–120 s, all run 10 times
// faster (TimeScale 0.1: the standard scenario's durations and sync period), at AWS's rates.
func StandardSchedules() Schedules {
	return Schedules{
		Backups:       5,
		Volumes:       100,
		Every:         ec2sim.Duration{Duration: 30 * time.Second},
		Snapshots:     ec2sim.Range(50*time.Second, 100*time.Second),
		Copies:        ec2sim.Range(80*time.Second, 120*time.Second),
		SyncPeriod:    ec2sim.Duration{Duration: 10 * time.Second},
		TimeScale:     0.1,
		ThrottleScale: 1,
	}
}

// scaled is the scenario as it runs: every duration multiplied by TimeScale.
func (s Schedules) scaled() Schedules {
	f := func(d ec2sim.Duration) ec2sim.Duration {
		return ec2sim.Duration{Duration: time.Duration(float64(d.Duration) * s.TimeScale)}
	}
	r := func(d ec2sim.DurationRange) ec2sim.DurationRange {
		return ec2sim.DurationRange{Min: f(d.Min), Max: f(d.Max)}
	}
	out := s
	out.Every, out.SyncPeriod, out.Snapshots, out.Copies, out.TimeScale = f(s.Every), f(s.SyncPeriod), r(s.Snapshots), r(s.Copies), 1
	return out
}

// LowerBound is the shortest any strategy can take, in the run's (scaled) time. Velero runs
// one item phase at a time, so backup k's CreateSnapshot requests start when it is created or
// when backup k-1's are all issued, whichever is later, all drawing from one CreateSnapshot
// bucket (100, then 5 per second): that gives the earliest end E_k of each item phase. Backup
// k's copies start after E_k (Velero calls Progress only once a backup waits), and from then
// on the copies of backups k and later share the account's 20 slots and its CopySnapshot rate.
// So the bound is the largest, over k, of E_k plus the copy phase (Scenario.LowerBound's) of
// the volumes of backups k and later. With one backup it is Scenario.LowerBound.
func (s Schedules) LowerBound() time.Duration {
	run := s.scaled()
	starts, sizes := make([]time.Duration, s.Backups), make([]int, s.Backups)
	for k := range starts {
		starts[k], sizes[k] = time.Duration(k)*run.Every.Duration, s.Volumes
	}
	ends := newBucket(createSnapshotBurst, createSnapshotRate, s.ThrottleScale).serialIssue(starts, sizes)
	var bound time.Duration
	for k, end := range ends {
		bound = max(bound, end+copyPhase((s.Backups-k)*s.Volumes, run.Snapshots, run.Copies, s.ThrottleScale))
	}
	return bound
}

// simConfig is the simulator configuration of the run.
func (s Schedules) simConfig() ec2sim.Config {
	run := s.scaled()
	return ec2sim.Config{SnapshotDuration: run.Snapshots, CopyDuration: run.Copies, ThrottleScale: s.ThrottleScale,
		Unthrottled: s.ThrottleScale <= 0, CopyLimit: copySlots, Seed: 42}
}

// ScheduleResult is a run of the schedules scenario: the figures of all its backups together,
// and each backup's.
type ScheduleResult struct {
	Result
	// BackupSeconds is each backup's time from its start (when it was created and the one
	// before had left InProgress) to its end, in the order the schedules fired.
	BackupSeconds []Seconds `json:"backupSeconds"`
	// Passes counts the operations controller's passes; MostInOnePass is the most backups one
	// pass reconciled; LongestPass the longest pass.
	Passes        int     `json:"passes"`
	MostInOnePass int     `json:"mostBackupsInOnePass"`
	LongestPass   Seconds `json:"longestPassSeconds"`
	// Duplicates counts snapshots beyond one per volume and copies beyond one per source;
	// Problems are operations seen complete before their copy was, and item errors.
	Duplicates int      `json:"duplicates"`
	Problems   []string `json:"problems"`
}

// RunSchedules runs the schedules scenario with this plugin, through Velero's plugin client.
func (r Runner) RunSchedules(ctx context.Context, s Schedules) (ScheduleResult, error) {
	run := s.scaled()
	rg, err := r.newRig(fmt.Sprintf("bench-schedules-%dx%d", s.Backups, s.Volumes), s.simConfig(), run.SyncPeriod.Duration)
	if err != nil {
		return ScheduleResult{}, err
	}
	defer rg.Close()
	pvs := fixture.Fleet{Region: rig.SourceRegion, Count: s.Backups * s.Volumes}.Seed(rg.Sim)
	scheduled := rig.Schedules("schedule", s.Backups, run.Every.Duration, pvs, rig.Location(rig.SourceRegion, rig.CopyRegion))
	found := &rig.Result{}
	var batch *harness.Batch
	peak, err := r.sampled(func() (err error) {
		batch, err = rg.Backups(ctx, found, scheduled)
		return err
	})
	if err != nil {
		return ScheduleResult{}, err
	}
	res := ScheduleResult{Result: Result{Strategy: "plugin", Volumes: len(pvs), Measured: len(pvs), ThrottleScale: s.ThrottleScale,
		PeakMemoryBytes: peak, FailedOps: found.Failed}, Passes: len(batch.Passes), Duplicates: found.Duplicates, Problems: found.Problems}
	res.fill(s.LowerBound(), rig.CopyRegion, rg.Sim.Stats(), batch.Makespan)
	var times []harness.ReconcileTime
	for _, b := range batch.Backups {
		res.Reconciles += b.Reconciles
		res.FailedOps += len(b.ItemErrors)
		res.BackupSeconds = append(res.BackupSeconds, seconds(b.Total))
		times = append(times, b.ReconcileTimes...)
	}
	res.fillReconciles(times)
	for _, p := range batch.Passes {
		res.MostInOnePass = max(res.MostInOnePass, len(p.Names))
		res.LongestPass = max(res.LongestPass, seconds(p.Took))
	}
	return res, nil
}
