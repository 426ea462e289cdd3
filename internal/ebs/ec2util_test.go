package ebs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
)

// describeSnapshots follows every page, asking for this account's snapshots, 1000 a page.
func TestDescribeSnapshotsPages(t *testing.T) {
	tests := []struct {
		name    string
		pages   [][]types.Snapshot
		failAt  int // page whose request fails; -1 for none
		wantIDs int
	}{
		{name: "one page", pages: [][]types.Snapshot{{snapshot("snap-00000001", volA, types.SnapshotStateCompleted)}}, failAt: -1, wantIDs: 1},
		{name: "three pages", pages: [][]types.Snapshot{
			{snapshot("snap-00000001", volA, types.SnapshotStateCompleted), snapshot("snap-00000002", volA, types.SnapshotStateCompleted)},
			{},
			{snapshot("snap-00000003", volA, types.SnapshotStateCompleted)},
		}, failAt: -1, wantIDs: 3},
		{name: "second page fails", pages: [][]types.Snapshot{{snapshot("snap-00000001", volA, types.SnapshotStateCompleted)}, {}}, failAt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
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
					out, err = nil, netErr()
				}
				calls = append(calls, f.src().m.EXPECT().DescribeSnapshots(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
					func(_ context.Context, in *ec2.DescribeSnapshotsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSnapshotsOutput, error) {
						if aws.ToString(in.NextToken) != token || aws.ToInt32(in.MaxResults) != describePageSize ||
							len(in.OwnerIds) != 1 || in.OwnerIds[0] != "self" || len(in.Filters) != 1 {
							t.Errorf("page %d request %+v", i, in)
						}
						return out, err
					}))
			}
			gomock.InOrder(calls...)
			snaps, err := describeSnapshots(context.Background(), f.src().m, []types.Filter{tagFilter(TagBackup, backupName)})
			if tt.failAt >= 0 {
				wantErr(t, err, "connection reset")
				return
			}
			wantErr(t, err)
			if len(snaps) != tt.wantIDs {
				t.Errorf("%d snapshots, want %d", len(snaps), tt.wantIDs)
			}
		})
	}
}

func TestSleep(t *testing.T) {
	f := newFixture(t)
	if err := sleep(context.Background(), f.clk, 0); err != nil {
		t.Errorf("zero sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, f.clk, time.Hour); err != context.Canceled {
		t.Errorf("sleep with a cancelled context: %v", err)
	}
	err, ok := onClock(f, time.Minute, func(ctx context.Context) error { return sleep(ctx, f.clk, 10*time.Second) })
	if !ok || err != nil || f.clk.Since(t0) < 10*time.Second {
		t.Errorf("slept %s (returned %v, %v); want 10s", f.clk.Since(t0), ok, err)
	}
}
