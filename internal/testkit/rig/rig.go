package rig

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
	corev1api "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/kubeapi"
)

// The regions of every scenario: volumes live in SourceRegion, copies go to CopyRegion.
const (
	SourceRegion = "us-east-1"
	CopyRegion   = "us-west-2"
)

// Env is what the rigs of one suite share: the built plugin and where logs go.
type Env struct {
	// Plugin is the built plugin binary; nil for rigs whose core is given other plugins (a baseline).
	Plugin *Plugin
	// LogDir receives one log file per rig (core's and the plugin's log lines).
	LogDir string
	// SyncPeriod is core's --item-operation-sync-frequency (default 300 ms).
	SyncPeriod time.Duration
	// Progress, if set, receives a line per backup, restore and deletion.
	Progress io.Writer
	// Debug logs core and the plugin at debug level (default info).
	Debug bool
	// KubeAPI gives every rig a Kubernetes API of its own (Rig.KubeAPI): its cores publish
	// their Backups, Restores and VolumeSnapshotLocations there and read locations' credential
	// Secrets from it, and its plugin processes read it through KUBECONFIG, with
	// VELERO_NAMESPACE set to harness.Namespace. Without it the plugin's item actions have no
	// API and use the default AWS credential chain.
	KubeAPI bool
}

func (e *Env) level() logrus.Level {
	if e.Debug {
		return logrus.DebugLevel
	}
	return logrus.InfoLevel
}

func (e *Env) syncPeriod() time.Duration {
	if e.SyncPeriod <= 0 {
		return 300 * time.Millisecond
	}
	return e.SyncPeriod
}

// Logf writes a line to Progress, when set.
func (e *Env) Logf(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, format+"\n", args...)
	}
}

// Rig is one simulator with seeded volumes and a Velero core around the plugin binary, with the
// checks on what the simulator holds.
type Rig struct {
	// Sim is the simulator; Server its listener.
	Sim    *ec2sim.Simulator
	Server *ec2sim.Server
	// Core plays Velero.
	Core *harness.Core
	// PVs are the seeded volumes' PersistentVolumes.
	PVs []*corev1api.PersistentVolume
	// LogPath is the file with core's and the plugin's log lines.
	LogPath string
	// KubeAPI is the rig's Kubernetes API and Kubeconfig the file pointing at it, with
	// Env.KubeAPI; nil and "" otherwise.
	KubeAPI    *kubeapi.Server
	Kubeconfig string

	env     *Env
	logFile *os.File
	log     *logrus.Logger
	// pluginDir is the plugin directory of the rig's cores: Env.Plugin's, or with KubeAPI the
	// rig's own (see kubeapi.go).
	pluginDir string
	// credentialsDir is where the rig's cores write locations' credentials files.
	credentialsDir string
	// pluginTmp is the TMPDIR of the rig's plugin processes, with KubeAPI; removed at Close.
	pluginTmp string
}

// NewRig starts a simulator with cfg, seeds volumes (fixture.Fleet) in SourceRegion and returns
// a core reaching the plugin binary through Velero's plugin manager. Close it when done.
func (e *Env) NewRig(name string, cfg ec2sim.Config, volumes int) (*Rig, error) {
	srv, err := StartSimulator(cfg)
	if err != nil {
		return nil, err
	}
	r := &Rig{Sim: srv.Sim, Server: srv, env: e, LogPath: filepath.Join(e.LogDir, FileName(name)+".log")}
	if r.logFile, err = os.Create(r.LogPath); err != nil {
		_ = srv.Close()
		return nil, err
	}
	r.log = harness.NewLogger(r.logFile, e.level())
	if e.Plugin != nil {
		r.pluginDir = e.Plugin.Dir
	}
	if e.KubeAPI {
		if err := r.startKubeAPI(name); err != nil {
			r.Close()
			return nil, err
		}
	}
	if r.Core, err = r.NewCore(); err != nil {
		r.Close()
		return nil, err
	}
	if volumes > 0 {
		r.PVs = fixture.Fleet{Region: SourceRegion, Count: volumes}.Seed(srv.Sim)
	}
	return r, nil
}

// NewCore returns a Velero core over the rig's plugin directory, logging to the rig's log: a
// plugin manager factory of its own, as another Velero install (or server) has. With
// Env.KubeAPI it shares the rig's API, as a second server of one cluster would. NewRig makes
// the rig's own Core with it.
func (r *Rig) NewCore() (*harness.Core, error) {
	c := &harness.Core{Log: r.log, SyncPeriod: r.env.syncPeriod()}
	if r.KubeAPI != nil {
		c.API, c.CredentialsDir = r.KubeAPI, r.credentialsDir
	}
	if r.env.Plugin == nil {
		return c, nil // its plugins are the caller's
	}
	plugins, err := harness.ProcessPlugins(r.pluginDir, r.log, r.log.Level)
	if err != nil {
		return nil, err
	}
	c.Plugins = plugins
	return c, nil
}

// Close stops the simulator and the Kubernetes API and closes the log.
func (r *Rig) Close() {
	_ = r.Server.Close()
	if r.KubeAPI != nil {
		r.KubeAPI.Close()
	}
	if r.pluginTmp != "" {
		_ = os.RemoveAll(r.pluginTmp)
	}
	if r.logFile != nil {
		_ = r.logFile.Close()
	}
}

// FileName makes s a file name: lower case letters, digits and dashes.
func FileName(s string) string {
	return strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			return c
		}
		return '-'
	}, strings.ToLower(s))
}

// Location is the VolumeSnapshotLocation "default" in region, copying to copyTo when not empty.
func Location(region, copyTo string) *velerov1api.VolumeSnapshotLocation {
	cfg := map[string]string{model.ConfigRegion: region}
	if copyTo != "" {
		cfg[model.ConfigCopyToRegion] = copyTo
	}
	return harness.NewLocation("default", cfg)
}

// Backup backs up every seeded PV through loc as backup name and adds to res the operations
// started and failed and the duplicates the backup made.
func (r *Rig) Backup(ctx context.Context, res *Result, name string, loc *velerov1api.VolumeSnapshotLocation) (*harness.BackupResult, error) {
	return r.BackupPVs(ctx, res, harness.BackupRequest{Name: name, Location: loc, PVs: r.PVs, Labels: map[string]string{"app": "faults"}})
}

// BackupPVs runs req and records it in res as Backup does. While it runs, every operation is
// checked the moment core sees it complete: its snapshot (and copy) must then be completed in
// the simulator, or it completed early.
func (r *Rig) BackupPVs(ctx context.Context, res *Result, req harness.BackupRequest) (*harness.BackupResult, error) {
	r.Core.Observer = r.earlyCheck(res, req)
	defer func() { r.Core.Observer = nil }()
	b, err := r.Core.Backup(ctx, req)
	if err != nil {
		return b, fmt.Errorf("backup %s: %w", req.Name, err)
	}
	r.record(res, b)
	return b, nil
}

// record adds to res a finished backup's operations started and failed, its item errors and
// the duplicates it made, and logs a line on it.
func (r *Rig) record(res *Result, b *harness.BackupResult) {
	name := b.Backup.Name
	res.Operations += len(b.Operations)
	res.LongestReconcile = max(res.LongestReconcile, b.LongestReconcile)
	for _, op := range b.Operations {
		if op.Status.Phase == itemoperation.OperationPhaseFailed {
			res.Failed++
		}
	}
	for _, e := range b.ItemErrors {
		res.Problemf("backup %s: item error: %s", name, e)
	}
	res.Duplicates += Duplicates(r.Sim, name)
	r.env.Logf("  backup %s: %s, %d operations, %d failed, %d reconciles, %s", name, b.Backup.Status.Phase,
		len(b.Operations), b.Backup.Status.BackupItemOperationsFailed, b.Reconciles, b.Total.Round(100*time.Millisecond))
}

// earlyCheck returns the check of req's operations as core sees them complete.
func (r *Rig) earlyCheck(res *Result, req harness.BackupRequest) *earlyCheck {
	c := &earlyCheck{rig: r, res: res, backup: req.Name, copyTo: req.Location.Spec.Config[model.ConfigCopyToRegion], seen: map[*harness.Operation]bool{}}
	if c.vault = hasVault(req.Location); c.vault {
		c.lockMode = req.Location.Spec.Config[model.ConfigVaultLockMode]
	}
	return c
}

// earlyCheck is a harness.Observer that checks each operation when it is first seen completed.
type earlyCheck struct {
	rig            *Rig
	res            *Result
	backup, copyTo string
	// vault is set when the location asks for vault copies, lockMode when it locks them.
	vault    bool
	lockMode string
	seen     map[*harness.Operation]bool
}

// Observe checks the operations that completed since the last call.
func (c *earlyCheck) Observe(s harness.Status) {
	for _, op := range s.Operations {
		if op.Status.Phase != itemoperation.OperationPhaseCompleted || c.seen[op] {
			continue
		}
		c.seen[op] = true
		src, _ := c.rig.SourceOf(c.backup, op.Resource.Name)
		if src.ID == "" {
			continue // no snapshot was taken (an item error says why): nothing to wait for
		}
		if why := c.rig.Usable(c.backup, op.Resource.Name, c.copyTo); why != "" {
			c.res.Problemf("backup %s completed early: %s", c.backup, why)
		}
		if why := c.rig.vaultUsable(src, c.lockMode); c.vault && why != "" {
			c.res.Problemf("backup %s completed early: %s: %s", c.backup, op.Resource.Name, why)
		}
	}
}

// Delete deletes the backup's snapshots through loc as Velero's deletion controller does and
// records an error as a problem.
func (r *Rig) Delete(res *Result, b *harness.BackupResult, loc *velerov1api.VolumeSnapshotLocation) {
	start := time.Now()
	err := r.Core.DeleteBackup(b, loc)
	if err != nil {
		res.Problemf("deleting backup %s through %s: %v", b.Backup.Name, loc.Spec.Config[model.ConfigRegion], err)
	}
	r.env.Logf("  deletion of %s through %s: %d snapshots, %s, error %v", b.Backup.Name, loc.Spec.Config[model.ConfigRegion],
		len(b.Snapshots), time.Since(start).Round(100*time.Millisecond), err)
}
