package ec2sim

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestDescribeVolumes(t *testing.T) {
	f := start(t, Config{Regions: map[string]RegionConfig{
		"us-east-1": {Volumes: []VolumeSpec{
			{ID: "vol-0aaaaaaaaaaaaaaa1", AvailabilityZone: "us-east-1b", Type: "io2", SizeGiB: 100, IOPS: 5000,
				Tags: map[string]string{"kubernetes.io/created-for/pv/name": "pv-1"}},
			{ID: "vol-0aaaaaaaaaaaaaaa2", Type: "gp3", SizeGiB: 20, Encrypted: true},
			{ID: "vol-0aaaaaaaaaaaaaaa3", Type: "st1", SizeGiB: 500},
		}},
	}})
	c := f.client("us-east-1")
	flt := func(name string, values ...string) []types.Filter {
		return []types.Filter{{Name: aws.String(name), Values: values}}
	}
	all := []string{"vol-0aaaaaaaaaaaaaaa1", "vol-0aaaaaaaaaaaaaaa2", "vol-0aaaaaaaaaaaaaaa3"}
	tests := []struct {
		name    string
		in      ec2.DescribeVolumesInput
		want    []string
		wantErr string
	}{
		{"all", ec2.DescribeVolumesInput{}, all, ""},
		{"ids", ec2.DescribeVolumesInput{VolumeIds: []string{all[2], all[0]}}, []string{all[2], all[0]}, ""},
		{"volume-id", ec2.DescribeVolumesInput{Filters: flt("volume-id", all[1])}, all[1:2], ""},
		{"tag", ec2.DescribeVolumesInput{Filters: flt("tag:kubernetes.io/created-for/pv/name", "pv-1")}, all[:1], ""},
		{"tag-key", ec2.DescribeVolumesInput{Filters: flt("tag-key", "kubernetes.io/*")}, all[:1], ""},
		{"availability-zone", ec2.DescribeVolumesInput{Filters: flt("availability-zone", "us-east-1a")}, all[1:], ""},
		{"volume-type", ec2.DescribeVolumesInput{Filters: flt("volume-type", "st1", "gp3")}, all[1:], ""},
		{"status", ec2.DescribeVolumesInput{Filters: flt("status", "available")}, all, ""},
		{"encrypted", ec2.DescribeVolumesInput{Filters: flt("encrypted", "true")}, all[1:2], ""},
		{"size", ec2.DescribeVolumesInput{Filters: flt("size", "500")}, all[2:], ""},
		{"unknown id", ec2.DescribeVolumesInput{VolumeIds: []string{"vol-12345678"}}, nil, "InvalidVolume.NotFound"},
		{"malformed id", ec2.DescribeVolumesInput{VolumeIds: []string{"disk-1"}}, nil, "InvalidVolumeID.Malformed"},
		{"unknown filter", ec2.DescribeVolumesInput{Filters: flt("colour", "red")}, nil, "InvalidParameterValue"},
		{"ids with max results", ec2.DescribeVolumesInput{VolumeIds: all[:1], MaxResults: aws.Int32(5)}, nil, "InvalidParameterCombination"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := c.DescribeVolumes(ctx, &tt.in)
			if errCode(err) != tt.wantErr {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			var got []string
			if out != nil {
				for _, v := range out.Volumes {
					got = append(got, aws.ToString(v.VolumeId))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	out, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: all[:1]})
	if err != nil {
		t.Fatal(err)
	}
	v := out.Volumes[0]
	if aws.ToString(v.AvailabilityZone) != "us-east-1b" || v.VolumeType != types.VolumeTypeIo2 ||
		aws.ToInt32(v.Size) != 100 || aws.ToInt32(v.Iops) != 5000 || v.State != types.VolumeStateAvailable ||
		tagMap(v.Tags)["kubernetes.io/created-for/pv/name"] != "pv-1" {
		t.Errorf("volume = %+v", v)
	}
}

// A volume seeded on an AWS Outpost reports its ARN through DescribeVolumes and Volumes; a
// volume in the region reports none.
func TestDescribeVolumesOutpost(t *testing.T) {
	const outpost = "arn:aws:outposts:us-east-1:111122223333:outpost/op-0123456789abcdef0"
	f := start(t, Config{Regions: map[string]RegionConfig{
		"us-east-1": {Volumes: []VolumeSpec{
			{ID: "vol-0aaaaaaaaaaaaaaa1", OutpostArn: outpost},
			{ID: "vol-0aaaaaaaaaaaaaaa2"},
		}},
	}})
	want := map[string]string{"vol-0aaaaaaaaaaaaaaa1": outpost, "vol-0aaaaaaaaaaaaaaa2": ""}
	out, err := f.client("us-east-1").DescribeVolumes(ctx, &ec2.DescribeVolumesInput{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range out.Volumes {
		if v.OutpostArn != nil && *v.OutpostArn == "" {
			t.Errorf("volume %s: empty OutpostArn element, want none", aws.ToString(v.VolumeId))
		}
		got[aws.ToString(v.VolumeId)] = aws.ToString(v.OutpostArn)
	}
	if !maps.Equal(got, want) {
		t.Errorf("DescribeVolumes OutpostArn = %v, want %v", got, want)
	}
	viewed := map[string]string{}
	for _, v := range f.srv.Sim.Volumes("us-east-1") {
		viewed[v.ID] = v.OutpostArn
	}
	if !maps.Equal(viewed, want) {
		t.Errorf("Volumes OutpostArn = %v, want %v", viewed, want)
	}
}

func TestDescribeVolumesPagination(t *testing.T) {
	f := start(t, Config{})
	for range 12 {
		f.volume("us-east-1", VolumeSpec{})
	}
	p := ec2.NewDescribeVolumesPaginator(f.client("us-east-1"), &ec2.DescribeVolumesInput{MaxResults: aws.Int32(5)})
	var sizes []int
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(out.Volumes))
	}
	if !slices.Equal(sizes, []int{5, 5, 2}) {
		t.Errorf("page sizes %v, want [5 5 2]", sizes)
	}
}

func TestCreateVolume(t *testing.T) {
	f := start(t, Config{Regions: map[string]RegionConfig{"us-west-2": {AvailabilityZones: []string{"us-west-2a", "us-west-2d"}}}})
	vol := f.volume("us-west-2", VolumeSpec{SizeGiB: 30, Encrypted: true, KmsKeyID: "key-src"})
	snap := f.snapshot("us-west-2", vol, nil)
	c := f.client("us-west-2")
	_, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-west-2a"), SnapshotId: aws.String(snap)})
	if errCode(err) != "IncorrectState" {
		t.Errorf("from pending snapshot: %v, want IncorrectState", err)
	}
	f.clock.Advance(10 * time.Second)

	tests := []struct {
		name    string
		in      ec2.CreateVolumeInput
		want    Volume
		wantErr string
	}{
		{"defaults from snapshot", ec2.CreateVolumeInput{SnapshotId: aws.String(snap)},
			Volume{Type: "gp2", SizeGiB: 30, IOPS: 100, Encrypted: true, KmsKeyID: "key-src"}, ""},
		{"gp3 with iops and throughput", ec2.CreateVolumeInput{SnapshotId: aws.String(snap), VolumeType: types.VolumeTypeGp3,
			Iops: aws.Int32(4000), Throughput: aws.Int32(250), Size: aws.Int32(40), KmsKeyId: aws.String("key-dst"),
			TagSpecifications: tagSpec(types.ResourceTypeVolume, map[string]string{"restored": "yes"})},
			Volume{Type: "gp3", SizeGiB: 40, IOPS: 4000, Throughput: 250, Encrypted: true, KmsKeyID: "key-dst", Tags: map[string]string{"restored": "yes"}}, ""},
		{"io1 from scratch", ec2.CreateVolumeInput{VolumeType: types.VolumeTypeIo1, Iops: aws.Int32(1000), Size: aws.Int32(10)},
			Volume{Type: "io1", SizeGiB: 10, IOPS: 1000}, ""},
		{"encrypted with default key", ec2.CreateVolumeInput{Size: aws.Int32(1), Encrypted: aws.Bool(true), VolumeType: types.VolumeTypeSc1},
			Volume{Type: "sc1", SizeGiB: 1, Encrypted: true, KmsKeyID: "arn:aws:kms:us-west-2:123456789012:alias/aws/ebs"}, ""},
		{"unknown AZ", ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-west-2b"), SnapshotId: aws.String(snap)}, Volume{}, "InvalidParameterValue"},
		{"smaller than snapshot", ec2.CreateVolumeInput{SnapshotId: aws.String(snap), Size: aws.Int32(29)}, Volume{}, "InvalidParameterValue"},
		{"no size nor snapshot", ec2.CreateVolumeInput{}, Volume{}, "MissingParameter"},
		{"io2 without iops", ec2.CreateVolumeInput{SnapshotId: aws.String(snap), VolumeType: types.VolumeTypeIo2}, Volume{}, "MissingParameter"},
		{"gp2 with iops", ec2.CreateVolumeInput{SnapshotId: aws.String(snap), Iops: aws.Int32(3000)}, Volume{}, "InvalidParameterCombination"},
		{"io1 with throughput", ec2.CreateVolumeInput{SnapshotId: aws.String(snap), VolumeType: types.VolumeTypeIo1, Iops: aws.Int32(100), Throughput: aws.Int32(200)}, Volume{}, "InvalidParameterCombination"},
		{"provisioned initialization rate", ec2.CreateVolumeInput{SnapshotId: aws.String(snap), VolumeInitializationRate: aws.Int32(300)},
			Volume{Type: "gp2", SizeGiB: 30, IOPS: 100, Encrypted: true, KmsKeyID: "key-src"}, ""},
		{"initialization rate below EC2's range", ec2.CreateVolumeInput{SnapshotId: aws.String(snap), VolumeInitializationRate: aws.Int32(99)}, Volume{}, "InvalidParameterValue"},
		{"initialization rate above EC2's range", ec2.CreateVolumeInput{SnapshotId: aws.String(snap), VolumeInitializationRate: aws.Int32(301)}, Volume{}, "InvalidParameterValue"},
		{"initialization rate without a snapshot", ec2.CreateVolumeInput{Size: aws.Int32(10), VolumeInitializationRate: aws.Int32(200)}, Volume{}, "InvalidParameterCombination"},
		{"bad type", ec2.CreateVolumeInput{SnapshotId: aws.String(snap), VolumeType: "gp9"}, Volume{}, "InvalidParameterValue"},
		{"unknown snapshot", ec2.CreateVolumeInput{SnapshotId: aws.String("snap-0123456789abcdef0")}, Volume{}, "InvalidSnapshot.NotFound"},
		{"malformed snapshot", ec2.CreateVolumeInput{SnapshotId: aws.String("snap0")}, Volume{}, "InvalidSnapshotID.Malformed"},
		{"aws: tag", ec2.CreateVolumeInput{SnapshotId: aws.String(snap),
			TagSpecifications: tagSpec(types.ResourceTypeVolume, map[string]string{"aws:cloudformation:stack": "x"})}, Volume{}, "InvalidParameterValue"},
		{"tags for the wrong resource type", ec2.CreateVolumeInput{SnapshotId: aws.String(snap),
			TagSpecifications: tagSpec(types.ResourceTypeSnapshot, map[string]string{"a": "b"})}, Volume{}, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.AvailabilityZone == nil {
				tt.in.AvailabilityZone = aws.String("us-west-2d")
			}
			out, err := c.CreateVolume(ctx, &tt.in)
			if errCode(err) != tt.wantErr {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got := Volume{Type: string(out.VolumeType), SizeGiB: aws.ToInt32(out.Size), IOPS: aws.ToInt32(out.Iops),
				Throughput: aws.ToInt32(out.Throughput), Encrypted: aws.ToBool(out.Encrypted), KmsKeyID: aws.ToString(out.KmsKeyId)}
			if len(out.Tags) > 0 {
				got.Tags = tagMap(out.Tags)
			}
			if !volumeEqual(got, tt.want) || out.State != types.VolumeStateCreating ||
				aws.ToString(out.AvailabilityZone) != "us-west-2d" || aws.ToString(out.SnapshotId) != aws.ToString(tt.in.SnapshotId) {
				t.Errorf("got %+v (%s in %s), want %+v", got, out.State, aws.ToString(out.AvailabilityZone), tt.want)
			}
		})
	}
	// creating -> available after VolumeCreateDuration.
	out, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-west-2a"), SnapshotId: aws.String(snap)})
	if err != nil {
		t.Fatal(err)
	}
	state := func() types.VolumeState {
		d, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{aws.ToString(out.VolumeId)}})
		if err != nil {
			t.Fatal(err)
		}
		return d.Volumes[0].State
	}
	f.clock.Advance(time.Second)
	if s := state(); s != types.VolumeStateCreating {
		t.Errorf("after 1s: %s", s)
	}
	f.clock.Advance(time.Second)
	if s := state(); s != types.VolumeStateAvailable {
		t.Errorf("after 2s: %s", s)
	}
}

func volumeEqual(a, b Volume) bool {
	if len(a.Tags) != len(b.Tags) {
		return false
	}
	for k, v := range a.Tags {
		if b.Tags[k] != v {
			return false
		}
	}
	a.Tags, b.Tags = nil, nil
	return a.Type == b.Type && a.SizeGiB == b.SizeGiB && a.IOPS == b.IOPS && a.Throughput == b.Throughput &&
		a.Encrypted == b.Encrypted && a.KmsKeyID == b.KmsKeyID
}

func TestDeleteVolume(t *testing.T) {
	f := start(t, Config{})
	vol := f.volume("us-east-1", VolumeSpec{})
	c := f.client("us-east-1")
	for _, tt := range []struct{ id, want string }{
		{vol, ""},
		{vol, "InvalidVolume.NotFound"},
		{"vol-bad", "InvalidVolumeID.Malformed"},
	} {
		_, err := c.DeleteVolume(ctx, &ec2.DeleteVolumeInput{VolumeId: aws.String(tt.id)})
		if errCode(err) != tt.want {
			t.Errorf("DeleteVolume(%s): %v, want %q", tt.id, err, tt.want)
		}
	}
	if v := f.srv.Sim.Volumes("us-east-1"); len(v) != 0 {
		t.Errorf("Volumes() = %v", v)
	}
}

func TestDescribeAvailabilityZones(t *testing.T) {
	f := start(t, Config{Regions: map[string]RegionConfig{"ap-south-1": {AvailabilityZones: []string{"ap-south-1a", "ap-south-1c"}}}})
	tests := []struct {
		region string
		in     ec2.DescribeAvailabilityZonesInput
		want   []string
	}{
		{"us-east-2", ec2.DescribeAvailabilityZonesInput{}, []string{"us-east-2a", "us-east-2b", "us-east-2c"}},
		{"ap-south-1", ec2.DescribeAvailabilityZonesInput{}, []string{"ap-south-1a", "ap-south-1c"}},
		{"ap-south-1", ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"ap-south-1c"}}, []string{"ap-south-1c"}},
		{"ap-south-1", ec2.DescribeAvailabilityZonesInput{Filters: []types.Filter{{Name: aws.String("zone-name"), Values: []string{"*a"}}}}, []string{"ap-south-1a"}},
	}
	for _, tt := range tests {
		out, err := f.client(tt.region).DescribeAvailabilityZones(ctx, &tt.in)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, az := range out.AvailabilityZones {
			got = append(got, aws.ToString(az.ZoneName))
			if aws.ToString(az.RegionName) != tt.region || az.State != types.AvailabilityZoneStateAvailable {
				t.Errorf("zone %+v", az)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %+v: got %v, want %v", tt.region, tt.in, got, tt.want)
		}
	}
}

// TestUnknownFilterInEmptyRegion: filter names are checked even when nothing would be compared.
func TestUnknownFilterInEmptyRegion(t *testing.T) {
	f := start(t, Config{})
	c := f.client("sa-east-1")
	bad := []types.Filter{{Name: aws.String("no-such-filter"), Values: []string{"x"}}}
	_, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{Filters: bad})
	if errCode(err) != "InvalidParameterValue" {
		t.Errorf("DescribeSnapshots: %v", err)
	}
	_, err = c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: bad})
	if errCode(err) != "InvalidParameterValue" {
		t.Errorf("DescribeVolumes: %v", err)
	}
	_, err = c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{Filters: bad})
	if errCode(err) != "InvalidParameterValue" {
		t.Errorf("DescribeAvailabilityZones: %v", err)
	}
}

// As EC2: a CreateVolume repeated with its client token gets the first request's volume and
// makes no other; the token with other parameters is refused.
func TestCreateVolumeClientToken(t *testing.T) {
	f := start(t, Config{})
	c := f.client("us-east-1")
	create := func(token string, size int32) (string, error) {
		out, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"),
			Size: aws.Int32(size), ClientToken: aws.String(token)})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.VolumeId), nil
	}
	first, err := create("restore-1", 10)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token string
		size        int32
		wantSame    bool
		wantErr     string
	}{
		{name: "same token and parameters", token: "restore-1", size: 10, wantSame: true},
		{name: "same token, other parameters", token: "restore-1", size: 20, wantErr: "IdempotentParameterMismatch"},
		{name: "another token", token: "restore-2", size: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := create(tt.token, tt.size)
			if errCode(err) != tt.wantErr {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if err == nil && (id == first) != tt.wantSame {
				t.Errorf("volume %s, first %s: same %v, want %v", id, first, id == first, tt.wantSame)
			}
		})
	}
	if n := len(f.srv.Sim.Volumes("us-east-1")); n != 2 {
		t.Errorf("%d volumes, want 2", n)
	}
}
