package ebs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
)

// BenchmarkReconcile measures one reconcile of a large backup as Velero makes it: one Progress
// call per open operation, one after another, from a description cached by the first. Every
// source is complete and bound for the copy region; the account's copy slots are full, so each
// call judges the slots and starts nothing (the busiest steady state of a large backup).
func BenchmarkReconcile(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("operations=%d", n), func(b *testing.B) {
			f := newFixture(b)
			f.serveTracker(nil)
			ops := make([]string, n)
			for i := range n {
				vol := volN(i)
				src := snapshot(fmt.Sprintf("snap-%08x", i), vol, types.SnapshotStateCompleted, toDest(TagPV, "pv-"+vol), startedAt(time.Duration(i)*time.Millisecond))
				f.src().add(src)
				if i < defaultCopyLimit {
					f.dst().add(copyOfSnap(fmt.Sprintf("snap-c%07x", i), src, types.SnapshotStatePending))
				}
				ops[i] = Operation{Region: srcRegion, VolumeID: vol, Issued: t0, PV: "pv-" + vol}.String()
			}
			tr := newTracker(f, WithCacheTTL(time.Hour))
			backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, n)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				for _, id := range ops {
					if p, err := tr.Progress(ctx, id, backup); err != nil || p.Err != "" {
						b.Fatalf("Progress(%s): %v %s", id, err, p.Err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n)/1000, "ms/operation")
		})
	}
}
