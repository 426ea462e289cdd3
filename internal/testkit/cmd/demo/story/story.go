package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

const (
	// backupName is the demo's backup; restoreName its restore.
	backupName  = "demo"
	restoreName = "demo-restore"
	// locationName is the backup's VolumeSnapshotLocation, and the recovery cluster's.
	locationName = "default"
	// memoryInterval is how often the plugin processes' memory is sampled.
	memoryInterval = 100 * time.Millisecond
	// deletionSettleMargin is how much longer than the longest copy the demo waits for
	// deleted pending snapshots to go (EC2 removes one when it completes).
	deletionSettleMargin = 5 * time.Second
	// logTailLines is how much of the log a failed demo shows.
	logTailLines = 40
)

// simConfig is the simulator of the options: a source account, whose volumes are backed up
// and whose credentials the plugin processes have, and a vault account.
func (o options) simConfig() ec2sim.Config {
	cfg := ec2sim.Config{SnapshotDuration: o.snapshots, CopyDuration: o.copies, ThrottleScale: o.throttleScale, Unthrottled: o.throttleScale <= 0}
	return rig.WithAccounts(cfg, nil, nil)
}

// run is the demo's story: the backup, the restore in the copy region, the deletion, then
// `check` on the backup's location. It reports whether everything went as it should.
func run(ctx context.Context, o options, plugin *rig.Plugin, w io.Writer) (ok bool, err error) {
	steps := &stepPrinter{w: w, start: o.started}
	steps.printf("starting the EC2 simulator (source account %s, vault account %s), a Kubernetes API, and %d EBS volumes in %s",
		rig.SourceAccount, rig.VaultAccount, o.volumes, rig.SourceRegion)
	env := &rig.Env{Plugin: plugin, LogDir: o.logDir, SyncPeriod: o.sync, KubeAPI: true}
	r, err := env.NewRig(backupName, o.simConfig(), o.volumes)
	if err != nil {
		return false, err
	}
	defer r.Close()
	steps.printf("log of Velero core and the plugin: %s", r.LogPath)
	defer func() {
		if !ok {
			fmt.Fprintf(w, "Last lines of %s:\n%s\n", r.LogPath, process.LogTail(r.LogPath, logTailLines))
		}
	}()
	r.Core.Workers = o.workers
	loc, err := r.VaultLocation(rig.CopyRegion, model.LockModeGovernance)
	if err != nil {
		return false, err
	}
	loc.Name = locationName
	steps.printf("VolumeSnapshotLocation %s: %s", loc.Name, configLine(loc.Spec.Config))

	s := summary{o: o, logPath: r.LogPath, found: &rig.Result{}}
	memory := plugin.SampleMemory(memoryInterval)
	steps.printf("backup %s of %d PVs: Velero calls CreateSnapshot per PV, then Progress every %s until every operation completes", backupName, o.volumes, o.sync)
	steps.blank()
	r.Core.Observer = newDisplay(steps)
	s.backup, err = r.Core.Backup(ctx, harness.BackupRequest{Name: backupName, Labels: map[string]string{"app": "demo"}, Location: loc, PVs: r.PVs})
	if err != nil {
		return false, fmt.Errorf("backup: %w", err)
	}
	s.afterBackup = r.Sim.Stats()
	rig.CheckBackup(s.found, s.backup, len(r.PVs), nil)
	r.CheckSnapshots(s.found, s.backup, rig.CopyRegion)
	r.CheckVault(s.found, s.backup, loc)
	steps.blank()
	s.printItemPhase(w)

	steps.printf("restore %s in %s, as a recovery cluster does: a location of the same name in the copy region", restoreName, rig.CopyRegion)
	steps.blank()
	recovery := harness.NewLocation(loc.Name, map[string]string{model.ConfigRegion: rig.CopyRegion})
	s.restore, err = r.Core.Restore(ctx, harness.RestoreRequest{Name: restoreName, Backup: s.backup, Location: recovery})
	if err != nil {
		return false, fmt.Errorf("restore: %w", err)
	}
	steps.blank()

	steps.printf("deleting backup %s: its snapshots in %s, their copies in %s and, but for their lock, the vault copies", backupName, rig.SourceRegion, rig.CopyRegion)
	deleteStart := time.Now()
	s.deleteErr = r.Core.DeleteBackup(s.backup, loc)
	s.deletion = time.Since(deleteStart)
	s.peakMemory = memory.Stop()
	steps.printf("the vault's owner unlocks and deletes the locked vault copies the deletion kept")
	r.CheckKeptVaultCopies(ctx, s.found, s.backup)
	r.CountLeaked(s.found, max(o.copies.Min.Duration, o.copies.Max.Duration)+deletionSettleMargin)
	s.final = r.Sim.Stats()

	steps.printf("what the plugin's preflight check says of location %s (users run it before their first backup):", loc.Name)
	steps.printf("velero-plugin-for-aws-async check --location %s", loc.Name)
	steps.blank()
	r.KubeAPI.Put(loc) // the recovery location of the same name replaced it
	r.KubeAPI.Put(veleroDeployment(o))
	s.checkStatus, s.checkErr = runCheck(ctx, plugin.Binary, r.Kubeconfig, loc.Name, w)
	steps.blank()

	s.print(w)
	steps.printf("log: %s", r.LogPath)
	return s.ok(), nil
}
