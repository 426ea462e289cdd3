package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Scenario is one fault scenario.
type Scenario struct {
	// Name, Load and Faults describe it in the Reliability table.
	Name, Load, Faults string
	// Heavy scenarios run only in full runs (make fault, FAULT_FULL=1): the storm, and those the
	// integration tests already play in go test.
	Heavy bool
	// Timeout bounds the run.
	Timeout time.Duration
	// Run plays the scenario and records what it measured in res.
	Run func(ctx context.Context, e *rig.Env, res *rig.Result) error
}

// Sizes scale the scenarios: Full is what make fault runs, Quick what go test runs.
type Sizes struct {
	StormVolumes, AmbiguousVolumes, ConsistencyVolumes, KillTrials, KillVolumes, CopySlotVolumes, ReusedVolumes, OutageVolumes, VaultVolumes int
	// Outage is how long the source region is down in the outage scenario.
	Outage time.Duration
	// AmbiguousCopies makes copies in the ambiguous-failures scenario: every CopySnapshot whose
	// outcome is unknown costs the plugin's wait for EC2's listing lag before it asks again.
	AmbiguousCopies bool
	// Invisible is the longest a new snapshot or copy stays out of Describe answers.
	Invisible time.Duration
	// PendingGP3 also fills the 5 pending snapshots of gp3 volumes (a minute of set-up);
	// the st1 limit of 1 is always exercised.
	PendingGP3 bool
}

// Full are the sizes of make fault. The storm is the one of the benchmark targets: 300 volumes at
// 10% of AWS's rates, about a quarter of an hour.
var Full = Sizes{StormVolumes: 300, AmbiguousVolumes: 50, ConsistencyVolumes: 30, KillTrials: 20, KillVolumes: 8,
	CopySlotVolumes: 100, ReusedVolumes: 30, OutageVolumes: 100, VaultVolumes: 50, Outage: 30 * time.Second, Invisible: 10 * time.Second, PendingGP3: true, AmbiguousCopies: true}

// Quick are the sizes of go test: every scenario but the heavy ones, smaller.
var Quick = Sizes{AmbiguousVolumes: 20, ConsistencyVolumes: 10, KillTrials: 4, KillVolumes: 6, AmbiguousCopies: true,
	CopySlotVolumes: 45, ReusedVolumes: 8, OutageVolumes: 20, VaultVolumes: 20, Outage: 8 * time.Second, Invisible: 10 * time.Second}

// Scenarios returns the fault scenarios at the given sizes, the heavy storm first.
func Scenarios(z Sizes) []Scenario {
	return []Scenario{
		{
			Name: "Throttling storm", Heavy: true, Timeout: 3 * time.Hour,
			Load:   fmt.Sprintf("%d volumes, copies", z.StormVolumes),
			Faults: "token buckets at 10% of AWS's sizes and rates",
			Run: func(ctx context.Context, e *rig.Env, res *rig.Result) error {
				return storm(ctx, e, res, z.StormVolumes)
			},
		},
		{
			Name: "Ambiguous failures", Timeout: 15 * time.Minute, // room for several listing-lag waits
			Load:   fmt.Sprintf("%d volumes, %s, deletion", z.AmbiguousVolumes, map[bool]string{true: "copies", false: "no copies"}[z.AmbiguousCopies]),
			Faults: "10% of CreateSnapshot and CopySnapshot answers lost after effect, 5% 5xx on every action, 0–1 s listing lag",
			Run: func(ctx context.Context, e *rig.Env, res *rig.Result) error {
				return ambiguous(ctx, e, res, z.AmbiguousVolumes, z.AmbiguousCopies)
			},
		},
		{
			Name: "Eventual consistency", Timeout: 5 * time.Minute,
			Load:   fmt.Sprintf("%d volumes, copies, deletion", z.ConsistencyVolumes),
			Faults: fmt.Sprintf("new snapshots, copies and volumes unlisted for 0–%s", z.Invisible),
			Run: func(ctx context.Context, e *rig.Env, res *rig.Result) error {
				return consistency(ctx, e, res, z.ConsistencyVolumes, z.Invisible)
			},
		},
		{
			Name: "Plugin killed", Timeout: 10 * time.Minute,
			Load:   fmt.Sprintf("%d trials of %d volumes, copies, deletion", z.KillTrials, z.KillVolumes),
			Faults: "plugin processes SIGKILLed at random items and Progress calls, 0–0.5 s listing lag",
			Run: func(ctx context.Context, e *rig.Env, res *rig.Result) error {
				return kills(ctx, e, res, z.KillTrials, z.KillVolumes)
			},
		},
		{
			Name: "Snapshot or copy in error", Timeout: 3 * time.Minute,
			Load:   "10 volumes, copies, deletion",
			Faults: "one snapshot and one copy end in state error",
			Run:    errorStates,
		},
		{
			Name: "Deletion", Timeout: 5 * time.Minute,
			Load:   "3 backups of 6 volumes with copies",
			Faults: "pieces already deleted (and deleted twice), copies missing, deletion from the copy region, deletion while copies are pending",
			Run:    deletions,
		},
		{
			Name: "Reused names, two installs", Heavy: true, Timeout: 5 * time.Minute,
			Load:   fmt.Sprintf("backup %q of %d volumes with copies, then again (old snapshots kept) while another install backs up %d others under the same name; deletion", "nightly", z.ReusedVolumes, z.ReusedVolumes),
			Faults: "same backup name three times in one account: an earlier backup's snapshots and copies, another cluster's at the same time",
			Run: func(ctx context.Context, e *rig.Env, res *rig.Result) error {
				return reusedNames(ctx, e, res, z.ReusedVolumes)
			},
		},
		{
			Name: "One source EC2 will not tag", Heavy: true, Timeout: 3 * time.Minute,
			Load:   "20 volumes, copies, deletion",
			Faults: "another tool fills one source snapshot to EC2's 50 tags while the backup waits",
			Run:    func(ctx context.Context, e *rig.Env, res *rig.Result) error { return untaggable(ctx, e, res, 20) },
		},
		{
			Name: "Operation cancelled", Heavy: true, Timeout: 3 * time.Minute,
			Load:   "21 volumes, copies of 30–35 s (beyond the plugin's listing lag), deletion",
			Faults: "Velero's item-operation timeout cancels one operation in the third reconcile",
			Run:    func(ctx context.Context, e *rig.Env, res *rig.Result) error { return cancelled(ctx, e, res, 21) },
		},
		{
			Name: "Source region down", Timeout: 10 * time.Minute,
			Load:   fmt.Sprintf("%d volumes, copies, deletion", z.OutageVolumes),
			Faults: fmt.Sprintf("EC2 in the source region answers nothing for %s from the second reconcile, its snapshots frozen meanwhile", z.Outage),
			Run: func(ctx context.Context, e *rig.Env, res *rig.Result) error {
				return outage(ctx, e, res, z.OutageVolumes, z.Outage)
			},
		},
		{
			Name: "Vault copies, answers lost", Timeout: 10 * time.Minute,
			Load:   fmt.Sprintf("%d volumes, copies, vault copies in another account locked for a day, deletion", z.VaultVolumes),
			Faults: "20% of ModifySnapshotAttribute, CopySnapshot and LockSnapshot answers lost after effect",
			Run: func(ctx context.Context, e *rig.Env, res *rig.Result) error {
				return vault(ctx, e, res, z.VaultVolumes)
			},
		},
		{
			Name: "Quotas", Timeout: 10 * time.Minute,
			Load:   quotaLoad(z),
			Faults: quotaFaults(z),
			Run:    func(ctx context.Context, e *rig.Env, res *rig.Result) error { return quotas(ctx, e, res, z) },
		},
	}
}

// deletionSettle is how long a scenario waits, after deleting, for snapshots whose deletion is
// pending (EC2 removes them when they complete) before it counts what is left.
const deletionSettle = 20 * time.Second

// Run plays one scenario and returns what it measured.
func Run(ctx context.Context, e *rig.Env, s Scenario) *rig.Result {
	res := &rig.Result{Scenario: s.Name, Load: s.Load, Faults: s.Faults}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	e.Logf("%s: %s; %s", s.Name, s.Load, s.Faults)
	start := time.Now()
	if err := s.Run(ctx, e, res); err != nil {
		res.Problemf("%v", err)
	}
	res.Duration = time.Since(start)
	e.Logf("  %s", res.Summary())
	return res
}

// withRig runs f on a new rig and closes it.
func withRig(e *rig.Env, name string, cfg ec2sim.Config, volumes int, f func(r *rig.Rig) error) error {
	r, err := e.NewRig(name, cfg, volumes)
	if err != nil {
		return err
	}
	defer r.Close()
	return f(r)
}

// backupAndDelete backs up every PV with copies, checks the backup, deletes it from the source
// region and counts what is left.
func backupAndDelete(ctx context.Context, r *rig.Rig, res *rig.Result, name string, wantFailed map[string]string) error {
	return backupAndDeleteTo(ctx, r, res, name, rig.CopyRegion, wantFailed)
}

// backupAndDeleteTo is backupAndDelete with copies to copyTo, none when "".
func backupAndDeleteTo(ctx context.Context, r *rig.Rig, res *rig.Result, name, copyTo string, wantFailed map[string]string) error {
	loc := rig.Location(rig.SourceRegion, copyTo)
	b, err := r.Backup(ctx, res, name, loc)
	if err != nil {
		return err
	}
	r.Check(res, b, wantFailed)
	r.Delete(res, b, loc)
	r.CountLeaked(res, deletionSettle)
	return nil
}
