// Package mockec2 is the unit tests' EC2: one gomock EC2 per region answering from the snapshots
// a test lists, on a fake clock, with builders for snapshots and volumes as EC2 describes them.
package mockec2

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
	"github.com/sirupsen/logrus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api/ec2apitest"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api/mock"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

const (
	SrcRegion  = "us-east-1"
	DstRegion  = "us-west-2"
	BackupName = "nightly"
	// BackupUID is the UID of the backup named backupName, tagged on its snapshots.
	BackupUID = "8d5a6b0c-uid-nightly"
	VolA      = "vol-0123456789abcdef0"
)

// T0 is when every test starts on its fake clock.
var T0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// Errors as the SDK surfaces them.
var (
	APIErr      = ec2apitest.APIError
	HTTPErr     = ec2apitest.HTTPError
	NetErr      = ec2apitest.NetError
	SDKNoAnswer = ec2apitest.NoAnswer
)

// Snapshot builders.

type SnapOpt func(*types.Snapshot)

// snapshot is a snapshot of vol for backupName (tagged with its UID), started at t0.
func Snapshot(id, vol string, state types.SnapshotState, opts ...SnapOpt) types.Snapshot {
	s := types.Snapshot{
		SnapshotId: aws.String(id),
		VolumeId:   aws.String(vol),
		State:      state,
		StartTime:  aws.Time(T0),
		Tags:       []types.Tag{{Key: aws.String(model.TagBackup), Value: aws.String(BackupName)}, {Key: aws.String(model.TagBackupUID), Value: aws.String(BackupUID)}},
	}
	if state == types.SnapshotStateCompleted {
		s.Progress = aws.String("100%")
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// WithTags adds (or replaces) tags given as key, value pairs.
func WithTags(kv ...string) SnapOpt {
	return func(s *types.Snapshot) {
		for i := 0; i+1 < len(kv); i += 2 {
			model.SetTag(s, kv[i], kv[i+1])
		}
	}
}

// ToDest adds the copy intent for dstRegion.
func ToDest(kv ...string) SnapOpt {
	return WithTags(append([]string{model.TagCopyToRegion, DstRegion}, kv...)...)
}

func Progress(p string) SnapOpt { return func(s *types.Snapshot) { s.Progress = aws.String(p) } }

func StartedAt(d time.Duration) SnapOpt {
	return func(s *types.Snapshot) { s.StartTime = aws.Time(T0.Add(d)) }
}

func Message(m string) SnapOpt { return func(s *types.Snapshot) { s.StateMessage = aws.String(m) } }

// CopyOfSnap is a copy of src in dstRegion, tagged as the plugin tags copies.
func CopyOfSnap(id string, src types.Snapshot, state types.SnapshotState, opts ...SnapOpt) types.Snapshot {
	c := Snapshot(id, "vol-ffffffff", state, opts...)
	c.Tags = model.CopyTags(src, SrcRegion)
	return c
}

func TagsOf(s types.Snapshot) map[string]string { return model.TagMap(s.Tags) }

// region is one EC2 region served by a gomock mock. DescribeSnapshots answers from snaps,
// honouring snapshot IDs and volume-id/tag filters, unless failures are queued.
type Region struct {
	Name      string
	M         *mock.MockEC2
	Mu        sync.Mutex
	Snaps     []types.Snapshot
	describes int
	Failures  []error // next DescribeSnapshots answers, consumed in order
	Deleted   []string
	DeleteErr map[string]error
	Tagged    []string                   // CreateTags calls seen by serveTags
	Locks     map[string]types.LockState // snapshot ID -> its lock, answered by serveDelete's DescribeLockedSnapshots
	// BeforeDescribe, when set, runs (with mu held) before DescribeSnapshot call n (from 0) is answered.
	BeforeDescribe func(n int)
	// OnDelete, when set, runs (with mu held) before each DeleteSnapshot is answered.
	OnDelete func()
}

func (r *Region) Add(s ...types.Snapshot) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	r.Snaps = append(r.Snaps, s...)
}

func (r *Region) FailNext(errs ...error) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	r.Failures = append(r.Failures, errs...)
}

func (r *Region) DescribeCount() int {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	return r.describes
}

// ServeDescribe lets DescribeSnapshots be called any number of times.
func (r *Region) ServeDescribe() {
	r.M.EXPECT().DescribeSnapshots(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.DescribeSnapshotsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSnapshotsOutput, error) {
			r.Mu.Lock()
			defer r.Mu.Unlock()
			if r.BeforeDescribe != nil {
				r.BeforeDescribe(r.describes)
			}
			r.describes++
			if len(r.Failures) > 0 {
				err := r.Failures[0]
				r.Failures = r.Failures[1:]
				if err != nil {
					return nil, err
				}
			}
			var out []types.Snapshot
			for _, s := range r.Snaps {
				if matchesDescribe(s, in) {
					out = append(out, s)
				}
			}
			if len(in.SnapshotIds) > 0 && len(out) == 0 {
				return nil, APIErr(ec2api.CodeSnapshotNotFound)
			}
			return &ec2.DescribeSnapshotsOutput{Snapshots: out}, nil
		})
}

// ServeTags lets CreateTags be called any number of times, applying the tags to the region's
// snapshots and recording each call as "ID,ID key=value".
func (r *Region) ServeTags() {
	r.M.EXPECT().CreateTags(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
			r.Mu.Lock()
			defer r.Mu.Unlock()
			found := 0
			for i := range r.Snaps {
				if slices.Contains(in.Resources, aws.ToString(r.Snaps[i].SnapshotId)) {
					found++
					for _, t := range in.Tags {
						model.SetTag(&r.Snaps[i], aws.ToString(t.Key), aws.ToString(t.Value))
					}
				}
			}
			r.Tagged = append(r.Tagged, strings.Join(in.Resources, ",")+" "+aws.ToString(in.Tags[0].Key))
			if found == 0 && len(in.Resources) > 0 && strings.HasPrefix(in.Resources[0], "snap-") {
				return nil, APIErr(ec2api.CodeSnapshotNotFound) // as EC2 answers for a snapshot it does not know
			}
			return &ec2.CreateTagsOutput{}, nil
		})
}

// ServeDelete lets DeleteSnapshot be called any number of times; it records each and removes
// the snapshot, answering NotFound for one that is not there. DescribeLockedSnapshots answers
// from locks.
func (r *Region) ServeDelete() {
	r.M.EXPECT().DescribeLockedSnapshots(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.DescribeLockedSnapshotsInput, _ ...func(*ec2.Options)) (*ec2.DescribeLockedSnapshotsOutput, error) {
			r.Mu.Lock()
			defer r.Mu.Unlock()
			out := &ec2.DescribeLockedSnapshotsOutput{}
			for _, id := range in.SnapshotIds {
				if st, ok := r.Locks[id]; ok {
					out.Snapshots = append(out.Snapshots, types.LockedSnapshotsInfo{SnapshotId: aws.String(id), LockState: st, LockExpiresOn: aws.Time(T0.Add(24 * time.Hour))})
				}
			}
			return out, nil
		})
	r.M.EXPECT().DeleteSnapshot(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.DeleteSnapshotInput, _ ...func(*ec2.Options)) (*ec2.DeleteSnapshotOutput, error) {
			r.Mu.Lock()
			defer r.Mu.Unlock()
			id := aws.ToString(in.SnapshotId)
			if r.OnDelete != nil {
				r.OnDelete()
			}
			r.Deleted = append(r.Deleted, id)
			if err := r.DeleteErr[id]; err != nil {
				return nil, err
			}
			for i, s := range r.Snaps {
				if aws.ToString(s.SnapshotId) == id {
					r.Snaps = append(r.Snaps[:i], r.Snaps[i+1:]...)
					return &ec2.DeleteSnapshotOutput{}, nil
				}
			}
			return nil, APIErr(ec2api.CodeSnapshotNotFound)
		})
}

func matchesDescribe(s types.Snapshot, in *ec2.DescribeSnapshotsInput) bool {
	if len(in.SnapshotIds) > 0 && !slices.Contains(in.SnapshotIds, aws.ToString(s.SnapshotId)) {
		return false
	}
	tags := model.TagMap(s.Tags)
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

// Fixture holds a fake clock and one mocked EC2 per region.
type Fixture struct {
	t       testing.TB
	Clk     *clocktesting.FakeClock
	Regions map[string]*Region
	// TagRefusals makes serveTracker's CreateTags refuse any request naming these snapshots.
	TagRefusals map[string]error
	// CopyDelay is how long each CopySnapshot of serveTracker takes on the fake clock.
	CopyDelay time.Duration
}

func NewFixture(t testing.TB) *Fixture {
	ctrl := gomock.NewController(t)
	f := &Fixture{t: t, Clk: clocktesting.NewFakeClock(T0), Regions: map[string]*Region{}}
	for _, name := range []string{SrcRegion, DstRegion} {
		f.Regions[name] = &Region{Name: name, M: mock.NewMockEC2(ctrl), DeleteErr: map[string]error{}, Locks: map[string]types.LockState{}}
	}
	return f
}

func (f *Fixture) Src() *Region { return f.Regions[SrcRegion] }
func (f *Fixture) Dst() *Region { return f.Regions[DstRegion] }

func (f *Fixture) Clients() ec2api.Regional {
	return func(_ context.Context, name string) (ec2api.EC2, error) {
		r, ok := f.Regions[name]
		if !ok {
			f.t.Errorf("client asked for unexpected region %q", name)
			return nil, fmt.Errorf("no region %q", name)
		}
		return r.M, nil
	}
}

func (f *Fixture) Opts(extra ...ebs.Option) []ebs.Option {
	log := logrus.New()
	log.Out = io.Discard
	return append([]ebs.Option{ebs.WithClock(f.Clk), ebs.WithLogger(log)}, extra...)
}

// OnClock runs fn in a goroutine and steps the fake clock by a second whenever fn waits on it,
// until fn returns or limit of fake time has passed. ok is false when fn did not return.
func OnClock[T any](f *Fixture, limit time.Duration, fn func(ctx context.Context) T) (res T, ok bool) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan T, 1)
	go func() { done <- fn(ctx) }()
	end := f.Clk.Now().Add(limit)
	realDeadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case res = <-done:
			return res, true
		default:
		}
		if f.Clk.Now().After(end) || time.Now().After(realDeadline) {
			cancel()
			select {
			case <-done:
			case <-time.After(time.Second):
			}
			return res, false
		}
		if f.Clk.HasWaiters() {
			f.Clk.Step(time.Second)
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// WantErr checks err against substrings: none means no error is wanted.
func WantErr(t *testing.T, err error, subs ...string) {
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

// ExpectVolume answers exactly one DescribeVolumes for volA.
func (f *Fixture) ExpectVolume(v types.Volume) {
	f.Src().M.EXPECT().DescribeVolumes(gomock.Any(), gomock.Eq(&ec2.DescribeVolumesInput{VolumeIds: []string{VolA}}), gomock.Any()).
		Return(&ec2.DescribeVolumesOutput{Volumes: []types.Volume{v}}, nil)
}

// volume is an EBS volume with the given type, IOPS and throughput (0 for none) and tags.
func Volume(typ types.VolumeType, iops, throughput int32, kv ...string) types.Volume {
	v := types.Volume{VolumeId: aws.String(VolA), VolumeType: typ, AvailabilityZone: aws.String("us-east-1a")}
	if iops != 0 {
		v.Iops = aws.Int32(iops)
	}
	if throughput != 0 {
		v.Throughput = aws.Int32(throughput)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Tags = append(v.Tags, types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return v
}

// PlacesOf is a Locator finding every operation in its places.
type PlacesOf []ebs.Place

func (l PlacesOf) BackupPlaces(context.Context, *velerov1.Backup, string) ([]ebs.Place, error) {
	return l, nil
}

func (l PlacesOf) RestorePlaces(context.Context, *velerov1.Restore, string) ([]ebs.Place, error) {
	return l, nil
}

// Numbered returns n tags prefix00..prefixNN with value v.
func Numbered(prefix string, n int) map[string]string {
	m := map[string]string{}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("%s%02d", prefix, i)] = "v"
	}
	return m
}
