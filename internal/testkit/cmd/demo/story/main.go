// Command story is the demo that `make demo` (../) compiles and runs: it starts the EC2
// simulator on loopback with a source account and a vault account, and a Kubernetes API, seeds
// EBS volumes, and drives a backup with cross-region copies and locked vault copies, a restore
// in the copy region and the deletion of the backup through Velero's own plugin client,
// showing what `velero backup describe --details` shows; then it runs the plugin's `check` on
// the backup's location. It exits non-zero if anything failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// options are the demo's flags.
type options struct {
	volumes           int
	snapshots, copies ec2sim.DurationRange
	sync              time.Duration
	throttleScale     float64
	workers           int
	// plugin is the built plugin binary; the demo builds one when empty.
	plugin string
	// logDir receives the log; a new directory of the system's temp dir when empty.
	logDir string
	// started is when the demo started (its lines count from there): when `make demo` began
	// compiling, or now.
	started time.Time
}

// defaultOptions are the flags' defaults: 50 volumes, snapshots of 3–6 s, copies of 5–10 s,
// Velero's sync period at 1 s, EC2's request rates at AWS's.
func defaultOptions() options {
	return options{
		volumes:       50,
		snapshots:     ec2sim.Range(3*time.Second, 6*time.Second),
		copies:        ec2sim.Range(5*time.Second, 10*time.Second),
		sync:          time.Second,
		throttleScale: 1,
		workers:       1,
		started:       time.Now(),
	}
}

// exitFailed is the exit status when anything failed.
const exitFailed = 1

func main() {
	rig.ServeBuiltinPlugins()
	o := defaultOptions()
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	fs.IntVar(&o.volumes, "volumes", o.volumes, "number of EBS volumes (PVs) to back up")
	fs.Var(&o.snapshots, "snapshot-duration", "how long a snapshot stays pending, MIN-MAX")
	fs.Var(&o.copies, "copy-duration", "how long a copy stays pending, MIN-MAX")
	fs.DurationVar(&o.sync, "sync-period", o.sync, "Velero's --item-operation-sync-frequency")
	fs.Float64Var(&o.throttleScale, "throttle-scale", o.throttleScale, "EC2 request rates as a multiple of AWS's (0: no throttling)")
	fs.IntVar(&o.workers, "workers", o.workers, "Velero's --item-block-worker-count")
	fs.StringVar(&o.plugin, "plugin", "", "the built plugin binary (default: build it)")
	fs.StringVar(&o.logDir, "log-dir", "", "directory for the log (default: a new one in the system's temp dir)")
	fs.Func("started", "when the demo started, RFC 3339 (default: now)", func(s string) (err error) {
		o.started, err = time.Parse(time.RFC3339Nano, s)
		return err
	})
	_ = fs.Parse(os.Args[1:])
	rig.PluginArgs()
	ok, err := prepareAndRun(context.Background(), o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: FAILED:", err)
		os.Exit(exitFailed)
	}
	if !ok {
		os.Exit(exitFailed)
	}
}

// prepareAndRun gets the plugin binary and the log directory the options name, or makes them,
// and runs the demo.
func prepareAndRun(ctx context.Context, o options, w io.Writer) (bool, error) {
	if o.logDir == "" {
		dir, err := os.MkdirTemp("", "velero-async-demo-")
		if err != nil {
			return false, err
		}
		o.logDir = dir
	}
	plugin := &rig.Plugin{Binary: o.plugin}
	if o.plugin == "" {
		fmt.Fprintf(w, "%s building the plugin (go build)…\n", stamp(o.started))
		built, err := rig.BuildPlugin(ctx)
		if err != nil {
			return false, err
		}
		defer built.Remove()
		plugin = built
	}
	return run(ctx, o, plugin, w)
}

// stamp is the time since start as the demo's lines begin: "[  65.0s]".
func stamp(start time.Time) string {
	return fmt.Sprintf("[%6.1fs]", time.Since(start).Seconds())
}
