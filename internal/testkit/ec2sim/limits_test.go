package ec2sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestThrottlingBurst fires bursts at each bucket with a single-attempt client, so every
// RequestLimitExceeded reaches the caller, then lets the bucket refill on the fake clock.
func TestThrottlingBurst(t *testing.T) {
	const scale = 0.1
	tag := []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}
	filter := []types.Filter{{Name: aws.String("tag:k"), Values: []string{"v"}}}
	missing := "snap-0123456789abcdef0"
	tests := []struct {
		name   string
		size   int           // bucket size at this scale
		refill time.Duration // time for one token
		call   func(c *ec2.Client, vol string, i int) error
	}{
		{"DescribeSnapshots filtered", 10, 500 * time.Millisecond, func(c *ec2.Client, _ string, _ int) error {
			_, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{Filters: filter})
			return err
		}},
		{"DescribeSnapshots paginated", 10, 500 * time.Millisecond, func(c *ec2.Client, _ string, _ int) error {
			_, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{MaxResults: aws.Int32(1000)})
			return err
		}},
		{"DescribeSnapshots unfiltered", 5, time.Second, func(c *ec2.Client, _ string, _ int) error {
			_, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{})
			return err
		}},
		{"DescribeVolumes unfiltered", 5, time.Second, func(c *ec2.Client, _ string, _ int) error {
			_, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{})
			return err
		}},
		{"DescribeVolumes by ID", 10, 500 * time.Millisecond, func(c *ec2.Client, vol string, _ int) error {
			_, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{vol}})
			return err
		}},
		{"CreateSnapshot", 10, 2 * time.Second, func(c *ec2.Client, _ string, _ int) error {
			_, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String("vol-0123456789abcdef0")})
			return err
		}},
		{"DeleteSnapshot", 10, 2 * time.Second, func(c *ec2.Client, _ string, _ int) error {
			_, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(missing)})
			return err
		}},
		{"CreateVolume", 10, 2 * time.Second, func(c *ec2.Client, _ string, _ int) error {
			_, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(1)})
			return err
		}},
		{"CreateTags", 10, time.Second, func(c *ec2.Client, vol string, _ int) error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{vol}, Tags: tag})
			return err
		}},
		{"CopySnapshot", 5, 2 * time.Second, func(c *ec2.Client, _ string, _ int) error {
			_, err := c.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(missing)})
			return err
		}},
		{"DeleteVolume and DeleteTags share a bucket", 5, 2 * time.Second, func(c *ec2.Client, vol string, i int) error {
			if i%2 == 0 {
				_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{vol}, Tags: tag})
				return err
			}
			_, err := c.DeleteVolume(ctx, &ec2.DeleteVolumeInput{VolumeId: aws.String(missing)})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, Config{ThrottleScale: scale})
			vol := f.volume("us-east-1", VolumeSpec{})
			c := f.client("us-east-1")
			// The first burst finds the bucket full; the others see only what refilled.
			for round, want := range []int{tt.size, 1, 3} {
				ok := 0
				for i := range 2 * tt.size {
					err := tt.call(c, vol, i)
					switch errCode(err) {
					case "RequestLimitExceeded":
						if httpStatus(err) != 503 {
							t.Errorf("throttled with HTTP %d, want 503", httpStatus(err))
						}
					default:
						ok++
					}
				}
				if ok != want {
					t.Errorf("round %d: %d requests got through, want %d", round, ok, want)
				}
				f.clock.Advance(time.Duration(round+2)*tt.refill - tt.refill/2)
			}
			// Throttling is per region: another region has its own full buckets.
			if err := tt.call(f.client("eu-west-1"), vol, 0); errCode(err) == "RequestLimitExceeded" {
				t.Errorf("eu-west-1 throttled by us-east-1's traffic")
			}
			if n := f.srv.Sim.Stats().Total("", "RequestLimitExceeded"); n != 5*tt.size-4 {
				t.Errorf("RequestLimitExceeded counted %d times, want %d", n, 5*tt.size-4)
			}
		})
	}
}

// TestThrottlingAtAWSScale checks the documented bucket sizes at AWS's rates, which a config
// that names no rate gets, that buckets are independent (emptying CreateTags does not throttle
// DescribeSnapshots), and that only Unthrottled turns throttling off.
func TestThrottlingAtAWSScale(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		throttled bool
	}{
		{"scale 1", Config{ThrottleScale: 1}, true},
		{"default", Config{}, true},
		{"unthrottled", Config{Unthrottled: true, ThrottleScale: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, tc.cfg)
			vol := f.volume("us-east-1", VolumeSpec{})
			c := f.client("us-east-1")
			for i := range 101 {
				_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{vol},
					Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String(fmt.Sprint(i))}}})
				if want := map[bool]string{true: "RequestLimitExceeded", false: ""}[i == 100 && tc.throttled]; errCode(err) != want {
					t.Fatalf("CreateTags #%d: %v, want %q", i+1, err, want)
				}
			}
			if _, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{}); err != nil {
				t.Errorf("DescribeSnapshots after CreateTags burst: %v", err)
			}
			if !tc.throttled {
				return
			}
			st := f.srv.Sim.Stats()
			if st.Calls["us-east-1"]["CreateTags"]["ok"] != 100 || st.Total("CreateTags", "RequestLimitExceeded") != 1 || st.Total("CreateTags", "") != 101 {
				t.Errorf("stats %v", st.Calls)
			}
		})
	}
}

// TestThrottlingRiddenOutBySDK shows the SDK's standard retryer treats RequestLimitExceeded as
// throttling and retries it.
func TestThrottlingRiddenOutBySDK(t *testing.T) {
	srv, err := Start(Config{ThrottleScale: 0.02}, WithClock(newFakeClock())) // CreateTags: 2 tokens, no refill
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	vol := srv.Sim.AddVolumes("us-east-1", VolumeSpec{})[0]
	c := newClient(srv.URL, "us-east-1", 3)
	tag := []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}
	for range 2 {
		if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{vol}, Tags: tag}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{vol}, Tags: tag})
	if errCode(err) != "RequestLimitExceeded" {
		t.Fatalf("third call: %v", err)
	}
	if n := srv.Sim.Stats().Total("CreateTags", "RequestLimitExceeded"); n != 3 {
		t.Errorf("third call made %d throttled attempts, want 3 (SDK retried)", n)
	}
}
