package tracking

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
)

// BenchmarkReconcile measures one reconcile of a large backup as Velero makes it: one Progress
// call per open operation, one after another, from a description cached by the first. Every
// source is complete and bound for the copy region; the account's copy slots are full, so each
// call judges the slots and starts nothing (the busiest steady state of a large backup).
func BenchmarkReconcile(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("operations=%d", n), func(b *testing.B) {
			f := mockec2.NewFixture(b)
			serveTracker(f, nil)
			ops := make([]string, n)
			for i := range n {
				vol := volN(i)
				src := mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), vol, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-"+vol), mockec2.StartedAt(time.Duration(i)*time.Millisecond))
				f.Src().Add(src)
				if i < ebs.DefaultCopyLimit {
					f.Dst().Add(mockec2.CopyOfSnap(fmt.Sprintf("snap-c%07x", i), src, types.SnapshotStatePending))
				}
				ops[i] = model.Operation{Region: mockec2.SrcRegion, VolumeID: vol, Issued: mockec2.T0, PV: "pv-" + vol}.String()
			}
			tr := newTracker(f, ebs.WithCacheTTL(time.Hour))
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
