package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// plugin is built once for the go test run.
var plugin *rig.Plugin

func TestMain(m *testing.M) { rig.TestMain(m, &plugin) }

// The demo's story on three volumes: it ends OK, and its output shows each thing it promises a
// user. Snapshots of 2 s and copies of 4 s keep every operation in progress for seconds after
// its snapshot is taken, so describe's view of a waiting operation is shown even when plugin
// processes start slowly. The sync period stays the demo's, which check accepts.
func TestDemoShowsEachStep(t *testing.T) {
	o := defaultOptions()
	o.volumes, o.logDir = 3, t.TempDir()
	o.snapshots, o.copies = ec2sim.Fixed(2*time.Second), ec2sim.Fixed(4*time.Second)
	var out bytes.Buffer
	ok, err := run(t.Context(), o, plugin, &out)
	text := out.String()
	if err != nil || !ok {
		t.Fatalf("the demo failed (%v):\n%s", err, text)
	}
	for _, tt := range []struct {
		name, want string
		times      int
	}{
		{"the log's path, at the start and the end", o.logDir + "/", 2},
		{"describe's view of an operation, with its plugin", "Backup Item Action Plugin:   velero-async.io/aws-snapshot-progress", 1},
		{"the description of an operation in progress", "Phase:                       InProgress\n", 1},
		{"the description of a completed operation", "Phase:                       Completed\n", 1},
		{"describe's view of a restore's operation", "Restore Item Action Plugin:  velero-async.io/aws-volume-restore", 1},
		{"the blocking approach's item phase", "blocking approach:  at least 18s", 1},
		{"what check says of the location", "VolumeSnapshotLocation velero/" + locationName + "\n", 1},
		{"the verdict", "\nOK\n", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if n := strings.Count(text, tt.want); n < tt.times {
				t.Errorf("%q appears %d times, want at least %d:\n%s", tt.want, n, tt.times, text)
			}
		})
	}
}
