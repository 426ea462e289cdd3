// Command demo builds the plugin, starts the EC2 simulator on loopback, seeds EBS volumes,
// and drives a backup with a cross-region copy, a restore in the copy region and the deletion
// of the backup through Velero's own plugin client, showing progress as
// `velero backup describe --details` would. It exits non-zero if anything failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// options are the demo's flags.
type options struct {
	volumes            int
	region, copyRegion string
	snapshots, copies  ec2sim.DurationRange
	sync               time.Duration
	throttleScale      float64
	workers            int
	verbose            bool
}

func main() {
	rig.ServeBuiltinPlugins()
	o := options{
		snapshots: ec2sim.Range(3*time.Second, 6*time.Second),
		copies:    ec2sim.Range(5*time.Second, 10*time.Second),
	}
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	fs.IntVar(&o.volumes, "volumes", 50, "number of EBS volumes (PVs) to back up")
	fs.StringVar(&o.region, "region", "us-east-1", "region of the volumes")
	fs.StringVar(&o.copyRegion, "copy-region", "us-west-2", "copyToRegion, and the region to restore in")
	fs.Var(&o.snapshots, "snapshot-duration", "how long a snapshot stays pending, MIN-MAX")
	fs.Var(&o.copies, "copy-duration", "how long a copy stays pending, MIN-MAX")
	fs.DurationVar(&o.sync, "sync-period", time.Second, "Velero's --item-operation-sync-frequency")
	fs.Float64Var(&o.throttleScale, "throttle-scale", 1, "EC2 request rates as a multiple of AWS's (0: no throttling)")
	fs.IntVar(&o.workers, "workers", 1, "Velero's --item-block-worker-count")
	fs.BoolVar(&o.verbose, "v", false, "log Velero core and the plugin to stderr")
	_ = fs.Parse(os.Args[1:])
	rig.PluginArgs()
	ok, err := run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (bool, error) {
	fmt.Println("Building the plugin…")
	plugin, err := rig.BuildPlugin(ctx)
	if err != nil {
		return false, err
	}
	defer plugin.Remove()
	srv, err := rig.StartSimulator(ec2sim.Config{
		SnapshotDuration: o.snapshots, CopyDuration: o.copies, ThrottleScale: o.throttleScale, Unthrottled: o.throttleScale <= 0,
	})
	if err != nil {
		return false, err
	}
	defer srv.Close()
	pvs := fixture.Fleet{Region: o.region, Count: o.volumes}.Seed(srv.Sim)
	fmt.Printf("EC2 simulator at %s: %d volumes in %s (gp3 and io2, in-tree and CSI PVs)\n\n", srv.URL, len(pvs), o.region)

	logOut, logPath, err := logDestination(o.verbose)
	if err != nil {
		return false, err
	}
	log := harness.NewLogger(logOut, logrus.InfoLevel)
	plugins, err := harness.ProcessPlugins(plugin.Dir, log, logrus.InfoLevel)
	if err != nil {
		return false, err
	}
	core := &harness.Core{Plugins: plugins, Log: log, SyncPeriod: o.sync, Workers: o.workers, Observer: newDisplay(os.Stdout)}
	memory := plugin.SampleMemory(100 * time.Millisecond)

	loc := harness.NewLocation("default", map[string]string{ebs.ConfigRegion: o.region, ebs.ConfigCopyToRegion: o.copyRegion})
	backup, err := core.Backup(ctx, harness.BackupRequest{Name: "demo", Labels: map[string]string{"app": "demo"}, Location: loc, PVs: pvs})
	if err != nil {
		return false, err
	}
	afterBackup := srv.Sim.Stats()
	fmt.Println()

	drLoc := harness.NewLocation("default", map[string]string{ebs.ConfigRegion: o.copyRegion})
	restore, err := core.Restore(ctx, harness.RestoreRequest{Name: "demo-restore", Backup: backup, Location: drLoc})
	if err != nil {
		return false, err
	}
	fmt.Println()

	deleteStart := time.Now()
	deleteErr := core.DeleteBackup(backup, loc)
	deletion := time.Since(deleteStart)
	peak := memory.Stop()

	s := summary{o: o, backup: backup, restore: restore, deletion: deletion, deleteErr: deleteErr,
		afterBackup: afterBackup, final: srv.Sim.Stats(), left: rig.SnapshotsLeft(srv.Sim, o.region, o.copyRegion),
		peakMemory: peak, logPath: logPath}
	s.print(os.Stdout)
	return s.ok(), nil
}

// logDestination is stderr when verbose, else a log file in the temp directory.
func logDestination(verbose bool) (io.Writer, string, error) {
	if verbose {
		return os.Stderr, "", nil
	}
	path := filepath.Join(os.TempDir(), "velero-async-demo.log")
	f, err := os.Create(path)
	return f, path, err
}
