package tracking

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// readySources are n completed snapshots of the backup bound for dstRegion, the oldest first.
func readySources(n int) []types.Snapshot {
	out := make([]types.Snapshot, n)
	for i := range out {
		out[i] = mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(time.Duration(i)*time.Minute))
	}
	return out
}

// othersCopies are n copies into dstRegion made by the plugin for another backup ("hourly").
func othersCopies(n int, state types.SnapshotState, started time.Duration) []types.Snapshot {
	out := make([]types.Snapshot, n)
	for i := range out {
		src := mockec2.Snapshot(fmt.Sprintf("snap-e%07x", i), volN(1000+i), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.WithTags(model.TagBackup, "hourly", model.TagBackupUID, "uid-hourly"))
		out[i] = mockec2.CopyOfSnap(fmt.Sprintf("snap-d%07x", i), src, state, mockec2.StartedAt(started))
	}
	return out
}

// toolsCopies are n pending copies into dstRegion made by another tool: no plugin tags, only
// the transfer type EC2 reports for copies.
func toolsCopies(n int) []types.Snapshot {
	out := make([]types.Snapshot, n)
	for i := range out {
		out[i] = types.Snapshot{SnapshotId: aws.String(fmt.Sprintf("snap-f%07x", i)), VolumeId: aws.String("vol-ffffffff"),
			State: types.SnapshotStatePending, StartTime: aws.Time(mockec2.T0.Add(-time.Hour)), TransferType: types.TransferTypeStandard}
	}
	return out
}

// snapshotsBeingTaken are n pending snapshots of volumes in dstRegion: not copies.
func snapshotsBeingTaken(n int) []types.Snapshot {
	out := make([]types.Snapshot, n)
	for i := range out {
		out[i] = types.Snapshot{SnapshotId: aws.String(fmt.Sprintf("snap-b%07x", i)), VolumeId: aws.String(volN(2000 + i)),
			State: types.SnapshotStatePending, StartTime: aws.Time(mockec2.T0.Add(-time.Hour))}
	}
	return out
}

// Copy slots and the CopySnapshot request rate are the account's in the destination, shared
// with other backups and other tools: judged from EC2's listing of the account's pending copies
// there, asked for only when the backup has a source awaiting its copy.
func TestCopySlotsAreTheAccounts(t *testing.T) {
	recently := -5 * time.Second
	tests := []struct {
		name        string
		sources     []types.Snapshot // the backup's, in the source region; the operation follows the last
		west        []types.Snapshot // in the destination, besides the backup's copies
		westFails   []error          // DescribeSnapshots answers in the destination, in turn
		limit       int              // copies in flight per destination; 0: EC2's quota
		copyAnswers []error          // for the oldest source
		requests    int              // CopySnapshot calls wanted
		describes   int              // DescribeSnapshots wanted in the destination
		want        want
	}{
		{name: "another backup's 15 copies leave 5 slots", sources: readySources(8), west: othersCopies(15, types.SnapshotStatePending, -time.Hour),
			requests: 5, describes: 2,
			want: want{n: 100, total: 200, desc: "waiting for a copy slot in us-west-2 (20 copies in flight in the account, 5 of this backup)"}},
		{name: "another tool's copies count", sources: readySources(10), west: toolsCopies(12),
			requests: 8, describes: 2,
			want: want{n: 100, total: 200, desc: "waiting for a copy slot in us-west-2 (20 copies in flight in the account, 8 of this backup)"}},
		{name: "snapshots being taken in the destination take no slot", sources: readySources(3), west: snapshotsBeingTaken(30),
			requests: 3, describes: 2, want: want{n: 100, total: 200, desc: "copy snap-c0000003 to us-west-2: 0%"}},
		{name: "finished copies take no slot", sources: readySources(3), west: othersCopies(25, types.SnapshotStateCompleted, -time.Hour),
			requests: 3, describes: 2, want: want{n: 100, total: 200, desc: "copy snap-c0000003 to us-west-2: 0%"}},
		{name: "20 in flight: no copy asked for", sources: readySources(2), west: othersCopies(20, types.SnapshotStatePending, -time.Hour),
			describes: 2,
			want:      want{n: 100, total: 200, desc: "waiting for a copy slot in us-west-2 (20 copies in flight in the account, 0 of this backup)"}},
		{name: "others' recent starts spend the request rate", sources: readySources(10), west: othersCopies(46, types.SnapshotStatePending, recently), limit: 100,
			requests: 4, describes: 2,
			want: want{n: 100, total: 200, desc: "waiting for EC2's CopySnapshot request rate in us-west-2 (50 copies started in the last 10s; 50 copies in flight in the account, 4 of this backup)"}},
		{name: "others' starts before the window do not", sources: readySources(10), west: othersCopies(46, types.SnapshotStatePending, -11*time.Second), limit: 100,
			requests: 10, describes: 2, want: want{n: 100, total: 200, desc: "copy snap-c000000a to us-west-2: 0%"}},
		{name: "EC2 queues despite free slots: waiting, not failed", sources: readySources(2), west: othersCopies(15, types.SnapshotStatePending, -time.Hour),
			copyAnswers: []error{mockec2.HTTPErr(400, ec2api.CodeResourceLimitExceeded)}, requests: 1, describes: 2,
			want: want{n: 100, total: 200, desc: "waiting to copy snap-00000001 to us-west-2: EC2 queued the copy: ResourceLimitExceeded (15 copies in flight in the account, 0 of this backup)"}},
		{name: "listing throttled: waiting", sources: readySources(2), westFails: []error{nil, mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded)},
			describes: 2,
			want:      want{n: 100, total: 200, desc: "waiting to copy snap-00000001 to us-west-2: describing the account's pending copies in us-west-2"}},
		{name: "nothing awaiting a copy: no listing", describes: 1,
			sources: []types.Snapshot{mockec2.Snapshot("snap-00000000", volN(0), types.SnapshotStatePending, mockec2.ToDest(), mockec2.Progress("10%"))},
			west:    othersCopies(20, types.SnapshotStatePending, -time.Hour),
			want:    want{n: 10, total: 200, desc: "snapshot snap-00000000 in us-east-1: 10%"}},
		{name: "every copy started: no listing", describes: 1, sources: readySources(1),
			west: []types.Snapshot{mockec2.CopyOfSnap("snap-c0000099", readySources(1)[0], types.SnapshotStatePending, mockec2.Progress("40%"))},
			want: want{n: 140, total: 200, desc: "copy snap-c0000099 to us-west-2: 40%"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(tt.sources...)
			f.Dst().Add(tt.west...)
			f.Dst().FailNext(tt.westFails...)
			m := serveTracker(f, map[string][]error{"snap-00000000": tt.copyAnswers})
			var opts []ebs.Option
			if tt.limit != 0 {
				opts = append(opts, ebs.WithCopyLimit(tt.limit))
			}
			p, err := reconcile(newTracker(f, opts...), len(tt.sources), inProgress)
			checkProgress(t, p, err, tt.want)
			if got := m.count("CopySnapshot"); got != tt.requests {
				t.Errorf("%d CopySnapshot calls, want %d", got, tt.requests)
			}
			if got := m.count("CreateTags"); tt.requests == 0 && got != 0 {
				t.Errorf("%d CreateTags calls with no copy to ask for, want none", got)
			}
			if got := f.Dst().DescribeCount(); got != tt.describes {
				t.Errorf("%d DescribeSnapshots in us-west-2, want %d", got, tt.describes)
			}
		})
	}
}

// A copy this plugin asked for counts against the account's slots while EC2 does not list it
// yet: one whose answer was lost, and one EC2 made but lists late.
func TestCopySlotsCountCopiesNotListedYet(t *testing.T) {
	f := mockec2.NewFixture(t)
	f.Src().Add(readySources(4)...)
	f.Dst().Add(othersCopies(17, types.SnapshotStatePending, -time.Hour)...)
	m := serveTracker(f, map[string][]error{"snap-00000000": {mockec2.NetErr()}})
	tr := newTracker(f)
	p, err := reconcile(tr, 4, inProgress)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "waiting for a copy slot in us-west-2 (20 copies in flight in the account, 3 of this backup)"})
	if got := m.count("CopySnapshot"); got != 3 {
		t.Fatalf("%d CopySnapshot calls, want the 3 free slots filled", got)
	}
	listLate := hideCopiesOf(f.Dst(), "snap-00000001") // EC2 made it but does not list it yet

	f.Clk.Step(10 * time.Second) // the next reconcile, within the listing lag
	p, err = tr.Progress(context.Background(), opID(volN(3)), inProgress)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "waiting for a copy slot in us-west-2 (20 copies in flight in the account, 3 of this backup)"})
	if got := m.count("CopySnapshot"); got != 3 {
		t.Errorf("%d CopySnapshot calls, want still 3: the unlisted copies hold their slots", got)
	}

	listLate()
	f.Clk.Step(21 * time.Second) // past the listing lag: the unanswered request made nothing
	p, err = tr.Progress(context.Background(), opID(volN(3)), inProgress)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "waiting for a copy slot in us-west-2 (20 copies in flight in the account, 3 of this backup)"})
	if got := m.count("CopySnapshot"); got != 4 || aws.ToString(m.copies[3].SourceSnapshotId) != "snap-00000000" {
		t.Errorf("CopySnapshot calls %q; want a 4th, for the oldest source, in the slot its unanswered request held", m.log)
	}
}

// hideCopiesOf removes the copies of a source from what a region lists, until the returned
// function puts them back.
func hideCopiesOf(r *mockec2.Region, sourceID string) (listThem func()) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	var kept, hidden []types.Snapshot
	for _, s := range r.Snaps {
		if model.TagMap(s.Tags)[model.TagSourceSnapshotID] == sourceID {
			hidden = append(hidden, s)
		} else {
			kept = append(kept, s)
		}
	}
	r.Snaps = kept
	return func() { r.Add(hidden...) }
}

// One reconcile lists the account's copies in the destination once, whatever its number of
// operations; the next reconcile lists them again only when the backup's own copies in flight
// leave a slot that may be free.
func TestCopySlotsListedOncePerReconcile(t *testing.T) {
	f := mockec2.NewFixture(t)
	const n = 25
	f.Src().Add(readySources(n)...)
	m := serveTracker(f, nil)
	tr := newTracker(f)
	for round := 1; round <= 2; round++ {
		for i := 0; i < n; i++ {
			if _, err := tr.Progress(context.Background(), opID(volN(i)), inProgress); err != nil {
				t.Fatal(err)
			}
		}
		// The first reconcile: the backup's copies, and the account's pending copies; the
		// second, only the backup's copies, its own 20 in flight filling every slot.
		if got, want := f.Dst().DescribeCount(), []int{2, 3}[round-1]; got != want {
			t.Errorf("round %d: %d DescribeSnapshots in us-west-2, want %d", round, got, want)
		}
		f.Clk.Step(10 * time.Second)
	}
	if got := m.count("CopySnapshot"); got != 20 {
		t.Errorf("%d CopySnapshot calls, want the 20 slots", got)
	}
}
