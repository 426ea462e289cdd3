package ebs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// describeSnapshots follows every page, asking for this account's snapshots, 1000 a page.
func TestDescribeSnapshotsPages(t *testing.T) {
	tests := []struct {
		name    string
		pages   [][]types.Snapshot
		failAt  int // page whose request fails; -1 for none
		wantIDs int
	}{
		{name: "one page", pages: [][]types.Snapshot{{mockec2.Snapshot("snap-00000001", mockec2.VolA, types.SnapshotStateCompleted)}}, failAt: -1, wantIDs: 1},
		{name: "three pages", pages: [][]types.Snapshot{
			{mockec2.Snapshot("snap-00000001", mockec2.VolA, types.SnapshotStateCompleted), mockec2.Snapshot("snap-00000002", mockec2.VolA, types.SnapshotStateCompleted)},
			{},
			{mockec2.Snapshot("snap-00000003", mockec2.VolA, types.SnapshotStateCompleted)},
		}, failAt: -1, wantIDs: 3},
		{name: "second page fails", pages: [][]types.Snapshot{{mockec2.Snapshot("snap-00000001", mockec2.VolA, types.SnapshotStateCompleted)}, {}}, failAt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			var calls []*gomock.Call
			for i, page := range tt.pages {
				token := ""
				if i > 0 {
					token = fmt.Sprintf("t%d", i)
				}
				out := &ec2.DescribeSnapshotsOutput{Snapshots: page}
				if i+1 < len(tt.pages) {
					out.NextToken = aws.String(fmt.Sprintf("t%d", i+1))
				}
				var err error
				if i == tt.failAt {
					out, err = nil, mockec2.NetErr()
				}
				calls = append(calls, f.Src().M.EXPECT().DescribeSnapshots(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
					func(_ context.Context, in *ec2.DescribeSnapshotsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSnapshotsOutput, error) {
						if aws.ToString(in.NextToken) != token || aws.ToInt32(in.MaxResults) != ebs.DescribePageSize ||
							len(in.OwnerIds) != 1 || in.OwnerIds[0] != "self" || len(in.Filters) != 1 {
							t.Errorf("page %d request %+v", i, in)
						}
						return out, err
					}))
			}
			gomock.InOrder(calls...)
			snaps, err := ebs.DescribeSnapshots(context.Background(), f.Src().M, []types.Filter{ebs.TagFilter(model.TagBackup, mockec2.BackupName)})
			if tt.failAt >= 0 {
				mockec2.WantErr(t, err, "connection reset")
				return
			}
			mockec2.WantErr(t, err)
			if len(snaps) != tt.wantIDs {
				t.Errorf("%d snapshots, want %d", len(snaps), tt.wantIDs)
			}
		})
	}
}

func TestSleep(t *testing.T) {
	f := mockec2.NewFixture(t)
	if err := ebs.Sleep(context.Background(), f.Clk, 0); err != nil {
		t.Errorf("zero sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ebs.Sleep(ctx, f.Clk, time.Hour); err != context.Canceled {
		t.Errorf("sleep with a cancelled context: %v", err)
	}
	err, ok := mockec2.OnClock(f, time.Minute, func(ctx context.Context) error { return ebs.Sleep(ctx, f.Clk, 10*time.Second) })
	if !ok || err != nil || f.Clk.Since(mockec2.T0) < 10*time.Second {
		t.Errorf("slept %s (returned %v, %v); want 10s", f.Clk.Since(mockec2.T0), ok, err)
	}
}
