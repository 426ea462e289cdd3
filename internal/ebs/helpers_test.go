package ebs

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
	"github.com/sirupsen/logrus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api/ec2apitest"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api/mock"
)

const (
	srcRegion  = "us-east-1"
	dstRegion  = "us-west-2"
	backupName = "nightly"
	// backupUID is the UID of the backup named backupName, tagged on its snapshots.
	backupUID = "8d5a6b0c-uid-nightly"
	volA      = "vol-0123456789abcdef0"
)

// t0 is when every test starts on its fake clock.
var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// Errors as the SDK surfaces them.
var (
	apiErr      = ec2apitest.APIError
	httpErr     = ec2apitest.HTTPError
	netErr      = ec2apitest.NetError
	sdkNoAnswer = ec2apitest.NoAnswer
)

// Snapshot builders.

type snapOpt func(*types.Snapshot)

// snapshot is a snapshot of vol for backupName (tagged with its UID), started at t0.
func snapshot(id, vol string, state types.SnapshotState, opts ...snapOpt) types.Snapshot {
	s := types.Snapshot{
		SnapshotId: aws.String(id),
		VolumeId:   aws.String(vol),
		State:      state,
		StartTime:  aws.Time(t0),
		Tags:       []types.Tag{{Key: aws.String(TagBackup), Value: aws.String(backupName)}, {Key: aws.String(TagBackupUID), Value: aws.String(backupUID)}},
	}
	if state == types.SnapshotStateCompleted {
		s.Progress = aws.String("100%")
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// withTags adds (or replaces) tags given as key, value pairs.
func withTags(kv ...string) snapOpt {
	return func(s *types.Snapshot) {
		for i := 0; i+1 < len(kv); i += 2 {
			setTag(s, kv[i], kv[i+1])
		}
	}
}

// toDest adds the copy intent for dstRegion.
func toDest(kv ...string) snapOpt {
	return withTags(append([]string{TagCopyToRegion, dstRegion}, kv...)...)
}

func progress(p string) snapOpt { return func(s *types.Snapshot) { s.Progress = aws.String(p) } }

func startedAt(d time.Duration) snapOpt {
	return func(s *types.Snapshot) { s.StartTime = aws.Time(t0.Add(d)) }
}

func message(m string) snapOpt { return func(s *types.Snapshot) { s.StateMessage = aws.String(m) } }

// copyOfSnap is a copy of src in dstRegion, tagged as the plugin tags copies.
func copyOfSnap(id string, src types.Snapshot, state types.SnapshotState, opts ...snapOpt) types.Snapshot {
	c := snapshot(id, "vol-ffffffff", state, opts...)
	c.Tags = copyTags(src, srcRegion)
	return c
}

func tagsOf(s types.Snapshot) map[string]string { return tagMap(s.Tags) }

// region is one EC2 region served by a gomock mock. DescribeSnapshots answers from snaps,
// honouring snapshot IDs and volume-id/tag filters, unless failures are queued.
type region struct {
	name      string
	m         *mock.MockEC2
	mu        sync.Mutex
	snaps     []types.Snapshot
	describes int
	failures  []error // next DescribeSnapshots answers, consumed in order
	deleted   []string
	deleteErr map[string]error
	tagged    []string                   // CreateTags calls seen by serveTags
	locks     map[string]types.LockState // snapshot ID -> its lock, answered by serveDelete's DescribeLockedSnapshots
	// beforeDescribe, when set, runs (with mu held) before DescribeSnapshot call n (from 0) is answered.
	beforeDescribe func(n int)
	// onDelete, when set, runs (with mu held) before each DeleteSnapshot is answered.
	onDelete func()
}

func (r *region) add(s ...types.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps = append(r.snaps, s...)
}

func (r *region) failNext(errs ...error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, errs...)
}

func (r *region) describeCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.describes
}

// serveDescribe lets DescribeSnapshots be called any number of times.
func (r *region) serveDescribe() {
	r.m.EXPECT().DescribeSnapshots(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.DescribeSnapshotsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSnapshotsOutput, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.beforeDescribe != nil {
				r.beforeDescribe(r.describes)
			}
			r.describes++
			if len(r.failures) > 0 {
				err := r.failures[0]
				r.failures = r.failures[1:]
				if err != nil {
					return nil, err
				}
			}
			var out []types.Snapshot
			for _, s := range r.snaps {
				if matchesDescribe(s, in) {
					out = append(out, s)
				}
			}
			if len(in.SnapshotIds) > 0 && len(out) == 0 {
				return nil, apiErr(ec2api.CodeSnapshotNotFound)
			}
			return &ec2.DescribeSnapshotsOutput{Snapshots: out}, nil
		})
}

// serveTags lets CreateTags be called any number of times, applying the tags to the region's
// snapshots and recording each call as "ID,ID key=value".
func (r *region) serveTags() {
	r.m.EXPECT().CreateTags(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			found := 0
			for i := range r.snaps {
				if slices.Contains(in.Resources, aws.ToString(r.snaps[i].SnapshotId)) {
					found++
					for _, t := range in.Tags {
						setTag(&r.snaps[i], aws.ToString(t.Key), aws.ToString(t.Value))
					}
				}
			}
			r.tagged = append(r.tagged, strings.Join(in.Resources, ",")+" "+aws.ToString(in.Tags[0].Key))
			if found == 0 && len(in.Resources) > 0 && strings.HasPrefix(in.Resources[0], "snap-") {
				return nil, apiErr(ec2api.CodeSnapshotNotFound) // as EC2 answers for a snapshot it does not know
			}
			return &ec2.CreateTagsOutput{}, nil
		})
}

// serveDelete lets DeleteSnapshot be called any number of times; it records each and removes
// the snapshot, answering NotFound for one that is not there. DescribeLockedSnapshots answers
// from locks.
func (r *region) serveDelete() {
	r.m.EXPECT().DescribeLockedSnapshots(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.DescribeLockedSnapshotsInput, _ ...func(*ec2.Options)) (*ec2.DescribeLockedSnapshotsOutput, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			out := &ec2.DescribeLockedSnapshotsOutput{}
			for _, id := range in.SnapshotIds {
				if st, ok := r.locks[id]; ok {
					out.Snapshots = append(out.Snapshots, types.LockedSnapshotsInfo{SnapshotId: aws.String(id), LockState: st, LockExpiresOn: aws.Time(t0.Add(24 * time.Hour))})
				}
			}
			return out, nil
		})
	r.m.EXPECT().DeleteSnapshot(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.DeleteSnapshotInput, _ ...func(*ec2.Options)) (*ec2.DeleteSnapshotOutput, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			id := aws.ToString(in.SnapshotId)
			if r.onDelete != nil {
				r.onDelete()
			}
			r.deleted = append(r.deleted, id)
			if err := r.deleteErr[id]; err != nil {
				return nil, err
			}
			for i, s := range r.snaps {
				if aws.ToString(s.SnapshotId) == id {
					r.snaps = append(r.snaps[:i], r.snaps[i+1:]...)
					return &ec2.DeleteSnapshotOutput{}, nil
				}
			}
			return nil, apiErr(ec2api.CodeSnapshotNotFound)
		})
}

func matchesDescribe(s types.Snapshot, in *ec2.DescribeSnapshotsInput) bool {
	if len(in.SnapshotIds) > 0 && !slices.Contains(in.SnapshotIds, aws.ToString(s.SnapshotId)) {
		return false
	}
	tags := tagMap(s.Tags)
	for _, f := range in.Filters {
		name := aws.ToString(f.Name)
		var have string
		switch {
		case name == "volume-id":
			have = aws.ToString(s.VolumeId)
		case name == "snapshot-id":
			have = aws.ToString(s.SnapshotId)
		case name == "status":
			have = string(s.State)
		case strings.HasPrefix(name, "tag:"):
			v, ok := tags[strings.TrimPrefix(name, "tag:")]
			if !ok {
				return false
			}
			have = v
		default:
			panic("filter not understood by the test: " + name)
		}
		if !slices.Contains(f.Values, have) {
			return false
		}
	}
	return true
}

// fixture holds a fake clock and one mocked EC2 per region.
type fixture struct {
	t       testing.TB
	clk     *clocktesting.FakeClock
	regions map[string]*region
	// tagRefusals makes serveTracker's CreateTags refuse any request naming these snapshots.
	tagRefusals map[string]error
	// copyDelay is how long each CopySnapshot of serveTracker takes on the fake clock.
	copyDelay time.Duration
}

func newFixture(t testing.TB) *fixture {
	ctrl := gomock.NewController(t)
	f := &fixture{t: t, clk: clocktesting.NewFakeClock(t0), regions: map[string]*region{}}
	for _, name := range []string{srcRegion, dstRegion} {
		f.regions[name] = &region{name: name, m: mock.NewMockEC2(ctrl), deleteErr: map[string]error{}, locks: map[string]types.LockState{}}
	}
	return f
}

func (f *fixture) src() *region { return f.regions[srcRegion] }
func (f *fixture) dst() *region { return f.regions[dstRegion] }

func (f *fixture) clients() ec2api.Regional {
	return func(_ context.Context, name string) (ec2api.EC2, error) {
		r, ok := f.regions[name]
		if !ok {
			f.t.Errorf("client asked for unexpected region %q", name)
			return nil, fmt.Errorf("no region %q", name)
		}
		return r.m, nil
	}
}

func (f *fixture) opts(extra ...Option) []Option {
	log := logrus.New()
	log.Out = io.Discard
	return append([]Option{WithClock(f.clk), WithLogger(log)}, extra...)
}


// onClock runs fn in a goroutine and steps the fake clock by a second whenever fn waits on it,
// until fn returns or limit of fake time has passed. ok is false when fn did not return.
func onClock[T any](f *fixture, limit time.Duration, fn func(ctx context.Context) T) (res T, ok bool) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan T, 1)
	go func() { done <- fn(ctx) }()
	end := f.clk.Now().Add(limit)
	realDeadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case res = <-done:
			return res, true
		default:
		}
		if f.clk.Now().After(end) || time.Now().After(realDeadline) {
			cancel()
			select {
			case <-done:
			case <-time.After(time.Second):
			}
			return res, false
		}
		if f.clk.HasWaiters() {
			f.clk.Step(time.Second)
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// wantErr checks err against substrings: none means no error is wanted.
func wantErr(t *testing.T, err error, subs ...string) {
	t.Helper()
	if len(subs) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error; want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}
