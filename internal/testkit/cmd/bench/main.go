// Command bench measures backups with cross-region copies for this plugin, a blocking
// baseline and a naive asynchronous baseline against the same simulated EC2, then several
// schedules' backups at once, a large restore in the copy region, a throttling storm and the
// audit of a schedule's 1,000 backups; it prints tables and writes the figures as JSON. Targets are reported, never enforced by the
// exit code.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/bench"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// veleroSyncPeriod is Velero's default --item-operation-sync-frequency.
const veleroSyncPeriod = 10 * time.Second

func main() {
	rig.ServeBuiltinPlugins()
	o := bench.Options{
		Scenario:        bench.Standard(),
		BlockingVolumes: 3,
		CompareVolumes:  100,
		GrowthScenario:  bench.Standard(),
		Growth:          []int{10, 100, 1000},
		Schedules:       bench.StandardSchedules(),
		Restore:         bench.StandardRestore(),
		Storm:           bench.Storm(),
		Audit:           bench.StandardAudit(),
		Progress:        os.Stderr,
	}
	o.GrowthScenario.Snapshots = ec2sim.Range(time.Second, 2*time.Second)
	o.GrowthScenario.Copies = ec2sim.Range(time.Second, 2*time.Second)
	o.GrowthScenario.SyncPeriod.Duration = veleroSyncPeriod
	var err error
	out := "bench-results.json"
	var only, skip, cpuProfile string
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.StringVar(&out, "out", out, "where to write the results as JSON")
	fs.StringVar(&only, "only", "", fmt.Sprintf("comma-separated sections to run, of %s (default all)", strings.Join(bench.Sections, ",")))
	fs.StringVar(&skip, "skip", "", "comma-separated sections not to run")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the bench's own process to this file (the audit section runs in it; the plugin runs in processes of its own)")
	standardFlags(fs, &o)
	growthFlags(fs, &o)
	schedulesFlags(fs, &o.Schedules)
	restoreFlags(fs, &o.Restore)
	stormFlags(fs, &o.Storm)
	auditFlags(fs, &o.Audit)
	_ = fs.Parse(os.Args[1:])
	o.GrowthScenario.ThrottleScale = o.Scenario.ThrottleScale
	if o.Skip, err = skipped(only, skip); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	rig.PluginArgs()
	stop, err := profile(cpuProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	err = run(o, out)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func standardFlags(fs *flag.FlagSet, o *bench.Options) {
	fs.IntVar(&o.Scenario.Volumes, "volumes", o.Scenario.Volumes, "volumes in the standard scenario")
	fs.Var(&o.Scenario.Snapshots, "snapshot-duration", "snapshot duration in the standard scenario, MIN-MAX")
	fs.Var(&o.Scenario.Copies, "copy-duration", "copy duration in the standard scenario, MIN-MAX")
	fs.DurationVar(&o.Scenario.SyncPeriod.Duration, "sync-period", o.Scenario.SyncPeriod.Duration, "Velero's --item-operation-sync-frequency (standard)")
	fs.Float64Var(&o.Scenario.ThrottleScale, "throttle-scale", o.Scenario.ThrottleScale, "EC2 request rates as a multiple of AWS's (standard and growth)")
	fs.IntVar(&o.BlockingVolumes, "blocking-volumes", o.BlockingVolumes, "volumes the blocking baseline really backs up (scaled linearly)")
	fs.IntVar(&o.CompareVolumes, "compare-volumes", o.CompareVolumes, "volume count of the plugin-versus-blocking comparison (0: skip)")
}

func growthFlags(fs *flag.FlagSet, o *bench.Options) {
	fs.Func("growth", "comma-separated volume counts of the growth runs (default 10,100,1000; add 5000 for the issue's largest"+
		" backup: at least half an hour, as the plugin paces CreateSnapshot and CopySnapshot at AWS's 5 a second,"+
		" and today hours, as one reconcile's Progress calls grow with the square of the backup's operations)", func(v string) error {
		o.Growth = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return err
			}
			o.Growth = append(o.Growth, n)
		}
		return nil
	})
	fs.Var(&o.GrowthScenario.Snapshots, "growth-snapshot-duration", "snapshot duration of the growth runs")
	fs.Var(&o.GrowthScenario.Copies, "growth-copy-duration", "copy duration of the growth runs")
	fs.DurationVar(&o.GrowthScenario.SyncPeriod.Duration, "growth-sync-period", o.GrowthScenario.SyncPeriod.Duration,
		"Velero's --item-operation-sync-frequency in the growth runs (default Velero's own: the calls per volume depend on it, as EC2's request rates bound how many copies one reconcile may start)")
}

func schedulesFlags(fs *flag.FlagSet, s *bench.Schedules) {
	fs.IntVar(&s.Backups, "schedules", s.Backups, "schedules (backups) in the schedules scenario")
	fs.IntVar(&s.Volumes, "schedule-volumes", s.Volumes, "volumes of each schedule's backup")
	fs.DurationVar(&s.Every.Duration, "schedule-every", s.Every.Duration, "time between one schedule's backup and the next one's, before scaling")
	fs.Var(&s.Snapshots, "schedule-snapshot-duration", "snapshot duration in the schedules scenario before scaling, MIN-MAX")
	fs.Var(&s.Copies, "schedule-copy-duration", "copy duration in the schedules scenario before scaling, MIN-MAX")
	fs.DurationVar(&s.SyncPeriod.Duration, "schedule-sync-period", s.SyncPeriod.Duration, "Velero's --item-operation-sync-frequency in the schedules scenario, before scaling")
	fs.Float64Var(&s.TimeScale, "schedule-time-scale", s.TimeScale, "factor every duration of the schedules scenario is multiplied by in the run")
	fs.Float64Var(&s.ThrottleScale, "schedule-throttle-scale", s.ThrottleScale, "EC2 request rates in the schedules scenario as a multiple of AWS's")
}

func restoreFlags(fs *flag.FlagSet, s *bench.Restore) {
	fs.IntVar(&s.Volumes, "restore-volumes", s.Volumes, "volumes restored in the restore scenario")
	fs.Var(&s.Available, "restore-available", "time a restored volume takes to become available, D or MIN-MAX")
	fs.DurationVar(&s.SyncPeriod.Duration, "restore-sync-period", s.SyncPeriod.Duration, "Velero's --item-operation-sync-frequency in the restore scenario")
	fs.IntVar(&s.InitializationRate, "restore-initialization-rate", s.InitializationRate,
		"volumeInitializationRate (MiB/s) of the second restore, after one at EBS's default rate (0: that one only)")
	fs.Float64Var(&s.InitializationTimeScale, "restore-initialization-time-scale", s.InitializationTimeScale,
		"how many times faster than on EBS restored volumes initialize in the run (and in the bounds)")
}

func stormFlags(fs *flag.FlagSet, s *bench.Scenario) {
	fs.IntVar(&s.Volumes, "storm-volumes", s.Volumes, "volumes in the storm scenario")
	fs.DurationVar(&s.SyncPeriod.Duration, "storm-sync-period", s.SyncPeriod.Duration, "Velero's --item-operation-sync-frequency in the storm scenario")
	fs.Float64Var(&s.ThrottleScale, "storm-throttle-scale", s.ThrottleScale, "EC2 request rates in the storm scenario as a multiple of AWS's")
}

func auditFlags(fs *flag.FlagSet, a *bench.Audit) {
	fs.IntVar(&a.Backups, "audit-backups", a.Backups, "backups of the schedule in the audit scenario")
	fs.IntVar(&a.VolumesPerBackup, "audit-volumes", a.VolumesPerBackup, "volumes of each backup in the audit scenario")
	fs.Func("audit-memory-at", "comma-separated smaller backup counts the audit scenario is measured at too, for its memory's growth (default 250,500)", func(v string) error {
		a.MemoryAt = nil
		for _, f := range list(v) {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return err
			}
			a.MemoryAt = append(a.MemoryAt, n)
		}
		return nil
	})
	fs.Float64Var(&a.ThrottleScale, "audit-throttle-scale", a.ThrottleScale, "EC2 request rates in the audit scenario as a multiple of AWS's")
}

// profile starts a CPU profile into path, when given, and returns what stops it.
func profile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// skipped is the set of sections not to run: those not in only (when given) and those in skip.
func skipped(only, skip string) (map[string]bool, error) {
	out, err := bench.ParseSections(list(skip))
	if err != nil || only == "" {
		return out, err
	}
	wanted, err := bench.ParseSections(list(only))
	if err != nil {
		return nil, err
	}
	for _, s := range bench.Sections {
		if !wanted[s] {
			out[s] = true
		}
	}
	return out, nil
}

// list splits a comma-separated flag value; empty for "".
func list(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func run(o bench.Options, out string) error {
	ctx := context.Background()
	var r bench.Runner
	if bench.NeedsPlugin(o.Skip) {
		fmt.Fprintln(os.Stderr, "building the plugin…")
		plugin, err := rig.BuildPlugin(ctx)
		if err != nil {
			return err
		}
		defer plugin.Remove()
		logDir, err := os.MkdirTemp("", "velero-async-bench-")
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "Velero and plugin logs: %s\n", logDir)
		r = bench.Runner{Plugin: plugin, LogDir: logDir}
	}
	rep, err := r.Run(ctx, o)
	if err != nil {
		return err
	}
	rep.Print(os.Stdout)
	if err := rep.WriteJSON(out); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s\n", out)
	return nil
}
