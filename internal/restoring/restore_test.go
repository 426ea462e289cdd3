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
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// zone is an AZ entry as DescribeAvailabilityZones lists it.
func zone(name string, state types.AvailabilityZoneState, zoneType string) types.AvailabilityZone {
	return types.AvailabilityZone{ZoneName: aws.String(name), State: state, ZoneType: aws.String(zoneType)}
}

// westZones: a, b, c available (listed out of order); d impaired; a Local Zone; c listed without type.
var westZones = []types.AvailabilityZone{
	zone("us-west-2b", types.AvailabilityZoneStateAvailable, "availability-zone"),
	zone("us-west-2a", types.AvailabilityZoneStateAvailable, "availability-zone"),
	{ZoneName: aws.String("us-west-2c"), State: types.AvailabilityZoneStateAvailable},
	zone("us-west-2d", types.AvailabilityZoneStateImpaired, "availability-zone"),
	zone("us-west-2-lax-1a", types.AvailabilityZoneStateAvailable, "local-zone"),
}

// serveZones answers DescribeAvailabilityZones exactly once.
func serveZones(r *mockec2.Region, zones []types.AvailabilityZone, err error) {
	var out *ec2.DescribeAvailabilityZonesOutput
	if err == nil {
		out = &ec2.DescribeAvailabilityZonesOutput{AvailabilityZones: zones}
	}
	r.M.EXPECT().DescribeAvailabilityZones(gomock.Any(), gomock.Any(), gomock.Any()).Return(out, err)
}

// serveCreateVolume answers one CreateVolume with vol-0000000n (or err) and keeps the input.
func serveCreateVolume(r *mockec2.Region, err error) **ec2.CreateVolumeInput {
	var got *ec2.CreateVolumeInput
	r.M.EXPECT().CreateVolume(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, in *ec2.CreateVolumeInput, _ ...func(*ec2.Options)) (*ec2.CreateVolumeOutput, error) {
			got = in
			if err != nil {
				return nil, err
			}
			return &ec2.CreateVolumeOutput{VolumeId: aws.String("vol-0000000e")}, nil
		})
	return &got
}

func TestCreateVolumeFromSnapshot(t *testing.T) {
	gp3 := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagVolumeType, "gp3", model.TagVolumeIOPS, "4000", model.TagVolumeThroughput, "250"),
		mockec2.WithTags(model.TagPV, "pv-1", "Name", "data", "aws:backup:source", "x"))
	io := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagVolumeType, "io2", model.TagVolumeIOPS, "5000"))
	done := mockec2.CopyOfSnap("snap-0000000b", gp3, types.SnapshotStateCompleted)
	pending := mockec2.CopyOfSnap("snap-0000000c", gp3, types.SnapshotStatePending, mockec2.Progress("45%"))
	failed := mockec2.CopyOfSnap("snap-0000000d", gp3, types.SnapshotStateError, mockec2.Message("KMS key disabled"))
	upstream := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted) // Velero's tags only, none of the plugin's
	east := model.Config{Region: mockec2.SrcRegion}
	west := model.Config{Region: mockec2.DstRegion}
	tests := []struct {
		name       string
		cfg        model.Config
		here       []types.Snapshot // snapshots in the location's region
		volumeType string
		iops       *int64
		createErr  error
		want       *ec2.CreateVolumeInput // compared field by field; nil when no CreateVolume is wanted
		wantTags   map[string]string
		wantErr    []string
	}{
		{name: "same region, gp3 settings from tags", cfg: east, here: []types.Snapshot{gp3}, volumeType: "gp3",
			want:     &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), VolumeType: "gp3", Iops: aws.Int32(4000), Throughput: aws.Int32(250)},
			wantTags: map[string]string{model.TagBackup: mockec2.BackupName, model.TagPV: "pv-1", "Name": "data"}},
		{name: "type from tags when Velero has none", cfg: east, here: []types.Snapshot{gp3},
			want: &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), VolumeType: "gp3", Iops: aws.Int32(4000), Throughput: aws.Int32(250)}},
		{name: "io2 IOPS from the argument", cfg: east, here: []types.Snapshot{io}, volumeType: "io2", iops: aws.Int64(7000),
			want: &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), VolumeType: "io2", Iops: aws.Int32(7000)}},
		{name: "io2 IOPS from tags without argument", cfg: east, here: []types.Snapshot{io}, volumeType: "io2",
			want: &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), VolumeType: "io2", Iops: aws.Int32(5000)}},
		{name: "gp2 takes no IOPS", cfg: east, here: []types.Snapshot{io}, volumeType: "gp2", iops: aws.Int64(7000),
			want: &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), VolumeType: "gp2"}},
		{name: "ebsKmsKeyId encrypts", cfg: model.Config{Region: mockec2.SrcRegion, EBSKMSKeyID: "alias/ebs"}, here: []types.Snapshot{io}, volumeType: "io2",
			want: &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), VolumeType: "io2", Iops: aws.Int32(5000), Encrypted: aws.Bool(true), KmsKeyId: aws.String("alias/ebs")}},
		{name: "copy region restores from the completed copy", cfg: west, here: []types.Snapshot{failed, pending, done}, volumeType: "gp3",
			want: &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000b"), VolumeType: "gp3", Iops: aws.Int32(4000), Throughput: aws.Int32(250)}},
		{name: "upstream plugin's gp2 snapshot, as upstream restores it", cfg: east, here: []types.Snapshot{upstream}, volumeType: "gp2",
			want: &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), VolumeType: "gp2"}, wantTags: map[string]string{model.TagBackup: mockec2.BackupName}},
		{name: "upstream plugin's io1 snapshot with Velero's IOPS", cfg: east, here: []types.Snapshot{upstream}, volumeType: "io1", iops: aws.Int64(3200),
			want: &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), VolumeType: "io1", Iops: aws.Int32(3200)}},
		{name: "pending copy", cfg: west, here: []types.Snapshot{pending},
			wantErr: []string{"snap-0000000a", "no completed copy", "snap-0000000c is pending at 45%"}},
		{name: "failed copy", cfg: west, here: []types.Snapshot{failed},
			wantErr: []string{"snap-0000000d is error: KMS key disabled"}},
		{name: "no copy", cfg: west, wantErr: []string{"snap-0000000a is not in us-west-2 and has no copy there"}},
		{name: "source not completed", cfg: east, here: []types.Snapshot{mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStatePending)},
			wantErr: []string{"snap-0000000a in us-east-1 is pending, not completed"}},
		{name: "volumeInitializationRate provisioned", cfg: model.Config{Region: mockec2.SrcRegion, Restore: model.RestoreConfig{InitializationRate: 300}}, here: []types.Snapshot{io}, volumeType: "io2",
			want: &ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), VolumeType: "io2", Iops: aws.Int32(5000), VolumeInitializationRate: aws.Int32(300)}},
		{name: "CreateVolume refused", cfg: east, here: []types.Snapshot{io}, volumeType: "io2", createErr: mockec2.HTTPErr(400, "InvalidParameterCombination"),
			want: &ec2.CreateVolumeInput{}, wantErr: []string{"snap-0000000a", "InvalidParameterCombination"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			here := f.Regions[tt.cfg.Region]
			here.Add(tt.here...)
			here.ServeDescribe()
			var got **ec2.CreateVolumeInput
			if tt.want != nil {
				got = serveCreateVolume(here, tt.createErr)
			}
			tt.cfg.RestoreAvailabilityZone = tt.cfg.Region + "b" // the zone choice has its own test
			id, err := newRestorer(f, tt.cfg).CreateVolumeFromSnapshot(context.Background(), "snap-0000000a", tt.volumeType, "us-east-1a", tt.iops)
			mockec2.WantErr(t, err, tt.wantErr...)
			if tt.want == nil || tt.createErr != nil {
				return
			}
			in := *got
			if id != "vol-0000000e" || aws.ToString(in.AvailabilityZone) != tt.cfg.Region+"b" {
				t.Errorf("volume %q in %q", id, aws.ToString(in.AvailabilityZone))
			}
			for _, c := range []struct{ name, got, want any }{
				{"SnapshotId", aws.ToString(in.SnapshotId), aws.ToString(tt.want.SnapshotId)},
				{"VolumeType", in.VolumeType, tt.want.VolumeType},
				{"Iops", aws.ToInt32(in.Iops), aws.ToInt32(tt.want.Iops)},
				{"Throughput", aws.ToInt32(in.Throughput), aws.ToInt32(tt.want.Throughput)},
				{"Encrypted", aws.ToBool(in.Encrypted), aws.ToBool(tt.want.Encrypted)},
				{"KmsKeyId", aws.ToString(in.KmsKeyId), aws.ToString(tt.want.KmsKeyId)},
				{"VolumeInitializationRate", aws.ToInt32(in.VolumeInitializationRate), aws.ToInt32(tt.want.VolumeInitializationRate)},
			} {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			if len(in.TagSpecifications) != 1 || in.TagSpecifications[0].ResourceType != types.ResourceTypeVolume {
				t.Fatalf("tag specifications %+v, want one for the volume", in.TagSpecifications)
			}
			tags := model.TagMap(in.TagSpecifications[0].Tags)
			if token := aws.ToString(in.ClientToken); token == "" || tags[model.TagRestoreToken] != token {
				t.Errorf("ClientToken %q, tag %q: want the same token", token, tags[model.TagRestoreToken])
			}
			delete(tags, model.TagRestoreToken)
			if tt.wantTags != nil && fmt.Sprint(tags) != fmt.Sprint(tt.wantTags) {
				t.Errorf("volume tags %v, want %v", tags, tt.wantTags)
			}
		})
	}
}

// When EC2 refuses the volume initialization rate for a volume, a location that allows the
// fallback restores it at the default rate, as a new request, and warns with EC2's message; one
// that does not fails naming the key, its value and EC2's message. Throttling, a lost answer and
// a credentials failure are not refusals of the rate. Only the volume returned is ever made.
func TestCreateVolumeRateRefused(t *testing.T) {
	io := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagVolumeType, "io2", model.TagVolumeIOPS, "5000"))
	refused := mockec2.HTTPErr(400, "InvalidParameterValue")
	tests := []struct {
		name      string
		fallback  bool
		answers   []error // CreateVolume's answers in order; nil makes the volume
		wantRates []int32 // VolumeInitializationRate of each CreateVolume
		wantErr   []string
		wantWarn  []string
	}{
		{name: "fallback restores at the default rate", fallback: true, answers: []error{refused, nil}, wantRates: []int32{300, 0},
			wantWarn: []string{`"volumeInitializationRate"`, `"300"`, "EC2 says InvalidParameterValue", "default rate", `"volumeInitializationFallback"`}},
		{name: "fallback for an unsupported snapshot", fallback: true, answers: []error{mockec2.HTTPErr(400, "UnsupportedOperation"), nil}, wantRates: []int32{300, 0},
			wantWarn: []string{"EC2 says UnsupportedOperation"}},
		{name: "fallback for a volume too small", fallback: true, answers: []error{mockec2.HTTPErr(400, "InvalidParameterCombination"), nil}, wantRates: []int32{300, 0},
			wantWarn: []string{"EC2 says InvalidParameterCombination"}},
		{name: "no fallback fails naming the rate", answers: []error{refused}, wantRates: []int32{300},
			wantErr: []string{"snap-0000000a", `"volumeInitializationRate"`, `"300"`, "EC2 says InvalidParameterValue", `"volumeInitializationFallback"`}},
		{name: "fallback refused too", fallback: true, answers: []error{refused, mockec2.HTTPErr(400, "InvalidParameterCombination")}, wantRates: []int32{300, 0},
			wantErr: []string{"InvalidParameterCombination"}, wantWarn: []string{"EC2 says InvalidParameterValue"}},
		{name: "a credentials failure is no refusal of the rate", fallback: true, answers: []error{&ec2api.CredentialsError{Err: mockec2.APIErr("InvalidParameterValue")}},
			wantRates: []int32{300}, wantErr: []string{"obtaining AWS credentials"}},
		{name: "another refusal is no refusal of the rate", fallback: true, answers: []error{mockec2.HTTPErr(400, "InvalidSnapshot.NotFound")}, wantRates: []int32{300},
			wantErr: []string{"InvalidSnapshot.NotFound"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			here := f.Src()
			here.Add(io)
			here.ServeDescribe()
			var rates []int32
			tokens := map[string]bool{}
			calls := 0
			here.M.EXPECT().CreateVolume(gomock.Any(), gomock.Any(), gomock.Any()).Times(len(tt.answers)).DoAndReturn(
				func(_ context.Context, in *ec2.CreateVolumeInput, _ ...func(*ec2.Options)) (*ec2.CreateVolumeOutput, error) {
					rates = append(rates, aws.ToInt32(in.VolumeInitializationRate))
					token := aws.ToString(in.ClientToken)
					if tags := model.TagMap(in.TagSpecifications[0].Tags); tags[model.TagRestoreToken] != token {
						t.Errorf("ClientToken %q, tag %q: want the same token", token, tags[model.TagRestoreToken])
					}
					tokens[token] = true
					err := tt.answers[calls]
					calls++
					if err != nil {
						return nil, err
					}
					return &ec2.CreateVolumeOutput{VolumeId: aws.String("vol-0000000e")}, nil
				})
			log, hook := logtest.NewNullLogger()
			cfg := model.Config{Region: mockec2.SrcRegion, RestoreAvailabilityZone: "us-east-1b",
				Restore: model.RestoreConfig{InitializationRate: 300, InitializationFallback: tt.fallback}}
			id, err := newRestorer(f, cfg, ebs.WithLogger(log)).CreateVolumeFromSnapshot(context.Background(), "snap-0000000a", "io2", "", nil)
			mockec2.WantErr(t, err, tt.wantErr...)
			if err == nil && id != "vol-0000000e" {
				t.Errorf("volume %q, want vol-0000000e", id)
			}
			if fmt.Sprint(rates) != fmt.Sprint(tt.wantRates) {
				t.Errorf("CreateVolume rates %v, want %v", rates, tt.wantRates)
			}
			if len(tokens) != len(tt.wantRates) {
				t.Errorf("%d distinct tokens for %d requests, want one per request", len(tokens), len(tt.wantRates))
			}
			var warned []string
			for _, e := range hook.AllEntries() {
				if e.Level == logrus.WarnLevel {
					warned = append(warned, e.Message)
				}
			}
			if len(tt.wantWarn) == 0 && len(warned) > 0 {
				t.Errorf("warned %q, want no warning", warned)
			}
			if len(tt.wantWarn) > 0 {
				if len(warned) != 1 {
					t.Fatalf("warnings %q, want one", warned)
				}
				for _, w := range tt.wantWarn {
					if !strings.Contains(warned[0], w) {
						t.Errorf("warning %q does not say %q", warned[0], w)
					}
				}
			}
		})
	}
}

func TestCreateVolumeFromSnapshotMalformedID(t *testing.T) {
	f := mockec2.NewFixture(t)
	_, err := newRestorer(f, model.Config{Region: mockec2.SrcRegion}).CreateVolumeFromSnapshot(context.Background(), "snap-nope", "gp3", "us-east-1a", nil)
	mockec2.WantErr(t, err, `"snap-nope"`)
}

// The zone of a restored volume: the backed-up volume's when the region has it available, else
// the same letter, else the region's first available AZ. restoreAvailabilityZone wins without
// a look at the zones (TestCreateVolumeFromSnapshot).
func TestRestoreZone(t *testing.T) {
	tests := []struct {
		name, volumeAZ string
		zones          []types.AvailabilityZone
		want           string
		wantErr        []string
	}{
		{name: "same AZ", volumeAZ: "us-west-2b", zones: westZones, want: "us-west-2b"},
		{name: "same letter in this region", volumeAZ: "us-east-1c", zones: westZones, want: "us-west-2c"},
		{name: "same letter not available", volumeAZ: "us-east-1d", zones: westZones, want: "us-west-2a"},
		{name: "letter this region lacks", volumeAZ: "us-east-1f", zones: westZones, want: "us-west-2a"},
		{name: "no AZ known", zones: westZones, want: "us-west-2a"},
		{name: "available Local Zone source AZ is kept", volumeAZ: "us-west-2-lax-1a", zones: westZones, want: "us-west-2-lax-1a"},
		{name: "Local Zone of another region goes to the AZ of the same letter", volumeAZ: "us-east-1-bos-1a", zones: westZones, want: "us-west-2a"},
		{name: "Wavelength source AZ", volumeAZ: "us-east-1-wl1-bos-wlz-1", zones: westZones, want: "us-west-2a"},
		{name: "no available zone", volumeAZ: "us-west-2a", zones: westZones[3:], wantErr: []string{"us-west-2 has no available availability zone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := restoreZone(mockec2.DstRegion, tt.zones, tt.volumeAZ)
			mockec2.WantErr(t, err, tt.wantErr...)
			if got != tt.want {
				t.Errorf("zone %q, want %q", got, tt.want)
			}
		})
	}
}

// The region's zones are listed once per process; a listing that fails says which region's.
func TestZoneList(t *testing.T) {
	tests := []struct {
		name     string
		zonesErr error
		wantErr  []string
	}{
		{name: "listed once per process"},
		{name: "listing fails", zonesErr: mockec2.NetErr(), wantErr: []string{"availability zones of us-west-2", "connection reset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			serveZones(f.Dst(), westZones, tt.zonesErr)
			s := newRestorer(f, model.Config{Region: mockec2.DstRegion})
			got, err := s.zoneList(context.Background())
			mockec2.WantErr(t, err, tt.wantErr...)
			if err != nil {
				return
			}
			if again, err := s.zoneList(context.Background()); err != nil || len(again) != len(got) {
				t.Errorf("second listing %v (%v), want the first's %v", again, err, got)
			}
		})
	}
}

func TestValidateRestoreZone(t *testing.T) {
	tests := []struct {
		name, configured string
		noCall           bool
		zonesErr         error
		wantErr          []string
	}{
		{name: "not set", noCall: true},
		{name: "available", configured: "us-west-2c"},
		{name: "impaired", configured: "us-west-2d", wantErr: []string{`"restoreAvailabilityZone"`, `"us-west-2d"`, "us-west-2a, us-west-2b, us-west-2c"}},
		{name: "available Local Zone", configured: "us-west-2-lax-1a"},
		{name: "other region's zone", configured: "us-east-1a", wantErr: []string{`"us-east-1a"`, "us-west-2"}},
		{name: "listing fails", configured: "us-west-2a", zonesErr: mockec2.HTTPErr(403, "UnauthorizedOperation"), wantErr: []string{"UnauthorizedOperation"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			if !tt.noCall {
				serveZones(f.Dst(), westZones, tt.zonesErr)
			}
			err := newRestorer(f, model.Config{Region: mockec2.DstRegion, RestoreAvailabilityZone: tt.configured}).ValidateRestoreZone(context.Background())
			mockec2.WantErr(t, err, tt.wantErr...)
		})
	}
}

func TestVolumeZone(t *testing.T) {
	f := mockec2.NewFixture(t)
	f.Src().Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagVolumeType, "gp2")))
	f.Src().ServeDescribe()
	serveCreateVolume(f.Src(), nil)
	s := newRestorer(f, model.Config{Region: mockec2.SrcRegion, RestoreAvailabilityZone: "us-east-1c"})
	id, err := s.CreateVolumeFromSnapshot(context.Background(), "snap-0000000a", "", "us-east-1a", nil)
	mockec2.WantErr(t, err)
	// A volume this process created is not described.
	if az, err := s.VolumeZone(context.Background(), id); err != nil || az != "us-east-1c" {
		t.Errorf("restored volume in %q (%v), want us-east-1c", az, err)
	}
	// Another is.
	f.ExpectVolume(mockec2.Volume(types.VolumeTypeGp2, 100, 0))
	if az, err := s.VolumeZone(context.Background(), mockec2.VolA); err != nil || az != "us-east-1a" {
		t.Errorf("volume in %q (%v), want us-east-1a", az, err)
	}
}

// As upstream: with AWS_CLUSTER_NAME set, a restored volume belongs to this cluster, not to the
// one whose volume was backed up.
func TestCreateVolumeFromSnapshotClusterTags(t *testing.T) {
	t.Setenv("AWS_CLUSTER_NAME", "dr")
	f := mockec2.NewFixture(t)
	f.Src().Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted,
		mockec2.WithTags(model.TagVolumeType, "gp2", "kubernetes.io/cluster/prod", "owned", "KubernetesCluster", "prod", "Name", "data")))
	f.Src().ServeDescribe()
	got := serveCreateVolume(f.Src(), nil)
	_, err := newRestorer(f, model.Config{Region: mockec2.SrcRegion, RestoreAvailabilityZone: "us-east-1a"}).
		CreateVolumeFromSnapshot(context.Background(), "snap-0000000a", "", "us-east-1a", nil)
	mockec2.WantErr(t, err)
	tags := map[string]string{}
	for _, ts := range (*got).TagSpecifications {
		for k, v := range model.TagMap(ts.Tags) {
			tags[k] = v
		}
	}
	want := map[string]string{model.TagBackup: mockec2.BackupName, "kubernetes.io/cluster/dr": "owned", "KubernetesCluster": "dr", "Name": "data",
		model.TagRestoreToken: aws.ToString((*got).ClientToken)}
	if fmt.Sprint(tags) != fmt.Sprint(want) {
		t.Errorf("volume tags %v, want %v", tags, want)
	}
}

// A restore whose CreateVolume answers are lost or throttled returns the volume EC2 made, found
// by its token's tag or in EC2's answer, and sends every request with one token, so EC2 makes
// one volume.
func TestCreateVolumeFromSnapshotAnswersLost(t *testing.T) {
	throttled := mockec2.HTTPErr(503, "RequestLimitExceeded")
	tests := []struct {
		name    string
		lost    int   // CreateVolume calls whose answer is lost before one is answered
		then    error // when set, the answer of the calls after the first lost one
		listed  int   // look-ups before the volume is listed (-1: never)
		want    string
		wantErr []string
	}{
		{name: "throttled twice, then answered", lost: 3, then: throttled, listed: -1, want: "vol-0000000e"},
		{name: "answer lost, then throttled for the whole patience", lost: 1000, then: throttled, listed: -1,
			wantErr: []string{"snap-0000000a", "RequestLimitExceeded", model.TagRestoreToken, "a volume may still appear"}},
		{name: "answer lost, volume listed", lost: 1, listed: 0, want: "vol-0000000e"},
		{name: "every answer lost, volume listed late", lost: 1000, listed: 3, want: "vol-0000000e"},
		{name: "answer lost, volume not listed yet, next request answered", lost: 2, listed: -1, want: "vol-0000000e"},
		{name: "no answer and nothing listed for the whole patience", lost: 1000, listed: -1,
			wantErr: []string{"snap-0000000a", "no volume from EC2", model.TagRestoreToken}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			r := f.Src()
			r.Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagVolumeType, "gp3")))
			r.ServeDescribe()
			var tokens []string
			r.M.EXPECT().CreateVolume(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
				func(_ context.Context, in *ec2.CreateVolumeInput, _ ...func(*ec2.Options)) (*ec2.CreateVolumeOutput, error) {
					tokens = append(tokens, aws.ToString(in.ClientToken))
					if len(tokens) <= tt.lost {
						if tt.then != nil && len(tokens) > 1 {
							return nil, tt.then
						}
						return nil, mockec2.NetErr()
					}
					return &ec2.CreateVolumeOutput{VolumeId: aws.String("vol-0000000e")}, nil
				})
			lookUps := 0
			r.M.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
				func(_ context.Context, in *ec2.DescribeVolumesInput, _ ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
					if len(in.Filters) != 1 || aws.ToString(in.Filters[0].Name) != "tag:"+model.TagRestoreToken || in.Filters[0].Values[0] != tokens[0] {
						t.Errorf("look-up %+v, want by the token's tag", in.Filters)
					}
					lookUps++
					if tt.listed < 0 || lookUps <= tt.listed {
						return &ec2.DescribeVolumesOutput{}, nil
					}
					return &ec2.DescribeVolumesOutput{Volumes: []types.Volume{{VolumeId: aws.String("vol-0000000e")}}}, nil
				})
			s := newRestorer(f, model.Config{Region: mockec2.SrcRegion, RestoreAvailabilityZone: "us-east-1a"}, ebs.WithCreatePatience(time.Minute))
			type result struct {
				id  string
				err error
			}
			res, ok := mockec2.OnClock(f, time.Hour, func(ctx context.Context) result {
				id, err := s.CreateVolumeFromSnapshot(ctx, "snap-0000000a", "", "us-east-1a", nil)
				return result{id, err}
			})
			if !ok {
				t.Fatal("CreateVolumeFromSnapshot did not return")
			}
			mockec2.WantErr(t, res.err, tt.wantErr...)
			if res.id != tt.want {
				t.Errorf("volume %q, want %q", res.id, tt.want)
			}
			for _, tok := range tokens {
				if tok != tokens[0] {
					t.Errorf("tokens %v, want one token for every request", tokens)
					break
				}
			}
		})
	}
}

// Restoring the same PV again in this restore (Velero retrying it) sends the same token, so EC2
// returns the volume it made; a request with other parameters has its own token.
func TestRestoreTokenIsTheRestoreOfThePV(t *testing.T) {
	base := ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0000000a"), AvailabilityZone: aws.String("us-east-1a"), VolumeType: types.VolumeTypeGp3}
	otherZone, otherSnap := base, base
	otherZone.AvailabilityZone = aws.String("us-east-1b")
	otherSnap.SnapshotId = aws.String("snap-0000000b")
	first := restoreTokenOf("session", mockec2.SrcRegion, &base, nil)
	tests := []struct {
		name       string
		region     string
		in         ec2.CreateVolumeInput
		volumeTags map[string]string
		wantSame   bool
	}{
		{name: "same PV again", region: mockec2.SrcRegion, in: base, wantSame: true},
		{name: "another zone", region: mockec2.SrcRegion, in: otherZone},
		{name: "another snapshot", region: mockec2.SrcRegion, in: otherSnap},
		{name: "another region", region: mockec2.DstRegion, in: base},
		{name: "other tags on the volume", region: mockec2.SrcRegion, in: base, volumeTags: map[string]string{"team": "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := restoreTokenOf("session", tt.region, &tt.in, tt.volumeTags)
			if (got == first) != tt.wantSame || len(got) > 64 {
				t.Errorf("token %q, first %q: same %v, want %v (at most 64 characters)", got, first, got == first, tt.wantSame)
			}
		})
	}
}

// An EKS Auto Mode PV names its zone only by topology.ebs.csi.eks.amazonaws.com/zone, which
// Velero does not read: Velero passes no zone, and the volume is restored in its own region into
// the zone recorded at backup. A zone Velero passes wins; a copy region chooses as before.
func TestCreateVolumeFromSnapshotZoneRecordedAtBackup(t *testing.T) {
	eastZones := []types.AvailabilityZone{
		zone("us-east-1a", types.AvailabilityZoneStateAvailable, "availability-zone"),
		zone("us-east-1b", types.AvailabilityZoneStateAvailable, "availability-zone"),
		zone("us-east-1c", types.AvailabilityZoneStateAvailable, "availability-zone"),
	}
	recorded := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagVolumeType, "gp3", model.TagVolumeAZ, "us-east-1c"))
	unrecorded := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagVolumeType, "gp3"))
	tests := []struct {
		name, region, veleroAZ string
		here                   types.Snapshot
		zones                  []types.AvailabilityZone
		want                   string
	}{
		{name: "Auto Mode PV in its own region: the recorded zone", region: mockec2.SrcRegion, here: recorded, zones: eastZones, want: "us-east-1c"},
		{name: "zone from Velero wins", region: mockec2.SrcRegion, veleroAZ: "us-east-1b", here: recorded, zones: eastZones, want: "us-east-1b"},
		{name: "snapshot taken before zones were recorded", region: mockec2.SrcRegion, here: unrecorded, zones: eastZones, want: "us-east-1a"},
		{name: "copy region keeps its choice", region: mockec2.DstRegion, here: mockec2.CopyOfSnap("snap-0000000b", recorded, types.SnapshotStateCompleted),
			zones: westZones, want: "us-west-2a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			r := f.Regions[tt.region]
			r.Add(tt.here)
			r.ServeDescribe()
			serveZones(r, tt.zones, nil)
			got := serveCreateVolume(r, nil)
			s := newRestorer(f, model.Config{Region: tt.region})
			_, err := s.CreateVolumeFromSnapshot(context.Background(), "snap-0000000a", "", tt.veleroAZ, nil)
			mockec2.WantErr(t, err)
			if az := aws.ToString((*got).AvailabilityZone); az != tt.want {
				t.Errorf("restored in %s, want %s", az, tt.want)
			}
		})
	}
}
