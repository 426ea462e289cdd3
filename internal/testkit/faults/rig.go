package faults

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

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
)

// The regions of every scenario: volumes live in SourceRegion, copies go to CopyRegion.
const (
	SourceRegion = "us-east-1"
	CopyRegion   = "us-west-2"
)

// Env is what scenarios share: the built plugin and where logs go.
type Env struct {
	// Plugin is the built plugin binary.
	Plugin *harness.Plugin
	// LogDir receives one log file per rig (core's and the plugin's log lines).
	LogDir string
	// SyncPeriod is core's --item-operation-sync-frequency (default 300 ms).
	SyncPeriod time.Duration
	// Progress, if set, receives a line per backup, restore and deletion.
	Progress io.Writer
	// Debug logs core and the plugin at debug level (default info).
	Debug bool
}

func (e *Env) syncPeriod() time.Duration {
	if e.SyncPeriod <= 0 {
		return 300 * time.Millisecond
	}
	return e.SyncPeriod
}

func (e *Env) logf(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, format+"\n", args...)
	}
}

// Rig is one simulator with seeded volumes and a Velero core around the plugin binary.
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

	env     *Env
	logFile *os.File
}

// FastConfig is a simulator at AWS's request rates with lifecycles of about a second.
func FastConfig(seed int64) ec2sim.Config {
	return ec2sim.Config{
		SnapshotDuration:     ec2sim.Range(300*time.Millisecond, 1200*time.Millisecond),
		CopyDuration:         ec2sim.Range(500*time.Millisecond, 1500*time.Millisecond),
		VolumeCreateDuration: ec2sim.Fixed(300 * time.Millisecond),
		ThrottleScale:        1,
		Seed:                 seed,
	}
}

// NewRig starts a simulator with cfg, seeds volumes (harness.Fleet) in SourceRegion and returns
// a core reaching the plugin binary through Velero's plugin manager. Close it when done.
func (e *Env) NewRig(name string, cfg ec2sim.Config, volumes int) (*Rig, error) {
	srv, err := harness.StartSimulator(cfg)
	if err != nil {
		return nil, err
	}
	r := &Rig{Sim: srv.Sim, Server: srv, env: e, LogPath: filepath.Join(e.LogDir, fileName(name)+".log")}
	if r.logFile, err = os.Create(r.LogPath); err != nil {
		_ = srv.Close()
		return nil, err
	}
	level := logrus.InfoLevel
	if e.Debug {
		level = logrus.DebugLevel
	}
	log := harness.NewLogger(r.logFile, level)
	plugins, err := harness.ProcessPlugins(e.Plugin.Dir, log, level)
	if err != nil {
		r.Close()
		return nil, err
	}
	r.Core = &harness.Core{Plugins: plugins, Log: log, SyncPeriod: e.syncPeriod()}
	if volumes > 0 {
		r.PVs = harness.Fleet{Region: SourceRegion, Count: volumes}.Seed(srv.Sim)
	}
	return r, nil
}

// Close stops the simulator and closes the log.
func (r *Rig) Close() {
	_ = r.Server.Close()
	_ = r.logFile.Close()
}

func fileName(s string) string {
	return strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			return c
		}
		return '-'
	}, strings.ToLower(s))
}

// Location is the VolumeSnapshotLocation "default" in region, copying to copyTo when not empty.
func Location(region, copyTo string) *velerov1api.VolumeSnapshotLocation {
	cfg := map[string]string{ebs.ConfigRegion: region}
	if copyTo != "" {
		cfg[ebs.ConfigCopyToRegion] = copyTo
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
	early := &earlyCheck{rig: r, res: res, backup: req.Name, copyTo: req.Location.Spec.Config[ebs.ConfigCopyToRegion], seen: map[*harness.Operation]bool{}}
	r.Core.Observer = early
	defer func() { r.Core.Observer = nil }()
	b, err := r.Core.Backup(ctx, req)
	if err != nil {
		return b, fmt.Errorf("backup %s: %w", req.Name, err)
	}
	res.Operations += len(b.Operations)
	res.LongestReconcile = max(res.LongestReconcile, b.LongestReconcile)
	for _, op := range b.Operations {
		if op.Status.Phase == itemoperation.OperationPhaseFailed {
			res.Failed++
		}
	}
	for _, e := range b.ItemErrors {
		res.Problemf("backup %s: item error: %s", req.Name, e)
	}
	res.Duplicates += Duplicates(r.Sim, req.Name)
	r.env.logf("  backup %s: %s, %d operations, %d failed, %d reconciles, %s", req.Name, b.Backup.Status.Phase,
		len(b.Operations), b.Backup.Status.BackupItemOperationsFailed, b.Reconciles, b.Total.Round(100*time.Millisecond))
	return b, nil
}

// earlyCheck is a harness.Observer that checks each operation when it is first seen completed.
type earlyCheck struct {
	rig            *Rig
	res            *Result
	backup, copyTo string
	seen           map[*harness.Operation]bool
}

// Observe checks the operations that completed since the last call.
func (c *earlyCheck) Observe(s harness.Status) {
	for _, op := range s.Operations {
		if op.Status.Phase != itemoperation.OperationPhaseCompleted || c.seen[op] {
			continue
		}
		c.seen[op] = true
		if src, _ := c.rig.SourceOf(c.backup, op.Resource.Name); src.ID == "" {
			continue // no snapshot was taken (an item error says why): nothing to wait for
		}
		if why := c.rig.Usable(c.backup, op.Resource.Name, c.copyTo); why != "" {
			c.res.Problemf("backup %s completed early: %s", c.backup, why)
		}
	}
}

// Check records a problem unless the backup has one snapshot and one operation per PV, the
// operations of the PVs in wantFailed (PV name -> text its error must contain) failed and no
// other, and the backup is Completed, or PartiallyFailed when some were meant to fail.
func (r *Rig) Check(res *Result, b *harness.BackupResult, wantFailed map[string]string) {
	st := b.Backup.Status
	want := velerov1api.BackupPhaseCompleted
	if len(wantFailed) > 0 {
		want = velerov1api.BackupPhasePartiallyFailed
	}
	if st.Phase != want {
		res.Problemf("backup %s is %s, want %s (operation errors %v)", b.Backup.Name, st.Phase, want, b.OperationErrors)
	}
	if n := len(r.PVs); st.VolumeSnapshotsCompleted != n || len(b.Operations) != n {
		res.Problemf("backup %s: %d snapshots and %d operations for %d PVs", b.Backup.Name, st.VolumeSnapshotsCompleted, len(b.Operations), n)
	}
	for _, op := range b.Operations {
		text, meant := wantFailed[op.Resource.Name]
		failed := op.Status.Phase == itemoperation.OperationPhaseFailed
		switch {
		case failed && !meant:
			res.Problemf("backup %s: %s failed: %s", b.Backup.Name, op.Resource.Name, op.Status.Error)
		case meant && (!failed || !strings.Contains(op.Status.Error, text)):
			res.Problemf("backup %s: %s is %s with error %q, want failed with %q", b.Backup.Name, op.Resource.Name, op.Status.Phase, op.Status.Error, text)
		}
	}
}

// Usable returns "" when the PV's snapshot in backup, and its copy in copyTo when set, are
// completed in the simulator, or else what is not.
func (r *Rig) Usable(backup, pvName, copyTo string) string {
	src, cp := r.SourceOf(backup, pvName)
	switch {
	case src.ID == "" || src.State != "completed":
		return fmt.Sprintf("%s: operation completed, source snapshot %q is %q", pvName, src.ID, src.State)
	case copyTo == "":
		return ""
	case cp.ID == "":
		return fmt.Sprintf("%s: operation completed, no copy of %s in %s", pvName, src.ID, copyTo)
	case cp.State != "completed":
		return fmt.Sprintf("%s: operation completed, copy %s of %s is %s", pvName, cp.ID, src.ID, cp.State)
	}
	return ""
}

// Delete deletes the backup's snapshots through loc as Velero's deletion controller does and
// records an error as a problem.
func (r *Rig) Delete(res *Result, b *harness.BackupResult, loc *velerov1api.VolumeSnapshotLocation) {
	start := time.Now()
	err := r.Core.DeleteBackup(b, loc)
	if err != nil {
		res.Problemf("deleting backup %s through %s: %v", b.Backup.Name, loc.Spec.Config[ebs.ConfigRegion], err)
	}
	r.env.logf("  deletion of %s through %s: %d snapshots, %s, error %v", b.Backup.Name, loc.Spec.Config[ebs.ConfigRegion],
		len(b.Snapshots), time.Since(start).Round(100*time.Millisecond), err)
}

// CountLeaked waits up to settle for snapshots whose deletion is pending to go (EC2 removes a
// deleted pending snapshot when it completes), then adds to res.Leaked every snapshot and copy
// left in either region, and records each as a problem.
func (r *Rig) CountLeaked(res *Result, settle time.Duration) {
	deadline := time.Now().Add(settle)
	for {
		pending := false
		for _, region := range []string{SourceRegion, CopyRegion} {
			for _, s := range r.Sim.Snapshots(region) {
				pending = pending || s.DeletePending
			}
		}
		if !pending || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, region := range []string{SourceRegion, CopyRegion} {
		for _, s := range r.Sim.Snapshots(region) {
			res.Leaked++
			if len(res.Problems) < 20 {
				res.Problemf("left after deletion: %s in %s (%s, %s, backup %q, pv %q, delete pending %v)", s.ID, region, s.VolumeID, s.State,
					s.Tags[ebs.TagBackup], s.Tags[ebs.TagPV], s.DeletePending)
			}
		}
	}
}

// Duplicates counts, for every backup of the name (each Backup by its UID, so a reused name is
// not a duplicate), the source snapshots beyond one per volume and the copies beyond one per
// source, in every region of the simulator's scenarios.
func Duplicates(sim *ec2sim.Simulator, backup string) int {
	perVolume, perSource := map[string]int{}, map[string]int{}
	for _, region := range []string{SourceRegion, CopyRegion} {
		for _, s := range sim.Snapshots(region) {
			if s.Tags[ebs.TagBackup] != backup {
				continue
			}
			if s.SourceSnapshotID != "" {
				perSource[s.SourceSnapshotID]++
			} else {
				perVolume[region+"/"+s.Tags[ebs.TagBackupUID]+"/"+s.VolumeID]++
			}
		}
	}
	n := 0
	for _, m := range []map[string]int{perVolume, perSource} {
		for _, c := range m {
			n += max(0, c-1)
		}
	}
	return n
}
