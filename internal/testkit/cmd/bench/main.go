// Command bench measures a backup with cross-region copies for this plugin, a blocking
// baseline and a naive asynchronous baseline against the same simulated EC2, prints a table
// and writes the figures as JSON. Targets are reported, never enforced by the exit code.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/bench"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

func main() {
	rig.ServeBuiltinPlugins()
	o := bench.Options{
		Scenario:        bench.Standard(),
		BlockingVolumes: 3,
		CompareVolumes:  100,
		GrowthScenario:  bench.Standard(),
		Growth:          []int{10, 100, 1000},
		Progress:        os.Stderr,
	}
	o.GrowthScenario.Snapshots = ec2sim.Range(time.Second, 2*time.Second)
	o.GrowthScenario.Copies = ec2sim.Range(time.Second, 2*time.Second)
	out := "bench-results.json"
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.StringVar(&out, "out", out, "where to write the results as JSON")
	fs.IntVar(&o.Scenario.Volumes, "volumes", o.Scenario.Volumes, "volumes in the standard scenario")
	fs.Var(&o.Scenario.Snapshots, "snapshot-duration", "snapshot duration in the standard scenario, MIN-MAX")
	fs.Var(&o.Scenario.Copies, "copy-duration", "copy duration in the standard scenario, MIN-MAX")
	fs.DurationVar(&o.Scenario.SyncPeriod.Duration, "sync-period", o.Scenario.SyncPeriod.Duration, "Velero's --item-operation-sync-frequency")
	fs.Float64Var(&o.Scenario.ThrottleScale, "throttle-scale", o.Scenario.ThrottleScale, "EC2 request rates as a multiple of AWS's")
	fs.IntVar(&o.BlockingVolumes, "blocking-volumes", o.BlockingVolumes, "volumes the blocking baseline really backs up (scaled linearly)")
	fs.IntVar(&o.CompareVolumes, "compare-volumes", o.CompareVolumes, "volume count of the plugin-versus-blocking comparison (0: skip)")
	fs.Func("growth", "comma-separated volume counts of the EC2-calls growth runs (default 10,100,1000)", func(v string) error {
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
	_ = fs.Parse(os.Args[1:])
	o.GrowthScenario.SyncPeriod, o.GrowthScenario.ThrottleScale = o.Scenario.SyncPeriod, o.Scenario.ThrottleScale
	rig.PluginArgs()
	if err := run(o, out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o bench.Options, out string) error {
	ctx := context.Background()
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
	r := bench.Runner{Plugin: plugin, LogDir: logDir}
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
