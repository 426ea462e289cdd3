// Package integration drives the built plugin binary through Velero's own plugin client (the
// rig's Velero core) against the EC2 simulator on loopback: the situations the fault
// catalogue (internal/testkit/faults) does not play, each asserted as a user would check it.
package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

const (
	sourceRegion = rig.SourceRegion
	copyRegion   = rig.CopyRegion
	syncPeriod   = 300 * time.Millisecond
	// backupTimeout bounds one backup of a test.
	backupTimeout = 3 * time.Minute
	// logLines is how much of the rig's log a failed test shows.
	logLines = 60
)

// plugin is built once for the go test run.
var plugin *rig.Plugin

func TestMain(m *testing.M) { rig.TestMain(m, &plugin) }

// suite is one test's rig; what its checks find fails the test.
type suite struct {
	*rig.Rig
	t *testing.T
}

// newRig starts a rig with cfg and volumes seeded in the source region. Core's and the
// plugin's logs go to a file whose tail is printed if the test fails.
func newRig(t *testing.T, cfg ec2sim.Config, volumes int) *suite {
	t.Helper()
	return newRigIn(t, &rig.Env{Plugin: plugin, LogDir: t.TempDir(), SyncPeriod: syncPeriod}, cfg, volumes)
}

// newRigIn is newRig in env.
func newRigIn(t *testing.T, env *rig.Env, cfg ec2sim.Config, volumes int) *suite {
	t.Helper()
	r, err := env.NewRig(t.Name(), cfg, volumes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", r.LogPath, process.LogTail(r.LogPath, logLines))
		}
	})
	return &suite{Rig: r, t: t}
}

// newCore returns another Velero core over the rig's plugin directory, as another Velero
// install (or server) has.
func (r *suite) newCore() *harness.Core {
	r.t.Helper()
	c, err := r.NewCore()
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// location is the VolumeSnapshotLocation "default" in the source region, copying to copyTo
// if not empty.
func location(copyTo string) *velerov1api.VolumeSnapshotLocation {
	return rig.Location(sourceRegion, copyTo)
}

// backup runs a backup of every seeded PV through loc.
func (r *suite) backup(loc *velerov1api.VolumeSnapshotLocation, timeout time.Duration) *harness.BackupResult {
	r.t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(r.t.Name()))
	ctx, cancel := context.WithTimeout(context.Background(), backupTimeout)
	defer cancel()
	res, err := r.Core.Backup(ctx, harness.BackupRequest{
		Name: name, Labels: map[string]string{"app": "integration"}, Location: loc,
		PVs: r.PVs, ItemOperationTimeout: timeout,
	})
	if err != nil {
		r.t.Fatalf("backup: %v", err)
	}
	return res
}

// requireCompleted fails the test unless the backup is Completed with each of pvs PVs
// snapshotted and every operation Completed, as `velero backup describe` would show it.
func requireCompleted(t *testing.T, res *harness.BackupResult, pvs int) {
	t.Helper()
	found := &rig.Result{}
	rig.CheckBackup(found, res, pvs, nil)
	require(t, found)
}

// requireOneEach fails the test unless every PV has exactly one completed source snapshot,
// and, if copyTo is set, exactly one completed copy of it there, tagged with its source.
func requireOneEach(t *testing.T, r *suite, res *harness.BackupResult, copyTo string) {
	t.Helper()
	found := &rig.Result{}
	r.CheckSnapshots(found, res, copyTo)
	require(t, found)
}

// require fails the test with every problem the rig's checks found.
func require(t *testing.T, found *rig.Result) {
	t.Helper()
	if len(found.Problems) > 0 {
		t.Fatal(strings.Join(found.Problems, "\n"))
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
