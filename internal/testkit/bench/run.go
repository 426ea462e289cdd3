package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
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

// newRig starts a rig (simulator with cfg, Velero core at syncPeriod) for a run named name.
func (r Runner) newRig(name string, cfg ec2sim.Config, syncPeriod time.Duration) (*rig.Rig, error) {
	env := &rig.Env{Plugin: r.Plugin, LogDir: r.LogDir, SyncPeriod: syncPeriod}
	return env.NewRig(name, cfg, 0)
}

// sampled runs f while sampling the plugin processes' memory, and returns their peak.
func (r Runner) sampled(f func() error) (int64, error) {
	memory := r.Plugin.SampleMemory(memoryInterval)
	err := f()
	return memory.Stop(), err
}

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
	name := fmt.Sprintf("bench-%s-%d", strategy, sc.Volumes)
	rg, err := r.newRig(name, sc.simConfig(), sc.SyncPeriod.Duration)
	if err != nil {
		return Result{}, err
	}
	defer rg.Close()
	pvs := fixture.Fleet{Region: sc.SourceRegion, Count: sc.Volumes}.Seed(rg.Sim)
	itemPhase := itemPhaseCalls(rg)
	req := harness.BackupRequest{Name: name, Location: rig.Location(sc.SourceRegion, sc.CopyRegion), PVs: pvs}
	var backup *harness.BackupResult
	backUp := func() (err error) {
		backup, err = rg.Core.Backup(ctx, req)
		return err
	}
	var peak int64
	if naive {
		rg.Core.Plugins = newNaive(rg.Server.URL, sc).manager
		err = backUp()
	} else {
		peak, err = r.sampled(backUp)
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", strategy, err)
	}
	res := sc.newResult(strategy, sc.Volumes)
	res.Reconciles, res.PeakMemoryBytes = backup.Reconciles, peak
	res.fill(sc.LowerBound(), sc.CopyRegion, rg.Sim.Stats(), backup.Total)
	res.ItemPhaseCalls = itemPhase()
	res.fillReconciles(backup.ReconcileTimes)
	res.FailedOps = backup.Backup.Status.BackupItemOperationsFailed + len(backup.ItemErrors)
	return res, nil
}

// itemPhaseCalls has the rig's core take the simulator's call counts before the first
// reconcile of its backup, and returns a function giving them per action once the backup is
// done (nil when no reconcile ran).
func itemPhaseCalls(rg *rig.Rig) func() map[string]int {
	var mu sync.Mutex
	var calls map[string]int
	rg.Core.Hooks.BeforeReconcile = func(n int) {
		if n == 1 {
			st := rg.Sim.Stats()
			mu.Lock()
			defer mu.Unlock()
			calls = rig.CallsByAction(st)
		}
	}
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return calls
	}
}

// The sections of the benchmark, as -only and -skip name them.
const (
	// SectionStandard is the standard scenario for the three strategies, and the comparison.
	SectionStandard = "standard"
	// SectionGrowth is the plugin's EC2 calls, memory and Progress time as N grows.
	SectionGrowth = "growth"
	// SectionSchedules is several schedules' backups waiting at once.
	SectionSchedules = "schedules"
	// SectionRestore is a large restore in the copy region, without and with a provisioned
	// initialization rate.
	SectionRestore = "restore"
	// SectionStorm is one backup at 10% of AWS's request rates.
	SectionStorm = "storm"
	// SectionAudit is the audit command on a schedule's 1,000 backups with copies and vault
	// copies.
	SectionAudit = "audit"
)

// Sections are every section, in the order Run runs them.
var Sections = []string{SectionStandard, SectionGrowth, SectionSchedules, SectionRestore, SectionStorm, SectionAudit}

// pluginSections are the sections that run the plugin binary.
var pluginSections = []string{SectionStandard, SectionGrowth, SectionSchedules, SectionRestore, SectionStorm}

// NeedsPlugin reports whether a section not skipped runs the plugin binary.
func NeedsPlugin(skip map[string]bool) bool {
	return slices.ContainsFunc(pluginSections, func(s string) bool { return !skip[s] })
}

// Options select what Run measures.
type Options struct {
	// Skip names the sections not to run.
	Skip map[string]bool
	// Scenario is the standard scenario all three strategies run.
	Scenario Scenario
	// BlockingVolumes is how many volumes the blocking baseline really backs up.
	BlockingVolumes int
	// CompareVolumes is the volume count of the plugin-versus-blocking comparison.
	CompareVolumes int
	// GrowthScenario (its volume count aside) and Growth, the volume counts, are the plugin's
	// growth runs.
	GrowthScenario Scenario
	Growth         []int
	// Schedules, Restore, Storm and Audit are the scenarios of their sections.
	Schedules Schedules
	Restore   Restore
	Storm     Scenario
	Audit     Audit
	// Progress receives a line as each run starts and ends.
	Progress io.Writer
}

// Run measures every section the options do not skip and evaluates the plugin's targets.
func (r Runner) Run(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{}
	for _, section := range Sections {
		if o.Skip[section] {
			continue
		}
		if err := r.runSection(ctx, section, o, rep); err != nil {
			return nil, err
		}
	}
	rep.evaluate()
	return rep, nil
}

// runSection runs one section into rep.
func (r Runner) runSection(ctx context.Context, section string, o Options, rep *Report) error {
	switch section {
	case SectionStandard:
		return r.runStandard(ctx, o, rep)
	case SectionGrowth:
		return r.runGrowth(ctx, o, rep)
	case SectionSchedules:
		res, err := step(o.Progress, fmt.Sprintf("schedules, %d backups of %d volumes", o.Schedules.Backups, o.Schedules.Volumes),
			func() (ScheduleResult, error) { return r.RunSchedules(ctx, o.Schedules) })
		rep.Schedules = &SchedulesRun{Scenario: o.Schedules, Result: res}
		return err
	case SectionRestore:
		res, err := step(o.Progress, fmt.Sprintf("restore of %d volumes", o.Restore.Volumes),
			func() (RestoreRuns, error) { return r.RunRestore(ctx, o.Restore) })
		rep.Restore = &RestoreRun{Scenario: o.Restore, Runs: res}
		return err
	case SectionStorm:
		res, err := step(o.Progress, fmt.Sprintf("storm, N=%d at %g× AWS's rates", o.Storm.Volumes, o.Storm.ThrottleScale),
			func() (Result, error) { return r.RunPlugin(ctx, o.Storm) })
		rep.Storm = &StormRun{Scenario: o.Storm, Result: res}
		return err
	case SectionAudit:
		res, err := step(o.Progress, fmt.Sprintf("audit of %d backups of %d volumes at %v backups", o.Audit.Backups, o.Audit.VolumesPerBackup, o.Audit.sizes()),
			func() (AuditResults, error) { return RunAudit(ctx, o.Audit) })
		rep.Audit = &AuditRun{Scenario: o.Audit, Results: res}
		return err
	}
	return fmt.Errorf("no section %q (sections: %v)", section, Sections)
}

// runStandard runs the standard scenario for the three strategies, and the comparison.
func (r Runner) runStandard(ctx context.Context, o Options, rep *Report) error {
	sc := o.Scenario
	rep.Scenario = &sc
	plugin, err := step(o.Progress, fmt.Sprintf("plugin, N=%d", sc.Volumes), func() (Result, error) { return r.RunPlugin(ctx, sc) })
	if err != nil {
		return err
	}
	naive, err := step(o.Progress, fmt.Sprintf("naive async, N=%d", sc.Volumes), func() (Result, error) { return r.RunNaive(ctx, sc) })
	if err != nil {
		return err
	}
	blocking, err := step(o.Progress, fmt.Sprintf("blocking on %d volumes, scaled to N=%d", o.BlockingVolumes, sc.Volumes),
		func() (Result, error) { return RunBlocking(ctx, sc, o.BlockingVolumes) })
	if err != nil {
		return err
	}
	rep.Strategies = []Result{plugin, naive, blocking}
	if o.CompareVolumes <= 0 {
		return nil
	}
	cmp := sc
	cmp.Volumes = o.CompareVolumes
	p, err := step(o.Progress, fmt.Sprintf("plugin, N=%d", cmp.Volumes), func() (Result, error) { return r.RunPlugin(ctx, cmp) })
	if err != nil {
		return err
	}
	rep.Comparison = []Result{p, blocking.scaledTo(cmp.Volumes, cmp)}
	return nil
}

// runGrowth runs the plugin's growth runs.
func (r Runner) runGrowth(ctx context.Context, o Options, rep *Report) error {
	g := o.GrowthScenario
	rep.GrowthScenario = &g
	for _, n := range o.Growth {
		sc := g
		sc.Volumes = n
		res, err := step(o.Progress, fmt.Sprintf("plugin growth, N=%d", n),
			func() (Result, error) { return r.RunPlugin(ctx, sc) })
		if err != nil {
			return err
		}
		rep.Growth = append(rep.Growth, res)
	}
	return nil
}

// figures is what step reports of a run.
type figures interface {
	summary() string
}

// step runs one measurement with a line to progress before and after.
func step[R figures](progress io.Writer, what string, run func() (R, error)) (R, error) {
	fmt.Fprintf(progress, "running %s…\n", what)
	start := time.Now()
	res, err := run()
	if err == nil {
		fmt.Fprintf(progress, "  %s: %s (ran %s)\n", what, res.summary(), time.Since(start).Round(time.Second))
	}
	return res, err
}

// summary is a line on the result.
func (r Result) summary() string {
	return fmt.Sprintf("makespan %.1fs (bound %.1fs, ratio %.2f) at N=%d, %d EC2 calls, %d failed operations",
		r.Makespan, r.Bound, r.Ratio, r.Volumes, r.TotalCalls, r.FailedOps)
}

// ParseSections reads a comma-separated list of section names.
func ParseSections(list []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, s := range list {
		if !slices.Contains(Sections, s) {
			return nil, fmt.Errorf("no section %q (sections: %v)", s, Sections)
		}
		out[s] = true
	}
	return out, nil
}
