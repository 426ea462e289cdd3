package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// boundRounding is how finely lower bounds are printed.
const boundRounding = 100 * time.Millisecond

// Print writes the report as tables, the targets last.
func (rep *Report) Print(w io.Writer) {
	rep.printStandard(w)
	rep.printGrowth(w)
	rep.printSchedules(w)
	rep.printRestore(w)
	rep.printStorm(w)
	rep.printAudit(w)
	fmt.Fprintln(w, "\nTargets for the plugin:")
	for _, t := range rep.Targets {
		verdict, op := "FAIL", "≥"
		if t.Pass {
			verdict = "pass"
		}
		if t.AtMost {
			op = "≤"
		}
		line := fmt.Sprintf("  [%s] %s: %.2f (target %s %g)", verdict, t.Name, t.Measured, op, t.Limit)
		if miss := t.Miss(); miss != "" {
			line += ": " + miss
		}
		fmt.Fprintln(w, line)
	}
}

func (rep *Report) printStandard(w io.Writer) {
	sc := rep.Scenario
	if sc == nil {
		return
	}
	fmt.Fprintf(w, "\nStandard scenario: %s\n", sc.describe())
	fmt.Fprintf(w, "Lower bound at N=%d: %s (%s)\n\n", sc.Volumes, sc.LowerBound().Round(boundRounding), backupBoundText)
	printResults(w, rep.Strategies)
	printCalls(w, rep.Strategies)
	if len(rep.Comparison) == 2 {
		fmt.Fprintf(w, "\nAt N=%d (same durations):\n", rep.Comparison[0].Volumes)
		printResults(w, rep.Comparison)
	}
	for _, r := range append(slices.Clone(rep.Strategies), rep.Comparison...) {
		if r.Measured < r.Volumes {
			fmt.Fprintf(w, "  %s: measured on %d volumes and scaled linearly to N (exact for a serial strategy)\n", r.Strategy, r.Measured)
			break
		}
	}
}

// backupBoundText says how Scenario.LowerBound is made.
const backupBoundText = "CreateSnapshot issue time at 100 burst + 5/s, then the longest snapshot + ceil(N/20) copy waves " +
	"of the mean copy duration or, when longer, the CopySnapshot issue time at 50 + 5/s + the mean copy duration; " +
	"bursts and rates × the throttle scale"

func (rep *Report) printGrowth(w io.Writer) {
	if len(rep.Growth) == 0 {
		return
	}
	g := rep.GrowthScenario
	fmt.Fprintf(w, "\nThe plugin as N grows (snapshots %s, copies %s, sync period %s):\n", &g.Snapshots, &g.Copies, g.SyncPeriod)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "N\trates\tEC2 calls\tper volume\treconciles\tcopy batches\tcall model\tthrottled\tfailed ops\tmakespan\tpeak plugin mem\tProgress/op median\tbusiest\tlongest reconcile\t")
	for _, r := range rep.Growth {
		fmt.Fprintf(tw, "%d\t%g×\t%d\t%.2f\t%d\t%d\t%d\t%d\t%d\t%.1fs\t%s\t%.2f ms\t%.2f ms\t%.1fs\t\n", r.Volumes, r.ThrottleScale, r.TotalCalls,
			r.CallsPerVolume(), r.Reconciles, copyBatches(r), callModel(r), r.Throttled, r.FailedOps, r.Makespan, memory(r),
			r.ProgressPerOp, r.ProgressPerOpBusiest, r.LongestReconcile)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "  call model: "+callModelText+" (see the targets); copy batches: the CreateTags after the item phase. rates: EC2's request rates and bursts as a multiple of AWS's. Progress/op: the time of one reconcile's Progress calls"+
		" (made one after another, the first one starting the reconcile's plugin process) divided by the operations open; the median"+
		" over the backup's reconciles, and for its busiest reconcile (the most operations open)")
}

func (rep *Report) printSchedules(w io.Writer) {
	if rep.Schedules == nil {
		return
	}
	s, r := rep.Schedules.Scenario, rep.Schedules.Result
	run := s.scaled()
	fmt.Fprintf(w, "\nSchedules: %d backups of %d volumes each (PVs of their own), created %s apart, copies to %s; snapshots %s, copies %s,"+
		" sync period %s; every duration × %g in the run (%s apart, snapshots %s, copies %s, sync period %s); EC2 at %g× AWS's rates, not scaled\n",
		s.Backups, s.Volumes, s.Every, rig.CopyRegion, &s.Snapshots, &s.Copies, s.SyncPeriod, s.TimeScale,
		run.Every, &run.Snapshots, &run.Copies, run.SyncPeriod, s.ThrottleScale)
	fmt.Fprintf(w, "Lower bound: %s (one item phase at a time, all drawing on one CreateSnapshot bucket of 100 + 5/s; for each backup k, the"+
		" earliest end of its item phase + the copy phase of the volumes of backups k and later (the longest snapshot + their copy"+
		" waves through the account's 20 slots, or their CopySnapshot issue time + a copy); the largest over k)\n\n", s.LowerBound().Round(boundRounding))
	printResults(w, []Result{r.Result})
	each := make([]string, len(r.BackupSeconds))
	for i, b := range r.BackupSeconds {
		each[i] = fmt.Sprintf("%.1fs", b)
	}
	fmt.Fprintf(w, "  each backup from its start to its end: %s\n", strings.Join(each, ", "))
	fmt.Fprintf(w, "  %d passes of the operations controller, at most %d backups in one, longest pass %.1fs, longest reconcile %.1fs;"+
		" Progress per open operation %.2f ms median (busiest reconcile %.2f ms); %d duplicates; %d operations completed before their copy\n",
		r.Passes, r.MostInOnePass, r.LongestPass, r.LongestReconcile, r.ProgressPerOp, r.ProgressPerOpBusiest, r.Duplicates, len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "    %s\n", p)
	}
}

func (rep *Report) printRestore(w io.Writer) {
	if rep.Restore == nil {
		return
	}
	s, runs := rep.Restore.Scenario, rep.Restore.Runs
	fmt.Fprintf(w, "\nRestore: %d volumes of %s restored at once in %s from their copies, each available %s after CreateVolume, sync period %s, EC2 at %g× AWS's rates;"+
		" without and with volumeInitializationRate %d MiB/s; initialization %g× faster than on EBS, in the bounds too (nothing else is scaled)\n",
		s.Volumes, sizeMix(s.SizesGiB), rig.CopyRegion, &s.Available, s.SyncPeriod, s.ThrottleScale, s.InitializationRate, s.timeScale())
	fmt.Fprintf(w, "Bounds: available %s (CreateVolume issue time at 100 burst + 5/s, + the longest time a volume takes to become available);"+
		" fully initialized: that + the largest volume (%d GiB) ÷ the rate ÷ %g (the default rate is the simulator's %d MiB/s model of lazy loading)\n\n",
		s.LowerBound().Round(boundRounding), slices.Max(s.SizesGiB), s.timeScale(), ec2sim.DefaultInitializationRate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "initialization rate\tN\tavailable\tbound\tratio\tfully initialized\tbound\tratio\ton EBS (bound)\tEC2 calls\tthrottled\tfailed ops\tpeak plugin mem\treconciles\tlongest reconcile\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%d\t%.1fs\t%.1fs\t%.2f\t%.1fs\t%.1fs\t%.2f\t%s\t%d\t%d\t%d\t%s\t%d\t%.1fs\t\n", rateLabel(r.InitializationRate), r.Volumes,
			r.Makespan, r.Bound, r.Ratio, r.Initialized, r.InitializedBound, r.InitializedRatio,
			s.ebsInitializedBound(r.InitializationRate).Round(time.Second), r.TotalCalls, r.Throttled, r.FailedOps, memory(r.Result), r.Reconciles, r.LongestReconcile)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "  available: until the restore completes; fully initialized: until DescribeVolumeStatus reports every volume 100%%, polled by the bench every %s;"+
		" on EBS (bound): the bound of fully initialized at EBS's own initialization time\n", initializationPoll)
	labelled := make([]Result, len(runs))
	for i, r := range runs {
		labelled[i] = r.Result
		labelled[i].Strategy = rateLabel(r.InitializationRate)
	}
	printCalls(w, labelled)
}

// sizeMix describes volume sizes: "10–200 GiB (20 sizes in turn)", or the one size.
func sizeMix(sizes []int32) string {
	if len(sizes) == 1 {
		return fmt.Sprintf("%d GiB", sizes[0])
	}
	return fmt.Sprintf("%d–%d GiB (%d sizes in turn)", slices.Min(sizes), slices.Max(sizes), len(sizes))
}

func (rep *Report) printStorm(w io.Writer) {
	if rep.Storm == nil {
		return
	}
	s, r := rep.Storm.Scenario, rep.Storm.Result
	fmt.Fprintf(w, "\nStorm: %s (token buckets' sizes and refill rates)\n", s.describe())
	fmt.Fprintf(w, "Lower bound: %s (%s)\n\n", s.LowerBound().Round(boundRounding), backupBoundText)
	printResults(w, []Result{r})
}

func (rep *Report) printAudit(w io.Writer) {
	if rep.Audit == nil || len(rep.Audit.Results) == 0 {
		return
	}
	a, rs := rep.Audit.Scenario, rep.Audit.Results
	large := rs[len(rs)-1]
	fmt.Fprintf(w, "\nAudit: a schedule's backups of %d volumes, one every %s, each with a copy in %s and a vault copy in %s %s (governance lock, %d days);"+
		" one backup in %d gone from the storage location and the cluster; a backup without volumes per %d; EC2 at %g× AWS's rates\n",
		a.VolumesPerBackup, a.Every, auditRegions.copy, auditVaultAccount, auditRegions.copy, a.VaultLockDays, a.GoneEvery, a.MetadataEvery, a.ThrottleScale)
	fmt.Fprint(w, "Paging bound: per place ceil(snapshots / 1,000) DescribeSnapshots; where vault copies are, ceil(locked / 1,000) DescribeLockedSnapshots;"+
		" one DescribeVolumes per place of the location's own account\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backups\tsnapshots\tread\tdecide\tread+decide\tCPU read\tCPU decide\ton idle cores\tin the simulator\tload\tEC2 calls\tbound\tratio\tthrottled\tKubernetes requests\tobject-store reads\theap after Read\tafter Decide\tper backup\tpeak (upper bound)\t")
	for _, r := range rs {
		snaps := 0
		for _, p := range r.Places {
			snaps += p.Snapshots
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2fs\t%.2fs\t%.2fs\t%.2fs\t%.2fs\t%.2fs\t%.2fs\t%.1f\t%d\t%d\t%.2f\t%d\t%d\t%d\t%.1f MiB\t%.1f MiB\t%.1f KiB\t%.1f MiB\t\n", r.Backups, snaps,
			r.ReadSeconds, r.DecideSeconds, r.TotalSeconds, r.ReadCPUSeconds, r.DecideCPUSeconds, r.IdleSeconds, r.SimulatorSeconds, r.LoadAverage, r.TotalCalls, r.BoundTotal, r.CallRatio, r.Throttled,
			total(r.KubeRequests), total(r.StoreReads), mib(r.ReadHeapBytes), mib(r.DecideHeapBytes), r.HeapPerBackup()/(1<<10), mib(r.PeakHeapBytes))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "  EC2 calls: the audit's only (the simulator answered every page once before, and its bucket refilled); CPU: the process's user and system time on"+
		" every core (the simulator's and the GC's included); on idle cores: the CPU times one after another plus EC2's answer delays, an estimate"+
		" of read+decide whatever the machine's other work; in the simulator: the time it took to make its answers; load: the machine's 1-minute load"+
		" average as the audit ended; heap: live after a forced GC (after Read: the World; after Decide: the World and the Report), and the most in use"+
		" sampled every "+heapInterval.String()+" (uncollected garbage included; the simulator's heap paces the collector too, so more piles up than in the"+
		" command's own process), each less the live heap before Read")
	fmt.Fprintf(w, "\nAt %d backups, by place: ", large.Backups)
	for i, p := range large.Places {
		if i > 0 {
			fmt.Fprint(w, "; ")
		}
		fmt.Fprintf(w, "%s %d snapshots (%d locked)", p.Name, p.Snapshots, p.Locked)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "EC2 action\tcalls\tpaging bound\t")
	for _, action := range slices.Sorted(maps.Keys(mergeKeys(large.Calls, large.Bound))) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", action, large.Calls[action], large.Bound[action])
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "Kubernetes requests: %s; object-store reads: %s\n", counts(large.KubeRequests), counts(large.StoreReads))
	for _, r := range rs {
		v := r.Verdicts
		fmt.Fprintf(w, "Verdicts at %d backups: %d backups (%d DR-ready), %d orphans, %d kept, %d not judged, %d of an unknown install, %d of other installs, %d problems",
			r.Backups, v.Backups, v.DRReady, v.Orphans, v.Kept, v.Unjudged, v.Unknown, v.OtherInstalls, v.Problems)
		if len(r.Differences) == 0 {
			fmt.Fprintln(w, ": as planted")
		} else {
			fmt.Fprintf(w, "; NOT as planted: %s\n", strings.Join(r.Differences, "; "))
		}
	}
}

// mergeKeys is the union of two counts' keys, with zero counts.
func mergeKeys(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k := range a {
		out[k] = 0
	}
	for k := range b {
		out[k] = 0
	}
	return out
}

// counts writes counts as "key n, key n" in key order.
func counts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func (sc Scenario) describe() string {
	return fmt.Sprintf("%d volumes, %s", sc.Volumes, sc.conditions())
}

func (sc Scenario) conditions() string {
	return fmt.Sprintf("snapshots %s, copies %s, sync period %s, throttling at %g× AWS's documented rates",
		&sc.Snapshots, &sc.Copies, sc.SyncPeriod, sc.ThrottleScale)
}

// memory is a result's peak plugin memory as the tables show it.
func memory(r Result) string {
	if r.PeakMemoryBytes <= 0 {
		return "in-process"
	}
	return fmt.Sprintf("%.1f MiB", float64(r.PeakMemoryBytes)/(1<<20))
}

func printResults(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tN\tmakespan\tbound\tratio\tEC2 calls\tthrottled\tfailed ops\tpeak copies\tpeak plugin mem\treconciles\tlongest reconcile\t")
	for _, r := range rs {
		name := r.Strategy
		if r.Measured < r.Volumes {
			name += fmt.Sprintf(" (scaled from %d)", r.Measured)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1fs\t%.1fs\t%.2f\t%d\t%d\t%d\t%d\t%s\t%d\t%.1fs\t\n", name, r.Volumes, r.Makespan, r.Bound, r.Ratio,
			r.TotalCalls, r.Throttled, r.FailedOps, r.PeakCopies, memory(r), r.Reconciles, r.LongestReconcile)
	}
	_ = tw.Flush()
}

func printCalls(w io.Writer, rs []Result) {
	actions := map[string]bool{}
	for _, r := range rs {
		for a := range r.Calls {
			actions[a] = true
		}
	}
	fmt.Fprintln(w, "\nEC2 calls by action (all outcomes, throttled included):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Strategy
	}
	fmt.Fprintf(tw, "action\t%s\t\n", strings.Join(names, "\t"))
	for _, a := range slices.Sorted(maps.Keys(actions)) {
		fmt.Fprint(tw, a)
		for _, r := range rs {
			fmt.Fprintf(tw, "\t%d", r.Calls[a])
		}
		fmt.Fprintln(tw, "\t")
	}
	_ = tw.Flush()
}
