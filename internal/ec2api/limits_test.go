package ec2api

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/time/rate"
)

func TestClassify(t *testing.T) {
	filter := []types.Filter{{Name: aws.String("tag:velero.io/backup"), Values: []string{"b"}}}
	tests := []struct {
		name   string
		params any
		want   actionClass
	}{
		{"DescribeSnapshots unfiltered", &ec2.DescribeSnapshotsInput{}, describeUnfiltered},
		{"DescribeSnapshots owner only", &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}}, describeUnfiltered},
		{"DescribeSnapshots filtered", &ec2.DescribeSnapshotsInput{Filters: filter}, describeFiltered},
		{"DescribeSnapshots by ID", &ec2.DescribeSnapshotsInput{SnapshotIds: []string{"snap-1"}}, describeFiltered},
		{"DescribeSnapshots paginated", &ec2.DescribeSnapshotsInput{MaxResults: aws.Int32(1000)}, describeFiltered},
		{"DescribeVolumes unfiltered", &ec2.DescribeVolumesInput{}, describeUnfiltered},
		{"DescribeVolumes filtered", &ec2.DescribeVolumesInput{Filters: filter}, describeFiltered},
		{"DescribeVolumes by ID", &ec2.DescribeVolumesInput{VolumeIds: []string{"vol-1"}}, describeFiltered},
		{"DescribeVolumes paginated", &ec2.DescribeVolumesInput{MaxResults: aws.Int32(5)}, describeFiltered},
		{"DescribeVolumeStatus unfiltered", &ec2.DescribeVolumeStatusInput{}, describeUnfiltered},
		{"DescribeVolumeStatus by ID", &ec2.DescribeVolumeStatusInput{VolumeIds: []string{"vol-1"}}, describeFiltered},
		{"DescribeVolumeStatus paginated", &ec2.DescribeVolumeStatusInput{MaxResults: aws.Int32(5)}, describeFiltered},
		{"DescribeAvailabilityZones", &ec2.DescribeAvailabilityZonesInput{}, describeFiltered},
		{"CreateSnapshot", &ec2.CreateSnapshotInput{}, createSnapshot},
		{"DeleteSnapshot", &ec2.DeleteSnapshotInput{}, deleteSnapshot},
		{"CreateVolume", &ec2.CreateVolumeInput{}, createVolume},
		{"CreateTags", &ec2.CreateTagsInput{}, createTags},
		{"CopySnapshot", &ec2.CopySnapshotInput{}, otherMutating},
		{"DeleteTags", &ec2.DeleteTagsInput{}, otherMutating},
		{"unknown type", "not a request", otherMutating},
		{"nil", nil, otherMutating},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.params); got != tt.want {
				t.Errorf("classify = %d, want %d", got, tt.want)
			}
		})
	}
}

// The buckets follow AWS's documented sizes and refill rates.
func TestLimiterRates(t *testing.T) {
	want := map[actionClass][2]float64{
		describeFiltered: {100, 20}, describeUnfiltered: {50, 10}, createSnapshot: {100, 5},
		deleteSnapshot: {100, 5}, createVolume: {100, 5}, createTags: {100, 10}, otherMutating: {50, 5},
	}
	l := newRequestLimiter()
	if len(l.buckets) != len(want) {
		t.Errorf("%d buckets, want %d", len(l.buckets), len(want))
	}
	for class, w := range want {
		b := l.buckets[class]
		if b == nil || float64(b.Burst()) != w[0] || b.Limit() != rate.Limit(w[1]) {
			t.Errorf("class %d: bucket %v, want burst %v refill %v", class, b, w[0], w[1])
		}
	}
}

// Through a client, a request draws a token from its class's bucket only. CopySnapshot also
// builds a presigned request for the source region, which is never sent.
func TestLimiterMiddleware(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		call  func(c *ec2.Client) error
		class actionClass
	}{
		{"DescribeVolumes", describeVolumesOK, func(c *ec2.Client) error {
			_, err := c.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{VolumeIds: []string{"vol-01234567"}})
			return err
		}, describeFiltered},
		{"CreateSnapshot", createSnapshotOK, func(c *ec2.Client) error {
			_, err := c.CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{VolumeId: aws.String("vol-01234567")})
			return err
		}, createSnapshot},
		{"CopySnapshot", copySnapshotOK, func(c *ec2.Client) error {
			_, err := c.CopySnapshot(context.Background(), &ec2.CopySnapshotInput{SourceRegion: aws.String("us-west-2"), SourceSnapshotId: aws.String("snap-01234567")})
			return err
		}, otherMutating},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHTTP{answers: []fakeAnswer{{status: 200, body: tt.body}}}
			l := newRequestLimiter()
			if err := tt.call(testClient(h, nil, l.addTo)); err != nil {
				t.Fatal(err)
			}
			if h.attempts != 1 {
				t.Errorf("%d requests sent, want 1", h.attempts)
			}
			for class, b := range l.buckets {
				spent := b.Tokens() < float64(b.Burst())-0.5
				if spent != (class == tt.class) {
					t.Errorf("class %d: %.2f of %d tokens left", class, b.Tokens(), b.Burst())
				}
			}
		})
	}
}
