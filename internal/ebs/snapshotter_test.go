package ebs

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// volume is an EBS volume with the given type, IOPS and throughput (0 for none) and tags.
func volume(typ types.VolumeType, iops, throughput int32, kv ...string) types.Volume {
	v := types.Volume{VolumeId: aws.String(volA), VolumeType: typ, AvailabilityZone: aws.String("us-east-1a")}
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

// expectVolume answers exactly one DescribeVolumes for volA.
func (f *fixture) expectVolume(v types.Volume) {
	f.src().m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Eq(&ec2.DescribeVolumesInput{VolumeIds: []string{volA}}), gomock.Any()).
		Return(&ec2.DescribeVolumesOutput{Volumes: []types.Volume{v}}, nil)
}

// createCalls answers CreateSnapshot from answers (nil: success with snap-0000000N; the last
// answer repeats) and records the input and clock time of each call. A request that succeeds,
// or that madeDespite names, makes its snapshot in the source region with the request's tags,
// listed from then on. CreateTags (the recorded mark) is applied and counted.
type createCalls struct {
	ins         []*ec2.CreateSnapshotInput
	times       []time.Time
	before      func(n int)  // called before answering call n (from 0), when set
	madeDespite map[int]bool // calls that take effect although they fail
	marked      []string     // "ID=value" of each recorded mark written
	markErrs    []error      // answers to successive CreateTags calls (none: success)
}

func (f *fixture) serveCreate(answers ...error) *createCalls {
	cc := &createCalls{madeDespite: map[int]bool{}}
	f.src().m.EXPECT().CreateSnapshot(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.CreateSnapshotInput, _ ...func(*ec2.Options)) (*ec2.CreateSnapshotOutput, error) {
			n := len(cc.ins)
			if cc.before != nil {
				cc.before(n)
			}
			cc.ins = append(cc.ins, in)
			cc.times = append(cc.times, f.clk.Now())
			id := fmt.Sprintf("snap-%08x", n+1)
			err := answers[min(n, len(answers)-1)]
			if err == nil || cc.madeDespite[n] {
				f.src().add(types.Snapshot{SnapshotId: aws.String(id), VolumeId: in.VolumeId, State: types.SnapshotStatePending,
					StartTime: aws.Time(f.clk.Now()), Tags: in.TagSpecifications[0].Tags})
			}
			if err != nil {
				return nil, err
			}
			return &ec2.CreateSnapshotOutput{SnapshotId: aws.String(id)}, nil
		})
	f.src().m.EXPECT().CreateTags(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
			if len(cc.markErrs) > 0 {
				err := cc.markErrs[0]
				cc.markErrs = cc.markErrs[1:]
				if err != nil {
					return nil, err
				}
			}
			for _, id := range in.Resources {
				cc.marked = append(cc.marked, id+"="+tagMap(in.Tags)[TagRecorded])
			}
			return &ec2.CreateTagsOutput{}, nil
		})
	return cc
}

// token is the create token of call n.
func (cc *createCalls) token(n int) string {
	return tagMap(cc.ins[n].TagSpecifications[0].Tags)[TagCreateToken]
}

var veleroTags = map[string]string{TagBackup: backupName, TagPV: "pv-1", "app": "web"}

func copyConfig() Config {
	return Config{Region: srcRegion, CopyToRegion: dstRegion, CopyKMSKeyID: "alias/dr", CopyCompletionMinutes: 60}
}

func TestCreateSnapshotTags(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		vol    types.Volume
		velero map[string]string
		want   map[string]string
	}{
		{
			name: "copy intent, gp3 settings, Velero's and the volume's tags",
			cfg:  copyConfig(),
			vol:  volume(types.VolumeTypeGp3, 3000, 125, "Name", "data", "aws:cloudformation:stack-name", "s", "AWS:x", "y", TagBackup, "old-backup"),
			velero: map[string]string{TagBackup: backupName, TagPV: "pv-1", "app": "web",
				TagCopyToRegion: "eu-west-1"}, // a backup label colliding with the plugin's key
			want: map[string]string{
				TagVolumeType: "gp3", TagVolumeIOPS: "3000", TagVolumeThroughput: "125", TagVolumeAZ: "us-east-1a",
				TagCopyToRegion: dstRegion, TagCopyKMSKeyID: "alias/dr", TagCopyCompletionMinutes: "60",
				TagBackup: backupName, TagPV: "pv-1", "app": "web", "Name": "data",
			},
		},
		{
			name:   "no copy: no intent; st1 has neither IOPS nor throughput",
			cfg:    Config{Region: srcRegion},
			vol:    volume(types.VolumeTypeSt1, 0, 0),
			velero: veleroTags,
			want:   map[string]string{TagVolumeType: "st1", TagVolumeAZ: "us-east-1a", TagBackup: backupName, TagPV: "pv-1", "app": "web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.expectVolume(tt.vol) // once: CreateSnapshot reuses GetVolumeInfo's answer
			cc := f.serveCreate(nil)
			s := newSnapshotter(f, tt.cfg)
			if _, _, err := s.GetVolumeInfo(context.Background(), volA); err != nil {
				t.Fatal(err)
			}
			id, err := s.CreateSnapshot(context.Background(), volA, tt.velero)
			wantErr(t, err)
			if id != "snap-00000001" || len(cc.ins) != 1 {
				t.Fatalf("got %q after %d CreateSnapshot calls; want snap-00000001 after 1", id, len(cc.ins))
			}
			in := cc.ins[0]
			if aws.ToString(in.VolumeId) != volA || len(in.TagSpecifications) != 1 || in.TagSpecifications[0].ResourceType != types.ResourceTypeSnapshot {
				t.Fatalf("bad request: %+v", in)
			}
			got := tagMap(in.TagSpecifications[0].Tags)
			if len(got[TagCreateToken]) != 2*createTokenBytes {
				t.Errorf("create token %q, want %d hex digits", got[TagCreateToken], 2*createTokenBytes)
			}
			delete(got, TagCreateToken)
			tt.want[TagRecorded] = recordedPending // until CreateSnapshot returns it
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("tags\n got %v\nwant %v", got, tt.want)
			}
			if !strings.Contains(aws.ToString(in.Description), backupName) {
				t.Errorf("description %q does not name the backup", aws.ToString(in.Description))
			}
		})
	}
}

func TestCreateSnapshotRetries(t *testing.T) {
	tests := []struct {
		name        string
		create      []error // answers to successive CreateSnapshot calls; nil = success
		listed      bool    // the first request made a snapshot despite its error
		lookupFails []error // answers to the first DescribeSnapshots lookups
		patience    time.Duration
		wantID      string
		wantErr     []string
		wantCreates int // 0: at least 2
		minGap      time.Duration
		// wantMark is the recorded mark written on the snapshot returned: recordedReturned when not set.
		wantMark string
		markErrs []error
		// deleteErr answers the DeleteSnapshot of a snapshot made and not returned; wantDeleted
		// are the snapshots deleted.
		deleteErr   error
		wantDeleted []string
	}{
		{name: "success", create: []error{nil}, wantID: "snap-00000001", wantCreates: 1},
		// Velero records a failure and no snapshot: the snapshot made is deleted at once, else
		// the tracker or the backup's deletion deletes what is still marked pending.
		{name: "the returned mark cannot be written: the snapshot is deleted", create: []error{nil}, markErrs: []error{httpErr(400, "UnauthorizedOperation")}, wantCreates: 1,
			wantErr: []string{"snap-00000001", "was made, but marking it", "was deleted, so no snapshot of this volume is left"}, wantDeleted: []string{"snap-00000001"}},
		{name: "the returned mark cannot be written nor the snapshot deleted", create: []error{nil}, markErrs: []error{httpErr(400, "UnauthorizedOperation")}, wantCreates: 1,
			deleteErr: httpErr(400, "UnauthorizedOperation"),
			wantErr:   []string{"snap-00000001", "was made, but marking it", "deleting it failed too"}, wantDeleted: []string{"snap-00000001"}},
		{name: "the returned mark throttled, then written", create: []error{nil}, markErrs: []error{httpErr(503, ec2api.CodeRequestLimitExceeded)},
			wantID: "snap-00000001", wantCreates: 1},
		{name: "per-volume rate waits 15s", create: []error{httpErr(400, ec2api.CodeSnapshotCreationPerVolumeRateExceeded), nil},
			wantID: "snap-00000002", wantCreates: 2, minGap: 15 * time.Second},
		{name: "concurrent limit retried", create: []error{httpErr(400, ec2api.CodeConcurrentSnapshotLimitExceeded), httpErr(400, ec2api.CodeConcurrentSnapshotLimitExceeded), nil},
			wantID: "snap-00000003", wantCreates: 3, minGap: 15 * time.Second},
		{name: "throttling beyond the SDK's retries", create: []error{httpErr(503, ec2api.CodeRequestLimitExceeded), nil},
			wantID: "snap-00000002", wantCreates: 2, minGap: time.Second},
		{name: "patience exhausted", create: []error{httpErr(400, ec2api.CodeSnapshotCreationPerVolumeRateExceeded)}, patience: time.Minute,
			wantErr: []string{volA, "still refused after 1m0s", ec2api.CodeSnapshotCreationPerVolumeRateExceeded}},
		{name: "definite 4xx", create: []error{httpErr(400, "InvalidParameterValue")},
			wantErr: []string{volA, srcRegion, "InvalidParameterValue"}, wantCreates: 1},
		{name: "500 but made", create: []error{httpErr(500, "InternalError")}, listed: true, wantID: "snap-00000001", wantCreates: 1},
		{name: "no answer but made", create: []error{netErr()}, listed: true, wantID: "snap-00000001", wantCreates: 1},
		{name: "no answer, lookup fails first, then finds it", create: []error{netErr()}, listed: true,
			lookupFails: []error{netErr(), httpErr(503, ec2api.CodeRequestLimitExceeded)}, wantID: "snap-00000001", wantCreates: 1},
		{name: "500 and not made", create: []error{httpErr(500, "InternalError"), nil}, wantID: "snap-00000002", wantCreates: 2, wantMark: recordedTrue},
		// Every request answered 5xx and none made a snapshot: the call stops within its patience.
		{name: "500 every time gives up within the patience", create: []error{httpErr(500, "InternalError")}, patience: 2 * time.Minute,
			wantErr: []string{volA, srcRegion, "in 2m0s got no answer or a server error", TagCreateToken, "the backup's operation deletes it", "InternalError"}},
		{name: "no answer every time gives up within the patience", create: []error{netErr()}, patience: 2 * time.Minute,
			wantErr: []string{volA, "got no answer or a server error", TagRecorded + "=" + recordedPending}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.expectVolume(volume(types.VolumeTypeGp2, 100, 0))
			cc := f.serveCreate(tt.create...)
			cc.madeDespite[0] = tt.listed
			cc.markErrs = tt.markErrs
			f.src().serveDescribe()
			f.src().failNext(tt.lookupFails...)
			f.src().serveDelete()
			if tt.deleteErr != nil {
				f.src().deleteErr["snap-00000001"] = tt.deleteErr
			}
			var opts []Option
			if tt.patience != 0 {
				opts = append(opts, WithCreatePatience(tt.patience))
			}
			s := newSnapshotter(f, Config{Region: srcRegion}, opts...)
			type result struct {
				id  string
				err error
			}
			res, ok := onClock(f, time.Hour, func(ctx context.Context) result {
				id, err := s.CreateSnapshot(ctx, volA, veleroTags)
				return result{id, err}
			})
			if !ok {
				t.Fatal("CreateSnapshot did not return within an hour of fake time")
			}
			wantErr(t, res.err, tt.wantErr...)
			if res.id != tt.wantID {
				t.Errorf("id %q, want %q", res.id, tt.wantID)
			}
			if n := len(cc.ins); tt.wantCreates != 0 && n != tt.wantCreates || tt.wantCreates == 0 && n < 2 {
				t.Errorf("%d CreateSnapshot calls, want %d", n, tt.wantCreates)
			}
			for i := 1; i < len(cc.times); i++ {
				if gap := cc.times[i].Sub(cc.times[i-1]); gap < tt.minGap {
					t.Errorf("CreateSnapshot %d came %s after the previous; want at least %s", i+1, gap, tt.minGap)
				}
			}
			want := []string{}
			if res.id != "" {
				want = append(want, res.id+"="+cmp.Or(tt.wantMark, recordedReturned))
			}
			if fmt.Sprint(cc.marked) != fmt.Sprint(want) {
				t.Errorf("recorded marks %v, want %v", cc.marked, want)
			}
			if fmt.Sprint(f.src().deleted) != fmt.Sprint(tt.wantDeleted) && len(f.src().deleted)+len(tt.wantDeleted) > 0 {
				t.Errorf("deleted %v, want %v", f.src().deleted, tt.wantDeleted)
			}
			if tt.patience != 0 && f.clk.Since(t0) > tt.patience {
				t.Errorf("gave up after %s, beyond the patience of %s", f.clk.Since(t0), tt.patience)
			}
		})
	}
}

// After an ambiguous failure the snapshot is looked up by volume and the call's own token: a
// snapshot of an earlier backup of the same name, or another call's, is never taken for it.
func TestCreateSnapshotLookupFilter(t *testing.T) {
	f := newFixture(t)
	f.expectVolume(volume(types.VolumeTypeGp2, 100, 0))
	cc := f.serveCreate(netErr())
	var got *ec2.DescribeSnapshotsInput
	f.src().m.EXPECT().DescribeSnapshots(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, in *ec2.DescribeSnapshotsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSnapshotsOutput, error) {
			got = in
			return &ec2.DescribeSnapshotsOutput{Snapshots: []types.Snapshot{snapshot("snap-00000009", volA, types.SnapshotStatePending)}}, nil
		})
	id, err := newSnapshotter(f, Config{Region: srcRegion}).CreateSnapshot(context.Background(), volA, veleroTags)
	wantErr(t, err)
	if id != "snap-00000009" {
		t.Errorf("id %q, want the listed snap-00000009", id)
	}
	want := []types.Filter{{Name: aws.String("volume-id"), Values: []string{volA}}, tagFilter(TagCreateToken, cc.token(0))}
	if got == nil || fmt.Sprint(filterText(got.Filters)) != fmt.Sprint(filterText(want)) || len(got.OwnerIds) != 1 || got.OwnerIds[0] != "self" {
		t.Errorf("lookup %+v, want filters %v owned by self", got, filterText(want))
	}
}

func filterText(fs []types.Filter) []string {
	var out []string
	for _, f := range fs {
		out = append(out, aws.ToString(f.Name)+"="+strings.Join(f.Values, ","))
	}
	return out
}

// The second CreateSnapshot after an ambiguous failure must not come before the ambiguity
// window has passed: EC2 may list the first one late.
func TestCreateSnapshotAmbiguityWindow(t *testing.T) {
	f := newFixture(t)
	f.expectVolume(volume(types.VolumeTypeGp2, 100, 0))
	cc := f.serveCreate(httpErr(500, "InternalError"), nil)
	f.src().serveDescribe()
	s := newSnapshotter(f, Config{Region: srcRegion}, WithListingLag(30*time.Second))
	_, ok := onClock(f, time.Hour, func(ctx context.Context) error {
		_, err := s.CreateSnapshot(ctx, volA, veleroTags)
		return err
	})
	if !ok || len(cc.times) != 2 {
		t.Fatalf("returned %v after %d CreateSnapshot calls; want 2", ok, len(cc.times))
	}
	if gap := cc.times[1].Sub(cc.times[0]); gap < 30*time.Second {
		t.Errorf("second CreateSnapshot %s after the ambiguous one; want at least the 30s window", gap)
	}
}

// A per-volume refusal right after an ambiguous failure says the first request took effect:
// the snapshot is looked up again before another request.
func TestCreateSnapshotAmbiguousThenPerVolumeRate(t *testing.T) {
	f := newFixture(t)
	f.expectVolume(volume(types.VolumeTypeGp2, 100, 0))
	cc := f.serveCreate(httpErr(500, "InternalError"), httpErr(400, ec2api.CodeSnapshotCreationPerVolumeRateExceeded), nil)
	cc.before = func(n int) {
		if n == 1 { // EC2 lists the first request's snapshot from now on
			f.src().add(snapshot("snap-00000001", volA, types.SnapshotStatePending, withTags(TagCreateToken, cc.token(0))))
		}
	}
	f.src().serveDescribe()
	s := newSnapshotter(f, Config{Region: srcRegion})
	id, ok := onClock(f, time.Hour, func(ctx context.Context) string {
		id, _ := s.CreateSnapshot(ctx, volA, veleroTags)
		return id
	})
	if !ok || id != "snap-00000001" || len(cc.ins) != 2 {
		t.Errorf("got %q after %d CreateSnapshot calls; want the first snapshot, snap-00000001, after 2", id, len(cc.ins))
	}
}

// When the snapshot cannot be looked up after an ambiguous failure, patience still runs out.
func TestCreateSnapshotPatienceWhenLookupFails(t *testing.T) {
	f := newFixture(t)
	f.expectVolume(volume(types.VolumeTypeGp2, 100, 0))
	cc := f.serveCreate(netErr())
	f.src().serveDescribe()
	f.src().failNext(func() []error {
		errs := make([]error, 1000)
		for i := range errs {
			errs[i] = netErr()
		}
		return errs
	}()...)
	s := newSnapshotter(f, Config{Region: srcRegion}, WithCreatePatience(2*time.Minute))
	err, ok := onClock(f, 30*time.Minute, func(ctx context.Context) error {
		_, err := s.CreateSnapshot(ctx, volA, veleroTags)
		return err
	})
	if !ok {
		t.Fatalf("CreateSnapshot still running 30 min of fake time after an ambiguous failure (patience 2 min)")
	}
	wantErr(t, err, volA)
	if len(cc.ins) != 1 {
		t.Errorf("%d CreateSnapshot calls; none may follow while the first is unresolved", len(cc.ins))
	}
}

// A source must leave room among EC2's 50 tags for the copy-requested-at mark the Tracker
// adds before copying, or CreateTags fails with TagLimitExceeded and the copy never starts.
func TestCreateSnapshotLeavesRoomForCopyMark(t *testing.T) {
	f := newFixture(t)
	var kv []string
	for k, v := range numbered("team-", 60) {
		kv = append(kv, k, v)
	}
	f.expectVolume(volume(types.VolumeTypeGp3, 3000, 125, kv...))
	cc := f.serveCreate(nil)
	_, err := newSnapshotter(f, copyConfig()).CreateSnapshot(context.Background(), volA, veleroTags)
	wantErr(t, err)
	if n := len(cc.ins[0].TagSpecifications[0].Tags); n > maxTags-1 {
		t.Errorf("%d tags on a source that will be copied; want at most %d", n, maxTags-1)
	}
}

// Tags under the plugin's own prefix come only from the plugin, never from the volume.
func TestCreateSnapshotIgnoresPluginKeysFromVolume(t *testing.T) {
	f := newFixture(t)
	f.expectVolume(volume(types.VolumeTypeGp2, 100, 0, TagSourceSnapshotID, "snap-0000abcd", TagCopyToRegion, "eu-west-1"))
	cc := f.serveCreate(nil)
	_, err := newSnapshotter(f, Config{Region: srcRegion}).CreateSnapshot(context.Background(), volA, veleroTags)
	wantErr(t, err)
	got := tagMap(cc.ins[0].TagSpecifications[0].Tags)
	for _, k := range []string{TagSourceSnapshotID, TagCopyToRegion} {
		if v, ok := got[k]; ok {
			t.Errorf("snapshot tagged %s=%s from the volume's tags", k, v)
		}
	}
}

// A volume on an AWS Outpost is refused, naming the volume and the Outpost, before any snapshot
// is requested (the mock fails the test on a CreateSnapshot call it was not told to expect).
func TestCreateSnapshotRefusesOutpostVolumes(t *testing.T) {
	const outpost = "arn:aws:outposts:us-east-1:111122223333:outpost/op-0123456789abcdef0"
	tests := []struct {
		name    string
		arn     *string // the volume's OutpostArn
		viaInfo bool    // GetVolumeInfo described the volume first, as Velero calls it
		refused bool
	}{
		{name: "on an Outpost", arn: aws.String(outpost), refused: true},
		{name: "on an Outpost, described by GetVolumeInfo", arn: aws.String(outpost), viaInfo: true, refused: true},
		{name: "empty Outpost ARN is in the region", arn: aws.String("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			vol := volume(types.VolumeTypeGp2, 100, 0)
			vol.OutpostArn = tt.arn
			f.expectVolume(vol)
			if !tt.refused {
				f.serveCreate(nil)
			}
			s := newSnapshotter(f, copyConfig())
			if tt.viaInfo {
				if _, _, err := s.GetVolumeInfo(context.Background(), volA); err != nil {
					t.Fatalf("GetVolumeInfo: %v", err)
				}
			}
			id, err := s.CreateSnapshot(context.Background(), volA, veleroTags)
			if !tt.refused {
				wantErr(t, err)
				if id != "snap-00000001" {
					t.Errorf("snapshot %q, want snap-00000001", id)
				}
				return
			}
			wantErr(t, err, volA, srcRegion, outpost, "AWS Outposts are not supported", "no snapshot was taken")
			if id != "" {
				t.Errorf("snapshot %q returned with the refusal", id)
			}
		})
	}
}

func TestGetVolumeInfo(t *testing.T) {
	tests := []struct {
		name     string
		id       string
		vol      *types.Volume // described answer; nil for none
		err      error         // DescribeVolumes error
		noCall   bool
		wantType string
		wantIOPS int64 // 0: nil
		wantErr  []string
	}{
		{name: "gp3 has no IOPS", id: volA, vol: ptr(volume(types.VolumeTypeGp3, 3000, 125)), wantType: "gp3"},
		{name: "gp2", id: volA, vol: ptr(volume(types.VolumeTypeGp2, 100, 0)), wantType: "gp2"},
		{name: "io1", id: volA, vol: ptr(volume(types.VolumeTypeIo1, 500, 0)), wantType: "io1", wantIOPS: 500},
		{name: "io2", id: volA, vol: ptr(volume(types.VolumeTypeIo2, 64000, 0)), wantType: "io2", wantIOPS: 64000},
		{name: "io2 without IOPS", id: volA, vol: ptr(volume(types.VolumeTypeIo2, 0, 0)), wantType: "io2"},
		{name: "unknown volume", id: volA, err: httpErr(400, ec2api.CodeVolumeNotFound), wantErr: []string{volA, "does not exist", srcRegion}},
		{name: "empty answer", id: volA, wantErr: []string{volA, "does not exist"}},
		{name: "EC2 failing", id: volA, err: netErr(), wantErr: []string{volA, "connection reset"}},
		{name: "malformed ID", id: "vol-XYZ", noCall: true, wantErr: []string{`"vol-XYZ"`, "not an EBS volume ID"}},
		{name: "in-tree form is not an ID", id: "aws://us-east-1a/" + volA, noCall: true, wantErr: []string{"not an EBS volume ID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if !tt.noCall {
				out := &ec2.DescribeVolumesOutput{}
				if tt.vol != nil {
					out.Volumes = []types.Volume{*tt.vol}
				}
				if tt.err != nil {
					out = nil
				}
				f.src().m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).Return(out, tt.err)
			}
			typ, iops, err := newSnapshotter(f, Config{Region: srcRegion}).GetVolumeInfo(context.Background(), tt.id)
			wantErr(t, err, tt.wantErr...)
			if typ != tt.wantType || aws.ToInt64(iops) != tt.wantIOPS || (iops == nil) != (tt.wantIOPS == 0) {
				t.Errorf("got %q, %v; want %q, %d", typ, iops, tt.wantType, tt.wantIOPS)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
