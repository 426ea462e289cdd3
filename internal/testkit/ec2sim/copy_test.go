package ec2sim

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestCopySnapshotCrossRegion sends CopySnapshot the way the SDK does it: to the destination
// region with SourceRegion set, so the SDK adds a PresignedUrl signed for the source region.
func TestCopySnapshotCrossRegion(t *testing.T) {
	f := start(t, Config{})
	vol := f.volume("us-east-1", VolumeSpec{SizeGiB: 7})
	src := f.snapshot("us-east-1", vol, map[string]string{"velero.io/backup": "b1"})
	f.clock.Advance(10 * time.Second)
	t0 := f.clock.Now()
	dst := f.client("us-west-2")
	out, err := dst.CopySnapshot(ctx, &ec2.CopySnapshotInput{
		SourceRegion:      aws.String("us-east-1"),
		SourceSnapshotId:  aws.String(src),
		Encrypted:         aws.Bool(true),
		KmsKeyId:          aws.String("arn:aws:kms:us-west-2:123456789012:key/dr"),
		TagSpecifications: tagSpec(types.ResourceTypeSnapshot, map[string]string{"copy-of": src}),
	})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.SnapshotId)
	if id == src || !wellFormed(id, "snap") || tagMap(out.Tags)["copy-of"] != src {
		t.Fatalf("CopySnapshot = %s %v", id, out.Tags)
	}
	s := f.describe("us-west-2", id)
	if s.State != types.SnapshotStatePending || aws.ToString(s.Progress) != "0%" ||
		aws.ToString(s.Description) != "[Copied "+src+" from us-east-1]" ||
		aws.ToString(s.VolumeId) != copyVolumeID || aws.ToInt32(s.VolumeSize) != 7 ||
		!aws.ToBool(s.Encrypted) || aws.ToString(s.KmsKeyId) != "arn:aws:kms:us-west-2:123456789012:key/dr" ||
		!aws.ToTime(s.StartTime).Equal(t0) || s.TransferType != types.TransferTypeStandard {
		t.Errorf("copy = %+v", s)
	}
	if s := f.describe("us-east-1", src); s.TransferType != "" {
		t.Errorf("source snapshot reports transfer type %q; EC2 reports it for copies only", s.TransferType)
	}
	if _, err := f.client("us-east-1").DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{id}}); errCode(err) != "InvalidSnapshot.NotFound" {
		t.Errorf("copy visible in the source region: %v", err)
	}
	f.clock.Advance(10 * time.Second)
	if s := f.describe("us-west-2", id); aws.ToString(s.Progress) != "50%" {
		t.Errorf("copy progress %s, want 50%%", aws.ToString(s.Progress))
	}
	f.clock.Advance(10 * time.Second)
	if s := f.describe("us-west-2", id); s.State != types.SnapshotStateCompleted {
		t.Errorf("copy state %s, want completed", s.State)
	}
	got := f.srv.Sim.Snapshots("us-west-2")
	if len(got) != 1 || got[0].SourceSnapshotID != src || got[0].SourceRegion != "us-east-1" || got[0].VolumeID != vol {
		t.Errorf("Snapshots(us-west-2) = %+v", got)
	}
}

func TestCopySnapshotCompletionDuration(t *testing.T) {
	f := start(t, Config{})
	src := f.snapshot("us-east-1", f.volume("us-east-1", VolumeSpec{}), nil)
	f.clock.Advance(10 * time.Second)
	dst := f.client("eu-central-1")
	out, err := dst.CopySnapshot(ctx, &ec2.CopySnapshotInput{
		SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(src),
		CompletionDurationMinutes: aws.Int32(15),
	})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.SnapshotId)
	f.clock.Advance(15*time.Minute - time.Second)
	if s := f.describe("eu-central-1", id); s.State != types.SnapshotStatePending || aws.ToInt32(s.CompletionDurationMinutes) != 15 {
		t.Errorf("before 15 min: %s, %d", s.State, aws.ToInt32(s.CompletionDurationMinutes))
	}
	f.clock.Advance(time.Second)
	if s := f.describe("eu-central-1", id); s.State != types.SnapshotStateCompleted {
		t.Errorf("at 15 min: %s", s.State)
	}
}

func TestCopySnapshotErrors(t *testing.T) {
	f := start(t, Config{CopyLimit: 2})
	vol := f.volume("us-east-1", VolumeSpec{})
	done := f.snapshot("us-east-1", vol, nil)
	f.clock.Advance(15 * time.Second)
	pending := f.snapshot("us-east-1", vol, nil)
	dst := f.client("us-west-2")
	cp := func(in ec2.CopySnapshotInput) error {
		if in.SourceRegion == nil {
			in.SourceRegion = aws.String("us-east-1")
		}
		_, err := dst.CopySnapshot(ctx, &in)
		return err
	}
	tests := []struct {
		name string
		in   ec2.CopySnapshotInput
		want string
	}{
		{"pending source", ec2.CopySnapshotInput{SourceSnapshotId: aws.String(pending)}, "IncorrectState"},
		{"unknown source", ec2.CopySnapshotInput{SourceSnapshotId: aws.String("snap-0123456789abcdef0")}, "InvalidSnapshot.NotFound"},
		{"source in another region", ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-2"), SourceSnapshotId: aws.String(done)}, "InvalidSnapshot.NotFound"},
		{"malformed source", ec2.CopySnapshotInput{SourceSnapshotId: aws.String("snap-!")}, "InvalidSnapshotID.Malformed"},
		{"duration not a multiple of 15", ec2.CopySnapshotInput{SourceSnapshotId: aws.String(done), CompletionDurationMinutes: aws.Int32(20)}, "InvalidParameterValue"},
		{"duration too long", ec2.CopySnapshotInput{SourceSnapshotId: aws.String(done), CompletionDurationMinutes: aws.Int32(2895)}, "InvalidParameterValue"},
		{"presigned URL for another snapshot", ec2.CopySnapshotInput{SourceSnapshotId: aws.String(done),
			PresignedUrl: aws.String("https://ec2.us-east-1.amazonaws.com/?Action=CopySnapshot&SourceSnapshotId=snap-11111111")}, "InvalidParameterValue"},
		{"aws: tag", ec2.CopySnapshotInput{SourceSnapshotId: aws.String(done),
			TagSpecifications: tagSpec(types.ResourceTypeSnapshot, map[string]string{"aws:x": "y"})}, "InvalidParameterValue"},
		{"first copy", ec2.CopySnapshotInput{SourceSnapshotId: aws.String(done)}, ""},
		{"second copy", ec2.CopySnapshotInput{SourceSnapshotId: aws.String(done)}, ""},
		{"third copy over the limit", ec2.CopySnapshotInput{SourceSnapshotId: aws.String(done)}, "ResourceLimitExceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := cp(tt.in); errCode(err) != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	// The limit is per destination region, and frees up as copies complete.
	if _, err := f.client("eu-west-1").CopySnapshot(ctx, &ec2.CopySnapshotInput{
		SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(done),
	}); err != nil {
		t.Errorf("copy to another region: %v", err)
	}
	f.clock.Advance(20 * time.Second)
	if err := cp(ec2.CopySnapshotInput{SourceSnapshotId: aws.String(done)}); err != nil {
		t.Errorf("copy after completion: %v", err)
	}
	st := f.srv.Sim.Stats()
	if st.PeakCopiesInFlight["us-west-2"] != 2 || st.Copies["us-west-2"]["completed"] != 2 || st.Copies["us-west-2"]["pending"] != 1 {
		t.Errorf("stats: peak %v copies %v", st.PeakCopiesInFlight, st.Copies)
	}
	if n := st.Total("CopySnapshot", "ResourceLimitExceeded"); n != 1 {
		t.Errorf("ResourceLimitExceeded counted %d times", n)
	}
}
