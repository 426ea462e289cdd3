package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"
)

// Report is everything `make bench` measures, as printed and as written to JSON. A section
// not run is absent.
type Report struct {
	// Scenario is the standard scenario; Strategies its results, one per strategy.
	Scenario   *Scenario `json:"scenario,omitempty"`
	Strategies []Result  `json:"strategies,omitempty"`
	// Comparison holds the plugin and the blocking baseline at the comparison volume count.
	Comparison []Result `json:"comparison,omitempty"`
	// GrowthScenario is the scenario of the growth runs, whose volume count (and, for some,
	// request rates: see each result's throttleScale) varies.
	GrowthScenario *Scenario `json:"growthScenario,omitempty"`
	Growth         []Result  `json:"growth,omitempty"`
	// Schedules, Restore and Storm are the many-backups, large-restore and throttling-storm
	// scenarios with their results.
	Schedules *SchedulesRun `json:"schedules,omitempty"`
	Restore   *RestoreRun   `json:"restore,omitempty"`
	Storm     *StormRun     `json:"storm,omitempty"`
	// Audit is the audit-at-scale scenario with its audits.
	Audit *AuditRun `json:"audit,omitempty"`
	// Targets are the plugin's targets with the measured figures.
	Targets []Target `json:"targets"`
}

// SchedulesRun is the schedules scenario and its result (makespan and bound in the run's
// scaled time).
type SchedulesRun struct {
	Scenario Schedules      `json:"scenario"`
	Result   ScheduleResult `json:"result"`
}

// RestoreRun is the large-restore scenario and its restores (the restores only, not the backup
// made first).
type RestoreRun struct {
	Scenario Restore     `json:"scenario"`
	Runs     RestoreRuns `json:"runs"`
}

// StormRun is the throttling-storm scenario and its result.
type StormRun struct {
	Scenario Scenario `json:"scenario"`
	Result   Result   `json:"result"`
}

// AuditRun is the audit-at-scale scenario and its audits, smallest world first.
type AuditRun struct {
	Scenario Audit        `json:"scenario"`
	Results  AuditResults `json:"results"`
}

// Target is one of the plugin's performance targets.
type Target struct {
	Name     string  `json:"name"`
	Measured float64 `json:"measured"`
	Limit    float64 `json:"limit"`
	// AtMost is true for ceilings (measured ≤ limit), false for floors (measured ≥ limit).
	AtMost bool `json:"atMost"`
	Pass   bool `json:"pass"`
}

// Miss says by how much a target is missed: "" when it passes.
func (t Target) Miss() string {
	if t.Pass {
		return ""
	}
	by := t.Measured - t.Limit
	if !t.AtMost {
		by = -by
	}
	if t.Limit == 0 {
		return fmt.Sprintf("missed by %.2f", by)
	}
	return fmt.Sprintf("missed by %.2f (%.1f%% of the target)", by, 100*by/t.Limit)
}

func ceiling(name string, measured, limit float64) Target {
	return Target{Name: name, Measured: measured, Limit: limit, AtMost: true, Pass: measured <= limit}
}

func floor(name string, measured, limit float64) Target {
	return Target{Name: name, Measured: measured, Limit: limit, Pass: measured >= limit}
}

// scaledTo rescales a serial strategy's result to n volumes under scenario sc.
func (r Result) scaledTo(n int, sc Scenario) Result {
	f := float64(n) / float64(r.Volumes)
	out := r
	out.Volumes = n
	out.Makespan = Seconds(float64(r.Makespan) * f)
	out.Bound = seconds(sc.LowerBound())
	out.Ratio = float64(out.Makespan) / float64(out.Bound)
	out.Calls, out.TotalCalls = map[string]int{}, 0
	for a, c := range r.Calls {
		out.Calls[a] = int(float64(c) * f)
		out.TotalCalls += out.Calls[a]
	}
	out.Throttled = int(float64(r.Throttled) * f)
	out.FailedOps = int(float64(r.FailedOps) * f)
	return out
}

// The limits of the plugin's targets.
const (
	// standardRatio, schedulesRatio and restoreRatio bound makespan / lower bound;
	// initializedRatio a restore's time to fully initialized / its bound, at a provisioned rate.
	standardRatio    = 1.15
	schedulesRatio   = 1.15
	restoreRatio     = 1.15
	initializedRatio = 1.1
	// stormRatio bounds the storm's makespan / lower bound; stormReconcile its longest reconcile.
	stormRatio     = 1.5
	stormReconcile = 15 * time.Second
	// auditCallRatio bounds the audit's EC2 calls / its paging bound; auditTime its Read and
	// Decide on idle cores (AuditResult.IdleSeconds: the wall time depends on the machine's
	// other work); auditHeapGrowth its live heap per backup at the largest world / at the smallest
	// (1: linear; the slack is for hash tables, which grow by doubling).
	auditCallRatio  = 1.2
	auditTime       = 60 * time.Second
	auditHeapGrowth = 1.2
	// callsPerVolume and progressPerOp bound the largest growth run's EC2 calls per volume and
	// the median time of a reconcile's Progress calls per open operation. Calls per volume: the
	// four every volume needs (DescribeVolumes, CreateSnapshot, the recorded mark's CreateTags,
	// CopySnapshot; see callModel), plus half a call for the reconciles' descriptions and the
	// copy batches' marks and re-reads, as before the recorded mark (then 3.5).
	callsPerVolume = 4.5
	progressPerOp  = 2 * time.Millisecond
	// blockingFactor is how many times faster than the blocking baseline the plugin must be.
	blockingFactor = 20
)

// evaluate fills the targets from the results.
func (rep *Report) evaluate() {
	rep.Targets = nil
	rep.standardTargets()
	rep.growthTargets()
	rep.schedulesTargets()
	rep.restoreTargets()
	rep.stormTargets()
	rep.auditTargets()
}

func (rep *Report) add(t ...Target) { rep.Targets = append(rep.Targets, t...) }

func (rep *Report) standardTargets() {
	for _, r := range rep.Strategies {
		if r.Strategy == "plugin" {
			rep.add(ceiling(fmt.Sprintf("makespan / lower bound at N=%d", r.Volumes), r.Ratio, standardRatio))
		}
	}
	for _, r := range append(slices.Clone(rep.Strategies), rep.Growth...) {
		if r.Strategy != "plugin" {
			continue
		}
		rep.add(ceiling(fmt.Sprintf("EC2 calls ≤ %s at N=%d", callModelText, r.Volumes), float64(r.TotalCalls), float64(callModel(r))),
			ceiling(fmt.Sprintf("failed operations at N=%d", r.Volumes), float64(r.FailedOps), 0))
	}
	if len(rep.Comparison) == 2 && rep.Comparison[0].Makespan > 0 {
		p, b := rep.Comparison[0], rep.Comparison[1]
		rep.add(floor(fmt.Sprintf("blocking makespan / plugin makespan at N=%d", p.Volumes), float64(b.Makespan/p.Makespan), blockingFactor))
	}
}

// callModelText is callModel as the tables and targets name it.
const callModelText = "4N + 3×reconciles + 2×copy batches"

// callModel is the most EC2 calls a backup should make: per volume one DescribeVolumes,
// CreateSnapshot, CreateTags marking the snapshot recorded (velero-async.io/recorded, right
// after CreateSnapshot returns, in the item phase) and CopySnapshot; per reconcile one
// description of the sources, one of the copies and one listing of the account's copies in
// flight; per batch of copies started one CreateTags marking it and one DescribeSnapshots
// reading it again. Both marks are CreateTags on source snapshots, told apart by when they are
// made: the batches are the CreateTags of the reconciles, after the item phase, in which the
// plugin starts no copy. So a second mark of a volume counts against the model, not as a batch.
func callModel(r Result) int {
	return 4*r.Volumes + 3*r.Reconciles + 2*copyBatches(r)
}

// copyBatches is the number of copy batches a backup's plugin marked: its CreateTags after the
// item phase.
func copyBatches(r Result) int {
	return r.Calls["CreateTags"] - r.ItemPhaseCalls["CreateTags"]
}

// growthTargets are the targets of the largest growth run.
func (rep *Report) growthTargets() {
	if len(rep.Growth) == 0 {
		return
	}
	r := slices.MaxFunc(rep.Growth, func(a, b Result) int { return a.Volumes - b.Volumes })
	rep.add(ceiling(fmt.Sprintf("EC2 calls per volume at N=%d", r.Volumes), r.CallsPerVolume(), callsPerVolume),
		ceiling(fmt.Sprintf("one reconcile's Progress calls per open operation at N=%d, ms (median over reconciles)", r.Volumes),
			float64(r.ProgressPerOp), float64(millis(progressPerOp))))
}

func (rep *Report) schedulesTargets() {
	if rep.Schedules == nil {
		return
	}
	r := rep.Schedules.Result
	rep.add(ceiling("schedules: makespan / lower bound", r.Ratio, schedulesRatio),
		ceiling("schedules: failed operations", float64(r.FailedOps), 0),
		ceiling("schedules: peak copies in flight", float64(r.PeakCopies), copySlots),
		ceiling("schedules: duplicates and operations completed before their copy", float64(r.Duplicates+len(r.Problems)), 0))
}

func (rep *Report) restoreTargets() {
	if rep.Restore == nil {
		return
	}
	for _, r := range rep.Restore.Runs {
		at := rateLabel(r.InitializationRate)
		rep.add(ceiling(fmt.Sprintf("restore at %s: time to available / lower bound at N=%d", at, r.Volumes), r.Ratio, restoreRatio))
		if r.InitializationRate > 0 {
			rep.add(ceiling(fmt.Sprintf("restore at %s: time to fully initialized / bound at N=%d", at, r.Volumes), r.InitializedRatio, initializedRatio))
		}
		rep.add(ceiling(fmt.Sprintf("restore at %s: failed operations and volumes not restored", at), float64(r.FailedOps), 0))
	}
}

func (rep *Report) stormTargets() {
	if rep.Storm == nil {
		return
	}
	r := rep.Storm.Result
	rep.add(ceiling(fmt.Sprintf("storm: makespan / lower bound at N=%d", r.Volumes), r.Ratio, stormRatio),
		ceiling("storm: longest reconcile, s", float64(r.LongestReconcile), stormReconcile.Seconds()),
		ceiling("storm: failed operations", float64(r.FailedOps), 0))
}

// auditTargets are the audit's targets at its largest world, its memory's growth from the
// smallest, and its verdicts at every size.
func (rep *Report) auditTargets() {
	if rep.Audit == nil || len(rep.Audit.Results) == 0 {
		return
	}
	rs := rep.Audit.Results
	small, large := rs[0], rs[len(rs)-1]
	rep.add(ceiling(fmt.Sprintf("audit: EC2 calls / paging bound at %d backups", large.Backups), large.CallRatio, auditCallRatio),
		ceiling(fmt.Sprintf("audit: Read + Decide at %d backups on idle cores (CPU time + EC2's answer delays), s", large.Backups),
			float64(large.IdleSeconds), auditTime.Seconds()))
	if len(rs) > 1 {
		rep.add(ceiling(fmt.Sprintf("audit: live heap per backup at %d backups / at %d", large.Backups, small.Backups),
			large.HeapPerBackup()/small.HeapPerBackup(), auditHeapGrowth))
	}
	wrong := 0
	for _, r := range rs {
		wrong += len(r.Differences)
	}
	rep.add(ceiling("audit: verdict counts differing from the world's", float64(wrong), 0))
}

// WriteJSON writes the report to path.
func (rep *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
