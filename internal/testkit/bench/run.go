package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Runner runs strategies on scenarios.
type Runner struct {
	// Plugin is the built plugin binary.
	Plugin *rig.Plugin
	// LogDir receives Velero core's and the plugin's log lines, a file per run.
	LogDir string
}

// memoryInterval is how often the plugin processes' memory is sampled.
const memoryInterval = 50 * time.Millisecond

// RunPlugin backs up the scenario's volumes with this plugin, through Velero's plugin client.
func (r Runner) RunPlugin(ctx context.Context, sc Scenario) (Result, error) {
	return r.runHarness(ctx, "plugin", sc, false)
}

// RunNaive backs up the scenario's volumes with the naive asynchronous baseline, through the
// same Velero core loop.
func (r Runner) RunNaive(ctx context.Context, sc Scenario) (Result, error) {
	return r.runHarness(ctx, "naive-async", sc, true)
}

// runHarness starts a rig, seeds the volumes, and runs a backup through the rig's Velero core,
// with this plugin (its memory sampled) or the naive baseline in its place.
func (r Runner) runHarness(ctx context.Context, strategy string, sc Scenario, naive bool) (Result, error) {
	env := &rig.Env{Plugin: r.Plugin, LogDir: r.LogDir, SyncPeriod: sc.SyncPeriod.Duration}
	rg, err := env.NewRig(fmt.Sprintf("bench-%s-%d", strategy, sc.Volumes), sc.simConfig(), 0)
	if err != nil {
		return Result{}, err
	}
	defer rg.Close()
	pvs := fixture.Fleet{Region: sc.SourceRegion, Count: sc.Volumes}.Seed(rg.Sim)
	var memory *process.MemorySampler
	if naive {
		rg.Core.Plugins = newNaive(rg.Server.URL, sc).manager
	} else {
		memory = r.Plugin.SampleMemory(memoryInterval)
	}
	loc := rig.Location(sc.SourceRegion, sc.CopyRegion)
	backup, err := rg.Core.Backup(ctx, harness.BackupRequest{Name: fmt.Sprintf("bench-%s-%d", strategy, sc.Volumes), Location: loc, PVs: pvs})
	if memory != nil {
		memory.Stop()
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", strategy, err)
	}
	res := Result{Strategy: strategy, Volumes: sc.Volumes, Measured: sc.Volumes, Reconciles: backup.Reconciles}
	res.fill(sc, rg.Sim.Stats(), backup.Total)
	res.FailedOps = backup.Backup.Status.BackupItemOperationsFailed + len(backup.ItemErrors)
	if memory != nil {
		res.PeakMemoryBytes = memory.Peak()
	}
	return res, nil
}

// Options select what Run measures.
type Options struct {
	// Scenario is the standard scenario all three strategies run.
	Scenario Scenario
	// BlockingVolumes is how many volumes the blocking baseline really backs up.
	BlockingVolumes int
	// CompareVolumes is the volume count of the plugin-versus-blocking comparison.
	CompareVolumes int
	// GrowthScenario (its volume count aside) and Growth are the plugin's EC2 calls runs.
	GrowthScenario Scenario
	Growth         []int
	// Progress receives a line as each run starts and ends.
	Progress io.Writer
}

// Run measures everything the options ask for and evaluates the plugin's targets.
func (r Runner) Run(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{Scenario: o.Scenario, GrowthScenario: o.GrowthScenario}
	step := func(what string, run func() (Result, error)) (Result, error) {
		fmt.Fprintf(o.Progress, "running %s…\n", what)
		res, err := run()
		if err == nil {
			fmt.Fprintf(o.Progress, "  %s: makespan %.1fs at N=%d, %d EC2 calls, %d failed operations\n", what, res.Makespan, res.Volumes, res.TotalCalls, res.FailedOps)
		}
		return res, err
	}
	sc := o.Scenario
	plugin, err := step(fmt.Sprintf("plugin, N=%d", sc.Volumes), func() (Result, error) { return r.RunPlugin(ctx, sc) })
	if err != nil {
		return nil, err
	}
	naive, err := step(fmt.Sprintf("naive async, N=%d", sc.Volumes), func() (Result, error) { return r.RunNaive(ctx, sc) })
	if err != nil {
		return nil, err
	}
	blocking, err := step(fmt.Sprintf("blocking on %d volumes, scaled to N=%d", o.BlockingVolumes, sc.Volumes), func() (Result, error) { return RunBlocking(ctx, sc, o.BlockingVolumes) })
	if err != nil {
		return nil, err
	}
	rep.Strategies = []Result{plugin, naive, blocking}
	if o.CompareVolumes > 0 {
		cmp := sc
		cmp.Volumes = o.CompareVolumes
		p, err := step(fmt.Sprintf("plugin, N=%d", cmp.Volumes), func() (Result, error) { return r.RunPlugin(ctx, cmp) })
		if err != nil {
			return nil, err
		}
		rep.Comparison = []Result{p, blocking.scaledTo(cmp.Volumes, cmp)}
	}
	for _, n := range o.Growth {
		g := o.GrowthScenario
		g.Volumes = n
		res, err := step(fmt.Sprintf("plugin growth, N=%d", n), func() (Result, error) { return r.RunPlugin(ctx, g) })
		if err != nil {
			return nil, err
		}
		rep.Growth = append(rep.Growth, res)
	}
	rep.evaluate()
	return rep, nil
}
