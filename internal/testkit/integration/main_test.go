// Package integration drives the built plugin binary through Velero's own plugin client
// (via internal/testkit/harness) against the EC2 simulator on loopback.
package integration

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
	corev1api "k8s.io/api/core/v1"
)

const (
	sourceRegion = "us-east-1"
	copyRegion   = "us-west-2"
	syncPeriod   = 300 * time.Millisecond
)

// plugin is built once for the package.
var plugin *harness.Plugin

func TestMain(m *testing.M) { harness.TestMain(m, &plugin) }

// rig is one test's simulator, seeded volumes and Velero core.
type rig struct {
	t    *testing.T
	sim  *ec2sim.Simulator
	core *harness.Core
	pvs  []*corev1api.PersistentVolume
}

// fastConfig is a simulator at AWS's request rates with lifecycles of a few seconds.
func fastConfig() ec2sim.Config {
	return ec2sim.Config{
		SnapshotDuration: ec2sim.Range(500*time.Millisecond, 1500*time.Millisecond),
		CopyDuration:     ec2sim.Range(time.Second, 2*time.Second),
		ThrottleScale:    1,
		Seed:             1,
	}
}

// newRig starts a simulator with cfg, seeds volumes in the source region and returns a core
// that reaches the plugin binary through Velero's plugin manager. Core's and the plugin's logs
// go to a file whose tail is printed if the test fails.
func newRig(t *testing.T, cfg ec2sim.Config, volumes int) *rig {
	t.Helper()
	srv, err := harness.StartSimulator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	logPath := filepath.Join(t.TempDir(), "velero.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = logFile.Close()
		if t.Failed() {
			logTail(t, logPath, 60)
		}
	})
	log := harness.NewLogger(logFile, logrus.InfoLevel)
	plugins, err := harness.ProcessPlugins(plugin.Dir, log, logrus.InfoLevel)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{
		t:    t,
		sim:  srv.Sim,
		core: &harness.Core{Plugins: plugins, Log: log, SyncPeriod: syncPeriod},
		pvs:  harness.Fleet{Region: sourceRegion, Count: volumes}.Seed(srv.Sim),
	}
}

func logTail(t *testing.T, path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	t.Logf("last lines of %s:\n%s", path, strings.Join(lines[max(0, len(lines)-n):], "\n"))
}

// location is the VolumeSnapshotLocation "default" in the source region, copying to copyTo
// if not empty.
func location(copyTo string) *velerov1api.VolumeSnapshotLocation {
	cfg := map[string]string{ebs.ConfigRegion: sourceRegion}
	if copyTo != "" {
		cfg[ebs.ConfigCopyToRegion] = copyTo
	}
	return harness.NewLocation("default", cfg)
}

// backup runs a backup of every seeded PV through loc.
func (r *rig) backup(loc *velerov1api.VolumeSnapshotLocation, timeout time.Duration) *harness.BackupResult {
	r.t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(r.t.Name()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := r.core.Backup(ctx, harness.BackupRequest{
		Name: name, Labels: map[string]string{"app": "integration"}, Location: loc,
		PVs: r.pvs, ItemOperationTimeout: timeout,
	})
	if err != nil {
		r.t.Fatalf("backup: %v", err)
	}
	return res
}

// requireCompleted fails the test unless the backup is Completed with every PV snapshotted
// and every operation Completed, as `velero backup describe` would show it.
func requireCompleted(t *testing.T, res *harness.BackupResult, pvs int) {
	t.Helper()
	st := res.Backup.Status
	if st.Phase != velerov1api.BackupPhaseCompleted {
		t.Fatalf("backup phase %s, want Completed; item errors %v; operation errors %v", st.Phase, res.ItemErrors, res.OperationErrors)
	}
	if st.VolumeSnapshotsAttempted != pvs || st.VolumeSnapshotsCompleted != pvs {
		t.Errorf("volume snapshots %d of %d completed, want %d", st.VolumeSnapshotsCompleted, st.VolumeSnapshotsAttempted, pvs)
	}
	if st.BackupItemOperationsAttempted != pvs || st.BackupItemOperationsCompleted != pvs || st.BackupItemOperationsFailed != 0 {
		t.Errorf("item operations %d of %d completed, %d failed, want %d of %d", st.BackupItemOperationsCompleted,
			st.BackupItemOperationsAttempted, st.BackupItemOperationsFailed, pvs, pvs)
	}
}

// perPV counts a backup's snapshots in region per PV; copies or sources only.
func perPV(sim *ec2sim.Simulator, region, backup string, copies bool) map[string][]ec2sim.Snapshot {
	out := map[string][]ec2sim.Snapshot{}
	for _, s := range sim.Snapshots(region) {
		if s.Tags[ebs.TagBackup] != backup || (s.SourceSnapshotID != "") != copies {
			continue
		}
		out[s.Tags[ebs.TagPV]] = append(out[s.Tags[ebs.TagPV]], s)
	}
	return out
}

// requireOneEach fails the test unless every PV has exactly one completed source snapshot,
// and, if copyTo is set, exactly one completed copy of it there, tagged with its source.
func requireOneEach(t *testing.T, sim *ec2sim.Simulator, res *harness.BackupResult, copyTo string) {
	t.Helper()
	backup := res.Backup.Name
	sources := perPV(sim, sourceRegion, backup, false)
	copies := perPV(sim, copyTo, backup, true)
	for _, snap := range res.Snapshots {
		src := sources[snap.PV]
		if len(src) != 1 || src[0].ID != snap.SnapshotID || src[0].State != "completed" {
			t.Errorf("%s: source snapshots %+v, want one completed %s", snap.PV, src, snap.SnapshotID)
			continue
		}
		if copyTo == "" {
			continue
		}
		cp := copies[snap.PV]
		if len(cp) != 1 || cp[0].State != "completed" || cp[0].SourceSnapshotID != snap.SnapshotID ||
			cp[0].Tags[ebs.TagSourceSnapshotID] != snap.SnapshotID || cp[0].Tags[ebs.TagSourceRegion] != sourceRegion {
			t.Errorf("%s: copies in %s %+v, want one completed copy of %s", snap.PV, copyTo, cp, snap.SnapshotID)
		}
	}
	if copyTo == "" && len(sim.Snapshots(copyRegion)) != 0 {
		t.Errorf("%d snapshots in %s, want none without copyToRegion", len(sim.Snapshots(copyRegion)), copyRegion)
	}
}

// failedOps returns the operations that failed, by PV name.
func failedOps(res *harness.BackupResult) map[string]string {
	out := map[string]string{}
	for _, op := range res.Operations {
		if op.Status.Phase == itemoperation.OperationPhaseFailed {
			out[op.Resource.Name] = op.Status.Error
		}
	}
	return out
}
