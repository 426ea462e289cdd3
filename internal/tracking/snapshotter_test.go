package tracking

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

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

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

func serveCreate(f *mockec2.Fixture, answers ...error) *createCalls {
	cc := &createCalls{madeDespite: map[int]bool{}}
	f.Src().M.EXPECT().CreateSnapshot(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.CreateSnapshotInput, _ ...func(*ec2.Options)) (*ec2.CreateSnapshotOutput, error) {
			n := len(cc.ins)
			if cc.before != nil {
				cc.before(n)
			}
			cc.ins = append(cc.ins, in)
			cc.times = append(cc.times, f.Clk.Now())
			id := fmt.Sprintf("snap-%08x", n+1)
			err := answers[min(n, len(answers)-1)]
			if err == nil || cc.madeDespite[n] {
				f.Src().Add(types.Snapshot{SnapshotId: aws.String(id), VolumeId: in.VolumeId, State: types.SnapshotStatePending,
					StartTime: aws.Time(f.Clk.Now()), Tags: in.TagSpecifications[0].Tags})
			}
			if err != nil {
				return nil, err
			}
			return &ec2.CreateSnapshotOutput{SnapshotId: aws.String(id)}, nil
		})
	f.Src().M.EXPECT().CreateTags(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
			if len(cc.markErrs) > 0 {
				err := cc.markErrs[0]
				cc.markErrs = cc.markErrs[1:]
				if err != nil {
					return nil, err
				}
			}
			for _, id := range in.Resources {
				cc.marked = append(cc.marked, id+"="+model.TagMap(in.Tags)[model.TagRecorded])
			}
			return &ec2.CreateTagsOutput{}, nil
		})
	return cc
}

// token is the create token of call n.
func (cc *createCalls) token(n int) string {
	return model.TagMap(cc.ins[n].TagSpecifications[0].Tags)[model.TagCreateToken]
}

var veleroTags = map[string]string{model.TagBackup: mockec2.BackupName, model.TagPV: "pv-1", "app": "web"}

func copyConfig() model.Config {
	return model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion, CopyKMSKeyID: "alias/dr", CopyCompletionMinutes: 60}
}

func TestCreateSnapshotTags(t *testing.T) {
	tests := []struct {
		name   string
		cfg    model.Config
		vol    types.Volume
		velero map[string]string
		want   map[string]string
	}{
		{
			name: "copy intent, gp3 settings, Velero's and the volume's tags",
			cfg:  copyConfig(),
			vol:  mockec2.Volume(types.VolumeTypeGp3, 3000, 125, "Name", "data", "aws:cloudformation:stack-name", "s", "AWS:x", "y", model.TagBackup, "old-backup"),
			velero: map[string]string{model.TagBackup: mockec2.BackupName, model.TagPV: "pv-1", "app": "web",
				model.TagCopyToRegion: "eu-west-1"}, // a backup label colliding with the plugin's key
			want: map[string]string{
				model.TagVolumeType: "gp3", model.TagVolumeIOPS: "3000", model.TagVolumeThroughput: "125", model.TagVolumeAZ: "us-east-1a",
				model.TagCopyToRegion: mockec2.DstRegion, model.TagCopyKMSKeyID: "alias/dr", model.TagCopyCompletionMinutes: "60",
				model.TagBackup: mockec2.BackupName, model.TagPV: "pv-1", "app": "web", "Name": "data",
			},
		},
		{
			name:   "no copy: no intent; st1 has neither IOPS nor throughput",
			cfg:    model.Config{Region: mockec2.SrcRegion},
			vol:    mockec2.Volume(types.VolumeTypeSt1, 0, 0),
			velero: veleroTags,
			want:   map[string]string{model.TagVolumeType: "st1", model.TagVolumeAZ: "us-east-1a", model.TagBackup: mockec2.BackupName, model.TagPV: "pv-1", "app": "web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.ExpectVolume(tt.vol) // once: CreateSnapshot reuses GetVolumeInfo's answer
			cc := serveCreate(f, nil)
			s := newSnapshotter(f, tt.cfg)
			if _, _, err := s.GetVolumeInfo(context.Background(), mockec2.VolA); err != nil {
				t.Fatal(err)
			}
			id, err := s.CreateSnapshot(context.Background(), mockec2.VolA, tt.velero)
			mockec2.WantErr(t, err)
			if id != "snap-00000001" || len(cc.ins) != 1 {
				t.Fatalf("got %q after %d CreateSnapshot calls; want snap-00000001 after 1", id, len(cc.ins))
			}
			in := cc.ins[0]
			if aws.ToString(in.VolumeId) != mockec2.VolA || len(in.TagSpecifications) != 1 || in.TagSpecifications[0].ResourceType != types.ResourceTypeSnapshot {
				t.Fatalf("bad request: %+v", in)
			}
			got := model.TagMap(in.TagSpecifications[0].Tags)
			if len(got[model.TagCreateToken]) != 2*ebs.CreateTokenBytes {
				t.Errorf("create token %q, want %d hex digits", got[model.TagCreateToken], 2*ebs.CreateTokenBytes)
			}
			delete(got, model.TagCreateToken)
			tt.want[model.TagRecorded] = model.RecordedPending // until CreateSnapshot returns it
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("tags\n got %v\nwant %v", got, tt.want)
			}
			if !strings.Contains(aws.ToString(in.Description), mockec2.BackupName) {
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
		{name: "the returned mark cannot be written: the snapshot is deleted", create: []error{nil}, markErrs: []error{mockec2.HTTPErr(400, "UnauthorizedOperation")}, wantCreates: 1,
			wantErr: []string{"snap-00000001", "was made, but marking it", "was deleted, so no snapshot of this volume is left"}, wantDeleted: []string{"snap-00000001"}},
		{name: "the returned mark cannot be written nor the snapshot deleted", create: []error{nil}, markErrs: []error{mockec2.HTTPErr(400, "UnauthorizedOperation")}, wantCreates: 1,
			deleteErr: mockec2.HTTPErr(400, "UnauthorizedOperation"),
			wantErr:   []string{"snap-00000001", "was made, but marking it", "deleting it failed too"}, wantDeleted: []string{"snap-00000001"}},
		{name: "the returned mark throttled, then written", create: []error{nil}, markErrs: []error{mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded)},
			wantID: "snap-00000001", wantCreates: 1},
		{name: "per-volume rate waits 15s", create: []error{mockec2.HTTPErr(400, ec2api.CodeSnapshotCreationPerVolumeRateExceeded), nil},
			wantID: "snap-00000002", wantCreates: 2, minGap: 15 * time.Second},
		{name: "concurrent limit retried", create: []error{mockec2.HTTPErr(400, ec2api.CodeConcurrentSnapshotLimitExceeded), mockec2.HTTPErr(400, ec2api.CodeConcurrentSnapshotLimitExceeded), nil},
			wantID: "snap-00000003", wantCreates: 3, minGap: 15 * time.Second},
		{name: "throttling beyond the SDK's retries", create: []error{mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded), nil},
			wantID: "snap-00000002", wantCreates: 2, minGap: time.Second},
		{name: "patience exhausted", create: []error{mockec2.HTTPErr(400, ec2api.CodeSnapshotCreationPerVolumeRateExceeded)}, patience: time.Minute,
			wantErr: []string{mockec2.VolA, "still refused after 1m0s", ec2api.CodeSnapshotCreationPerVolumeRateExceeded}},
		{name: "definite 4xx", create: []error{mockec2.HTTPErr(400, "InvalidParameterValue")},
			wantErr: []string{mockec2.VolA, mockec2.SrcRegion, "InvalidParameterValue"}, wantCreates: 1},
		{name: "500 but made", create: []error{mockec2.HTTPErr(500, "InternalError")}, listed: true, wantID: "snap-00000001", wantCreates: 1},
		{name: "no answer but made", create: []error{mockec2.NetErr()}, listed: true, wantID: "snap-00000001", wantCreates: 1},
		{name: "no answer, lookup fails first, then finds it", create: []error{mockec2.NetErr()}, listed: true,
			lookupFails: []error{mockec2.NetErr(), mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded)}, wantID: "snap-00000001", wantCreates: 1},
		{name: "500 and not made", create: []error{mockec2.HTTPErr(500, "InternalError"), nil}, wantID: "snap-00000002", wantCreates: 2, wantMark: model.RecordedTrue},
		// Every request answered 5xx and none made a snapshot: the call stops within its patience.
		{name: "500 every time gives up within the patience", create: []error{mockec2.HTTPErr(500, "InternalError")}, patience: 2 * time.Minute,
			wantErr: []string{mockec2.VolA, mockec2.SrcRegion, "in 2m0s got no answer or a server error", model.TagCreateToken, "the backup's operation deletes it", "InternalError"}},
		{name: "no answer every time gives up within the patience", create: []error{mockec2.NetErr()}, patience: 2 * time.Minute,
			wantErr: []string{mockec2.VolA, "got no answer or a server error", model.TagRecorded + "=" + model.RecordedPending}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.ExpectVolume(mockec2.Volume(types.VolumeTypeGp2, 100, 0))
			cc := serveCreate(f, tt.create...)
			cc.madeDespite[0] = tt.listed
			cc.markErrs = tt.markErrs
			f.Src().ServeDescribe()
			f.Src().FailNext(tt.lookupFails...)
			f.Src().ServeDelete()
			if tt.deleteErr != nil {
				f.Src().DeleteErr["snap-00000001"] = tt.deleteErr
			}
			var opts []ebs.Option
			if tt.patience != 0 {
				opts = append(opts, ebs.WithCreatePatience(tt.patience))
			}
			s := newSnapshotter(f, model.Config{Region: mockec2.SrcRegion}, opts...)
			type result struct {
				id  string
				err error
			}
			res, ok := mockec2.OnClock(f, time.Hour, func(ctx context.Context) result {
				id, err := s.CreateSnapshot(ctx, mockec2.VolA, veleroTags)
				return result{id, err}
			})
			if !ok {
				t.Fatal("CreateSnapshot did not return within an hour of fake time")
			}
			mockec2.WantErr(t, res.err, tt.wantErr...)
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
				want = append(want, res.id+"="+cmp.Or(tt.wantMark, model.RecordedReturned))
			}
			if fmt.Sprint(cc.marked) != fmt.Sprint(want) {
				t.Errorf("recorded marks %v, want %v", cc.marked, want)
			}
			if fmt.Sprint(f.Src().Deleted) != fmt.Sprint(tt.wantDeleted) && len(f.Src().Deleted)+len(tt.wantDeleted) > 0 {
				t.Errorf("deleted %v, want %v", f.Src().Deleted, tt.wantDeleted)
			}
			if tt.patience != 0 && f.Clk.Since(mockec2.T0) > tt.patience {
				t.Errorf("gave up after %s, beyond the patience of %s", f.Clk.Since(mockec2.T0), tt.patience)
			}
		})
	}
}

// After an ambiguous failure the snapshot is looked up by volume and the call's own token: a
// snapshot of an earlier backup of the same name, or another call's, is never taken for it.
func TestCreateSnapshotLookupFilter(t *testing.T) {
	f := mockec2.NewFixture(t)
	f.ExpectVolume(mockec2.Volume(types.VolumeTypeGp2, 100, 0))
	cc := serveCreate(f, mockec2.NetErr())
	var got *ec2.DescribeSnapshotsInput
	f.Src().M.EXPECT().DescribeSnapshots(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, in *ec2.DescribeSnapshotsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSnapshotsOutput, error) {
			got = in
			return &ec2.DescribeSnapshotsOutput{Snapshots: []types.Snapshot{mockec2.Snapshot("snap-00000009", mockec2.VolA, types.SnapshotStatePending)}}, nil
		})
	id, err := newSnapshotter(f, model.Config{Region: mockec2.SrcRegion}).CreateSnapshot(context.Background(), mockec2.VolA, veleroTags)
	mockec2.WantErr(t, err)
	if id != "snap-00000009" {
		t.Errorf("id %q, want the listed snap-00000009", id)
	}
	want := []types.Filter{{Name: aws.String("volume-id"), Values: []string{mockec2.VolA}}, ebs.TagFilter(model.TagCreateToken, cc.token(0))}
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
	f := mockec2.NewFixture(t)
	f.ExpectVolume(mockec2.Volume(types.VolumeTypeGp2, 100, 0))
	cc := serveCreate(f, mockec2.HTTPErr(500, "InternalError"), nil)
	f.Src().ServeDescribe()
	s := newSnapshotter(f, model.Config{Region: mockec2.SrcRegion}, ebs.WithListingLag(30*time.Second))
	_, ok := mockec2.OnClock(f, time.Hour, func(ctx context.Context) error {
		_, err := s.CreateSnapshot(ctx, mockec2.VolA, veleroTags)
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
	f := mockec2.NewFixture(t)
	f.ExpectVolume(mockec2.Volume(types.VolumeTypeGp2, 100, 0))
	cc := serveCreate(f, mockec2.HTTPErr(500, "InternalError"), mockec2.HTTPErr(400, ec2api.CodeSnapshotCreationPerVolumeRateExceeded), nil)
	cc.before = func(n int) {
		if n == 1 { // EC2 lists the first request's snapshot from now on
			f.Src().Add(mockec2.Snapshot("snap-00000001", mockec2.VolA, types.SnapshotStatePending, mockec2.WithTags(model.TagCreateToken, cc.token(0))))
		}
	}
	f.Src().ServeDescribe()
	s := newSnapshotter(f, model.Config{Region: mockec2.SrcRegion})
	id, ok := mockec2.OnClock(f, time.Hour, func(ctx context.Context) string {
		id, _ := s.CreateSnapshot(ctx, mockec2.VolA, veleroTags)
		return id
	})
	if !ok || id != "snap-00000001" || len(cc.ins) != 2 {
		t.Errorf("got %q after %d CreateSnapshot calls; want the first snapshot, snap-00000001, after 2", id, len(cc.ins))
	}
}

// When the snapshot cannot be looked up after an ambiguous failure, patience still runs out.
func TestCreateSnapshotPatienceWhenLookupFails(t *testing.T) {
	f := mockec2.NewFixture(t)
	f.ExpectVolume(mockec2.Volume(types.VolumeTypeGp2, 100, 0))
	cc := serveCreate(f, mockec2.NetErr())
	f.Src().ServeDescribe()
	f.Src().FailNext(func() []error {
		errs := make([]error, 1000)
		for i := range errs {
			errs[i] = mockec2.NetErr()
		}
		return errs
	}()...)
	s := newSnapshotter(f, model.Config{Region: mockec2.SrcRegion}, ebs.WithCreatePatience(2*time.Minute))
	err, ok := mockec2.OnClock(f, 30*time.Minute, func(ctx context.Context) error {
		_, err := s.CreateSnapshot(ctx, mockec2.VolA, veleroTags)
		return err
	})
	if !ok {
		t.Fatalf("CreateSnapshot still running 30 min of fake time after an ambiguous failure (patience 2 min)")
	}
	mockec2.WantErr(t, err, mockec2.VolA)
	if len(cc.ins) != 1 {
		t.Errorf("%d CreateSnapshot calls; none may follow while the first is unresolved", len(cc.ins))
	}
}

// A source must leave room among EC2's 50 tags for the copy-requested-at mark the Tracker
// adds before copying, or CreateTags fails with TagLimitExceeded and the copy never starts.
func TestCreateSnapshotLeavesRoomForCopyMark(t *testing.T) {
	f := mockec2.NewFixture(t)
	var kv []string
	for k, v := range mockec2.Numbered("team-", 60) {
		kv = append(kv, k, v)
	}
	f.ExpectVolume(mockec2.Volume(types.VolumeTypeGp3, 3000, 125, kv...))
	cc := serveCreate(f, nil)
	_, err := newSnapshotter(f, copyConfig()).CreateSnapshot(context.Background(), mockec2.VolA, veleroTags)
	mockec2.WantErr(t, err)
	if n := len(cc.ins[0].TagSpecifications[0].Tags); n > model.MaxTags-1 {
		t.Errorf("%d tags on a source that will be copied; want at most %d", n, model.MaxTags-1)
	}
}

// Tags under the plugin's own prefix come only from the plugin, never from the volume.
func TestCreateSnapshotIgnoresPluginKeysFromVolume(t *testing.T) {
	f := mockec2.NewFixture(t)
	f.ExpectVolume(mockec2.Volume(types.VolumeTypeGp2, 100, 0, model.TagSourceSnapshotID, "snap-0000abcd", model.TagCopyToRegion, "eu-west-1"))
	cc := serveCreate(f, nil)
	_, err := newSnapshotter(f, model.Config{Region: mockec2.SrcRegion}).CreateSnapshot(context.Background(), mockec2.VolA, veleroTags)
	mockec2.WantErr(t, err)
	got := model.TagMap(cc.ins[0].TagSpecifications[0].Tags)
	for _, k := range []string{model.TagSourceSnapshotID, model.TagCopyToRegion} {
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
			f := mockec2.NewFixture(t)
			vol := mockec2.Volume(types.VolumeTypeGp2, 100, 0)
			vol.OutpostArn = tt.arn
			f.ExpectVolume(vol)
			if !tt.refused {
				serveCreate(f, nil)
			}
			s := newSnapshotter(f, copyConfig())
			if tt.viaInfo {
				if _, _, err := s.GetVolumeInfo(context.Background(), mockec2.VolA); err != nil {
					t.Fatalf("GetVolumeInfo: %v", err)
				}
			}
			id, err := s.CreateSnapshot(context.Background(), mockec2.VolA, veleroTags)
			if !tt.refused {
				mockec2.WantErr(t, err)
				if id != "snap-00000001" {
					t.Errorf("snapshot %q, want snap-00000001", id)
				}
				return
			}
			mockec2.WantErr(t, err, mockec2.VolA, mockec2.SrcRegion, outpost, "AWS Outposts are not supported", "no snapshot was taken")
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
		{name: "gp3 has no IOPS", id: mockec2.VolA, vol: ptr(mockec2.Volume(types.VolumeTypeGp3, 3000, 125)), wantType: "gp3"},
		{name: "gp2", id: mockec2.VolA, vol: ptr(mockec2.Volume(types.VolumeTypeGp2, 100, 0)), wantType: "gp2"},
		{name: "io1", id: mockec2.VolA, vol: ptr(mockec2.Volume(types.VolumeTypeIo1, 500, 0)), wantType: "io1", wantIOPS: 500},
		{name: "io2", id: mockec2.VolA, vol: ptr(mockec2.Volume(types.VolumeTypeIo2, 64000, 0)), wantType: "io2", wantIOPS: 64000},
		{name: "io2 without IOPS", id: mockec2.VolA, vol: ptr(mockec2.Volume(types.VolumeTypeIo2, 0, 0)), wantType: "io2"},
		{name: "unknown volume", id: mockec2.VolA, err: mockec2.HTTPErr(400, ec2api.CodeVolumeNotFound), wantErr: []string{mockec2.VolA, "does not exist", mockec2.SrcRegion}},
		{name: "empty answer", id: mockec2.VolA, wantErr: []string{mockec2.VolA, "does not exist"}},
		{name: "EC2 failing", id: mockec2.VolA, err: mockec2.NetErr(), wantErr: []string{mockec2.VolA, "connection reset"}},
		{name: "malformed ID", id: "vol-XYZ", noCall: true, wantErr: []string{`"vol-XYZ"`, "not an EBS volume ID"}},
		{name: "in-tree form is not an ID", id: "aws://us-east-1a/" + mockec2.VolA, noCall: true, wantErr: []string{"not an EBS volume ID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			if !tt.noCall {
				out := &ec2.DescribeVolumesOutput{}
				if tt.vol != nil {
					out.Volumes = []types.Volume{*tt.vol}
				}
				if tt.err != nil {
					out = nil
				}
				f.Src().M.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).Return(out, tt.err)
			}
			typ, iops, err := newSnapshotter(f, model.Config{Region: mockec2.SrcRegion}).GetVolumeInfo(context.Background(), tt.id)
			mockec2.WantErr(t, err, tt.wantErr...)
			if typ != tt.wantType || aws.ToInt64(iops) != tt.wantIOPS || (iops == nil) != (tt.wantIOPS == 0) {
				t.Errorf("got %q, %v; want %q, %d", typ, iops, tt.wantType, tt.wantIOPS)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
