package restoring

import (
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
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
)

const restoredVol = "vol-0fedcba9876543210"

func restoredVolume(id string, state types.VolumeState) types.Volume {
	return types.Volume{
		VolumeId:         aws.String(id),
		State:            state,
		AvailabilityZone: aws.String("us-west-2a"),
		CreateTime:       aws.Time(mockec2.T0.Add(-time.Minute)),
	}
}

func TestVolumeWatcherProgress(t *testing.T) {
	op := model.VolumeOperation{Operation: model.Operation{Region: mockec2.DstRegion, VolumeID: restoredVol, Issued: mockec2.T0}}.String()
	tests := []struct {
		name       string
		tagged     []types.Volume // the backup's volumes, found by its tag
		byID       []types.Volume // answer to the lookup by ID, when the tagged list lacks it
		byIDErr    error
		taggedErr  error
		after      time.Duration
		opID       string
		want       string // Description or Err
		completed  bool
		failed     bool
		wantCalled bool // looked up by ID
		wantErr    []string
	}{
		{name: "creating", tagged: []types.Volume{restoredVolume(restoredVol, types.VolumeStateCreating)}, want: "volume " + restoredVol + " in us-west-2a: creating"},
		{name: "available", tagged: []types.Volume{restoredVolume(restoredVol, types.VolumeStateAvailable)}, want: "is available", completed: true},
		{name: "in use", tagged: []types.Volume{restoredVolume(restoredVol, types.VolumeStateInUse)}, want: "is in-use", completed: true},
		{name: "error", tagged: []types.Volume{restoredVolume(restoredVol, types.VolumeStateError)}, want: "restored volume " + restoredVol + " in us-west-2a is error", completed: true, failed: true},
		{name: "untagged volume found by ID", byID: []types.Volume{restoredVolume(restoredVol, types.VolumeStateAvailable)}, want: "is available", completed: true, wantCalled: true},
		{name: "not listed yet", byIDErr: mockec2.HTTPErr(400, "InvalidVolume.NotFound"), want: "waiting for EC2 to list volume", wantCalled: true},
		{name: "not listed after the grace period", byIDErr: mockec2.HTTPErr(400, "InvalidVolume.NotFound"), after: time.Hour, want: "does not exist in us-west-2", completed: true, failed: true, wantCalled: true},
		{name: "throttled", taggedErr: mockec2.HTTPErr(503, "RequestLimitExceeded"), want: "waiting for EC2"},
		{name: "not authorized", taggedErr: mockec2.HTTPErr(403, "UnauthorizedOperation"), wantErr: []string{"UnauthorizedOperation", "us-west-2"}},
		{name: "malformed operation", opID: "ebs:v1:us-east-1:" + mockec2.VolA + ":1", wantErr: []string{"not one of this plugin's"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			m := f.Dst().M
			if tt.opID == "" {
				m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
					func(_ context.Context, in *ec2.DescribeVolumesInput, _ ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
						if len(in.Filters) != 1 || aws.ToString(in.Filters[0].Name) != "tag:"+model.TagBackup || in.Filters[0].Values[0] != mockec2.BackupName {
							t.Errorf("first DescribeVolumes filters %+v, want the backup's tag", in.Filters)
						}
						return &ec2.DescribeVolumesOutput{Volumes: tt.tagged}, tt.taggedErr
					})
			}
			if tt.wantCalled {
				m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
					func(_ context.Context, in *ec2.DescribeVolumesInput, _ ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
						if len(in.VolumeIds) != 1 || in.VolumeIds[0] != restoredVol {
							t.Errorf("second DescribeVolumes IDs %v, want [%s]", in.VolumeIds, restoredVol)
						}
						return &ec2.DescribeVolumesOutput{Volumes: tt.byID}, tt.byIDErr
					})
			}
			f.Clk.Step(tt.after)
			id := tt.opID
			if id == "" {
				id = op
			}
			p, err := NewVolumeWatcher(f.Clients(), f.Opts()...).Progress(context.Background(), id, restoreOf(mockec2.BackupName))
			if !checkVolumeProgress(t, p, err, volumeWant{tt.wantErr, tt.want, tt.completed, tt.failed}) {
				return
			}
			if p.Completed && !tt.failed && (p.NCompleted != 1 || p.NTotal != 1) {
				t.Errorf("completed volume reports %d of %d", p.NCompleted, p.NTotal)
			}
		})
	}
}

func TestVolumeWatcherDescribesOncePerCacheLifetime(t *testing.T) {
	f := mockec2.NewFixture(t)
	vols := []types.Volume{restoredVolume(restoredVol, types.VolumeStateCreating), restoredVolume("vol-0aaaaaaaaaaaaaaaa", types.VolumeStateAvailable)}
	f.Dst().M.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).
		Return(&ec2.DescribeVolumesOutput{Volumes: vols}, nil).Times(2)
	w := NewVolumeWatcher(f.Clients(), f.Opts(ebs.WithCacheTTL(5*time.Second))...)
	for round := 0; round < 2; round++ {
		for _, v := range vols {
			op := model.VolumeOperation{Operation: model.Operation{Region: mockec2.DstRegion, VolumeID: aws.ToString(v.VolumeId), Issued: mockec2.T0}}.String()
			if _, err := w.Progress(context.Background(), op, restoreOf(mockec2.BackupName)); err != nil {
				t.Fatal(err)
			}
		}
		f.Clk.Step(5 * time.Second)
	}
}

// restoreOf is a restore from the named backup.
func restoreOf(backup string) *velerov1.Restore {
	r := &velerov1.Restore{}
	r.Spec.BackupName = backup
	return r
}

// restoredFrom is a restored volume made from snapshot snap.
func restoredFrom(id string, state types.VolumeState, snap string) types.Volume {
	v := restoredVolume(id, state)
	v.SnapshotId = aws.String(snap)
	return v
}

// statusOf is a volume's status item with its initialization at pct percent of kind, and the
// seconds left when left is not negative.
func statusOf(id string, kind types.InitializationType, pct, left int64) types.VolumeStatusItem {
	d := &types.InitializationStatusDetails{InitializationType: kind, Progress: aws.Int64(pct)}
	if left >= 0 {
		d.EstimatedTimeToCompleteInSeconds = aws.Int64(left)
	}
	return types.VolumeStatusItem{VolumeId: aws.String(id), InitializationStatusDetails: d}
}

// waitingLocation is a location of dstRegion whose restores wait for initialization at 300 MiB/s.
var waitingLocation = map[string]string{model.ConfigRegion: mockec2.DstRegion, model.ConfigVolumeInitializationRate: "300", model.ConfigWaitForVolumeInitialization: "true"}

// A restore whose location waits for initialization reports each volume creating, then
// initializing at EC2's percent and time left, and completes only when EC2 reports 100%.
// Throttling and a status EC2 does not list yet mean wait; a location that does not wait
// completes at available, as before.
func TestVolumeWatcherWaitsForInitialization(t *testing.T) {
	op := model.VolumeOperation{Operation: model.Operation{Region: mockec2.DstRegion, VolumeID: restoredVol, Issued: mockec2.T0}}.String()
	fromSnap := func(state types.VolumeState) []types.Volume {
		return []types.Volume{restoredFrom(restoredVol, state, "snap-0000000b")}
	}
	statuses := func(items ...types.VolumeStatusItem) []*ec2.DescribeVolumeStatusOutput {
		return []*ec2.DescribeVolumeStatusOutput{{VolumeStatuses: items}}
	}
	noDetails := types.VolumeStatusItem{VolumeId: aws.String(restoredVol)}
	tests := []struct {
		name      string
		config    map[string]string // nil: the location could not be read
		note      string            // why, then
		tagged    []types.Volume
		answers   []*ec2.DescribeVolumeStatusOutput // DescribeVolumeStatus answers in order
		errs      []error                           // DescribeVolumeStatus errors in order, where no answer
		want      string                            // Description or Err
		completed bool
		failed    bool
		pct       int64
		units     string
		wantErr   []string
	}{
		{name: "creating", config: waitingLocation, tagged: fromSnap(types.VolumeStateCreating),
			want: "volume " + restoredVol + " in us-west-2a: creating", units: initializationUnits},
		{name: "initializing at the provisioned rate", config: waitingLocation, tagged: fromSnap(types.VolumeStateAvailable),
			answers: statuses(statusOf(restoredVol, types.InitializationTypeProvisionedRate, 42, 370)),
			want:    "volume " + restoredVol + " in us-west-2a: initializing at 300 MiB/s (provisioned), 42%, about 6m10s left", pct: 42, units: initializationUnits},
		{name: "initializing at the default rate", config: map[string]string{model.ConfigRegion: mockec2.DstRegion, model.ConfigWaitForVolumeInitialization: "true"},
			tagged: fromSnap(types.VolumeStateAvailable), answers: statuses(statusOf(restoredVol, types.InitializationTypeDefault, 10, -1)),
			want: "volume " + restoredVol + " in us-west-2a: initializing at EBS's default rate, 10%", pct: 10, units: initializationUnits},
		{name: "99% is not initialized", config: waitingLocation, tagged: fromSnap(types.VolumeStateAvailable),
			answers: statuses(statusOf(restoredVol, types.InitializationTypeProvisionedRate, 99, 2)), want: "99%, about 2s left", pct: 99, units: initializationUnits},
		{name: "fully initialized", config: waitingLocation, tagged: fromSnap(types.VolumeStateAvailable),
			answers: statuses(statusOf(restoredVol, types.InitializationTypeProvisionedRate, 100, 0)),
			want:    "is available and fully initialized (at 300 MiB/s (provisioned))", completed: true, pct: 100, units: initializationUnits},
		{name: "in use and fully initialized", config: waitingLocation, tagged: fromSnap(types.VolumeStateInUse),
			answers: statuses(statusOf(restoredVol, types.InitializationTypeProvisionedRate, 100, 0)), want: "is in-use and fully initialized", completed: true, pct: 100, units: initializationUnits},
		{name: "status not listed yet", config: waitingLocation, tagged: fromSnap(types.VolumeStateAvailable), answers: statuses(),
			want: "is available; waiting for EC2 to report its initialization", units: initializationUnits},
		{name: "volume unknown to the status yet", config: waitingLocation, tagged: fromSnap(types.VolumeStateAvailable),
			errs: []error{mockec2.HTTPErr(400, "InvalidVolume.NotFound"), mockec2.HTTPErr(400, "InvalidVolume.NotFound")},
			want: "waiting for EC2 to report its initialization", units: initializationUnits},
		{name: "a status EC2 throttles through the call's budget shows no figure, not 0%", config: waitingLocation, tagged: fromSnap(types.VolumeStateAvailable),
			errs: []error{mockec2.HTTPErr(503, "RequestLimitExceeded")}, want: "waiting for EC2 to report its initialization: ", units: ""},
		{name: "no initialization reported for a volume from a snapshot", config: waitingLocation, tagged: fromSnap(types.VolumeStateAvailable),
			answers: statuses(noDetails), want: "waiting for EC2 to report the initialization from snapshot snap-0000000b", units: initializationUnits},
		{name: "a volume from no snapshot has nothing to initialize", config: waitingLocation,
			tagged: []types.Volume{restoredVolume(restoredVol, types.VolumeStateAvailable)}, answers: statuses(noDetails),
			want: "nothing to initialize", completed: true, pct: 100, units: initializationUnits},
		{name: "status not permitted", config: waitingLocation, tagged: fromSnap(types.VolumeStateAvailable), errs: []error{mockec2.HTTPErr(403, "UnauthorizedOperation")},
			wantErr: []string{"UnauthorizedOperation", "initialization", "us-west-2"}},
		{name: "a location that does not wait completes at available", config: map[string]string{model.ConfigRegion: mockec2.DstRegion, model.ConfigVolumeInitializationRate: "300"},
			tagged: fromSnap(types.VolumeStateAvailable), want: "is available; EBS goes on initializing it from its snapshot in the background",
			completed: true, pct: 1, units: volumeUnits},
		{name: "a location that could not be read says so", note: "no Kubernetes API access",
			tagged: fromSnap(types.VolumeStateAvailable), want: "whether it waits for initialization is not known: no Kubernetes API access",
			completed: true, pct: 1, units: volumeUnits},
		{name: "a location whose wait key is wrong", config: map[string]string{model.ConfigRegion: mockec2.DstRegion, model.ConfigWaitForVolumeInitialization: "soon"},
			tagged: fromSnap(types.VolumeStateAvailable), want: `location dr: config key "waitForVolumeInitialization": "soon"`, completed: true, failed: true, units: volumeUnits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			m := f.Dst().M
			m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).Return(&ec2.DescribeVolumesOutput{Volumes: tt.tagged}, nil)
			calls := max(len(tt.answers), len(tt.errs))
			n := 0
			m.EXPECT().DescribeVolumeStatus(gomock.Any(), gomock.Any(), gomock.Any()).Times(calls).DoAndReturn(
				func(_ context.Context, in *ec2.DescribeVolumeStatusInput, _ ...func(*ec2.Options)) (*ec2.DescribeVolumeStatusOutput, error) {
					if len(in.VolumeIds) != 1 || in.VolumeIds[0] != restoredVol || in.MaxResults != nil {
						t.Errorf("DescribeVolumeStatus IDs %v MaxResults %v, want [%s] alone", in.VolumeIds, in.MaxResults, restoredVol)
					}
					defer func() { n++ }()
					if n < len(tt.errs) {
						return nil, tt.errs[n]
					}
					return tt.answers[n], nil
				})
			loc := mockec2.PlacesOf{{Location: "dr", Clients: f.Clients(), Config: tt.config, Note: tt.note}}
			p, err := NewVolumeWatcher(f.Clients(), f.Opts(ebs.WithLocator(loc))...).Progress(context.Background(), op, restoreOf(mockec2.BackupName))
			if !checkVolumeProgress(t, p, err, volumeWant{tt.wantErr, tt.want, tt.completed, tt.failed}) {
				return
			}
			if !tt.failed && (p.NCompleted != tt.pct || p.OperationUnits != tt.units) {
				t.Errorf("progress %d of %d %s, want %d %s", p.NCompleted, p.NTotal, p.OperationUnits, tt.pct, tt.units)
			}
			if p.OperationUnits == initializationUnits && p.NTotal != fullyInitialized {
				t.Errorf("progress of %d %s, want of %d", p.NTotal, p.OperationUnits, fullyInitialized)
			}
			if tt.units == "" && !tt.failed && p.NTotal != 0 {
				t.Errorf("progress %d of %d, want no figure", p.NCompleted, p.NTotal)
			}
		})
	}
}

// The initialization of every volume of a restore is described once per region and cache
// lifetime, in batches of at most volumeStatusBatch IDs (never with MaxResults, which EC2
// refuses with IDs); each operation reads its volume from that description.
func TestVolumeWatcherDescribesInitializationOncePerCacheLifetime(t *testing.T) {
	f := mockec2.NewFixture(t)
	const count = 2*volumeStatusBatch + 50
	var vols []types.Volume
	for i := range count {
		vols = append(vols, restoredFrom(fmt.Sprintf("vol-%017x", i), types.VolumeStateAvailable, "snap-0000000b"))
	}
	m := f.Dst().M
	m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).Return(&ec2.DescribeVolumesOutput{Volumes: vols}, nil).Times(2)
	asked := map[string]int{}
	m.EXPECT().DescribeVolumeStatus(gomock.Any(), gomock.Any(), gomock.Any()).Times(2 * 3).DoAndReturn(
		func(_ context.Context, in *ec2.DescribeVolumeStatusInput, _ ...func(*ec2.Options)) (*ec2.DescribeVolumeStatusOutput, error) {
			if len(in.VolumeIds) == 0 || len(in.VolumeIds) > volumeStatusBatch || in.MaxResults != nil {
				t.Errorf("DescribeVolumeStatus with %d IDs and MaxResults %v", len(in.VolumeIds), in.MaxResults)
			}
			out := &ec2.DescribeVolumeStatusOutput{}
			for _, id := range in.VolumeIds {
				asked[id]++
				out.VolumeStatuses = append(out.VolumeStatuses, statusOf(id, types.InitializationTypeProvisionedRate, 50, 10))
			}
			return out, nil
		})
	loc := mockec2.PlacesOf{{Location: "dr", Clients: f.Clients(), Config: waitingLocation}}
	w := NewVolumeWatcher(f.Clients(), f.Opts(ebs.WithCacheTTL(5*time.Second), ebs.WithLocator(loc))...)
	for round := 0; round < 2; round++ {
		for _, v := range vols {
			op := model.VolumeOperation{Operation: model.Operation{Region: mockec2.DstRegion, VolumeID: aws.ToString(v.VolumeId), Issued: mockec2.T0}}.String()
			p, err := w.Progress(context.Background(), op, restoreOf(mockec2.BackupName))
			if err != nil || p.NCompleted != 50 || p.Completed {
				t.Fatalf("progress %+v, %v; want 50%% initializing", p, err)
			}
		}
		f.Clk.Step(5 * time.Second)
	}
	for _, v := range vols {
		if n := asked[aws.ToString(v.VolumeId)]; n != 2 {
			t.Errorf("volume %s asked about %d times in two cache lifetimes, want 2", aws.ToString(v.VolumeId), n)
		}
	}
}

// volumeWant is what a restored volume's Progress should say: an error naming wantErr, or a
// description (an error message when failed) containing want.
type volumeWant struct {
	wantErr           []string
	want              string
	completed, failed bool
}

// checkVolumeProgress checks a restored volume's Progress against w, and reports whether the
// call returned progress to check further.
func checkVolumeProgress(t *testing.T, p velero.OperationProgress, err error, w volumeWant) bool {
	t.Helper()
	if len(w.wantErr) > 0 {
		mockec2.WantErr(t, err, w.wantErr...)
		return false
	}
	mockec2.WantErr(t, err)
	got := p.Description
	if w.failed {
		got = p.Err
	}
	if !strings.Contains(got, w.want) {
		t.Errorf("progress %+v, want %q", p, w.want)
	}
	if p.Completed != w.completed || (p.Err != "") != w.failed {
		t.Errorf("Completed=%v Err=%q, want completed=%v failed=%v", p.Completed, p.Err, w.completed, w.failed)
	}
	return true
}

// A read EC2 throttles through the call's budget answers the restore's other volumes for the
// cache lifetime: a reconcile's operations each wait, with no figure, and EC2 is asked once,
// not once per operation; after the cache lifetime it is asked again.
func TestVolumeWatcherFailedReadAnswersTheRestoresOtherVolumes(t *testing.T) {
	vols := []types.Volume{restoredFrom(restoredVol, types.VolumeStateAvailable, "snap-0000000b"), restoredFrom("vol-0aaaaaaaaaaaaaaaa", types.VolumeStateAvailable, "snap-0000000b")}
	throttled := mockec2.HTTPErr(503, "RequestLimitExceeded")
	tests := []struct {
		name                       string
		listingErr                 error
		wantListings, wantStatuses int
		want                       string
	}{
		{name: "volumes EC2 does not list through the budget", listingErr: throttled, wantListings: 2, want: "waiting for EC2: "},
		{name: "an initialization EC2 does not report through the budget", wantListings: 2, wantStatuses: 2, want: "waiting for EC2 to report its initialization: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			m := f.Dst().M
			m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).Times(tt.wantListings).Return(&ec2.DescribeVolumesOutput{Volumes: vols}, tt.listingErr)
			m.EXPECT().DescribeVolumeStatus(gomock.Any(), gomock.Any(), gomock.Any()).Times(tt.wantStatuses).Return(nil, throttled)
			loc := mockec2.PlacesOf{{Location: "dr", Clients: f.Clients(), Config: waitingLocation}}
			w := NewVolumeWatcher(f.Clients(), f.Opts(ebs.WithCacheTTL(5*time.Second), ebs.WithLocator(loc))...)
			for range 2 {
				for _, v := range vols {
					op := model.VolumeOperation{Operation: model.Operation{Region: mockec2.DstRegion, VolumeID: aws.ToString(v.VolumeId), Issued: mockec2.T0}}.String()
					p, err := w.Progress(context.Background(), op, restoreOf(mockec2.BackupName))
					if !checkVolumeProgress(t, p, err, volumeWant{want: tt.want}) || p.NTotal != 0 {
						t.Errorf("progress %d of %d, want no figure", p.NCompleted, p.NTotal)
					}
				}
				f.Clk.Step(5 * time.Second)
			}
		})
	}
}
