package ec2sim

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// A volume from a snapshot initializes after it is available: at its provisioned rate, with the
// seconds left, else at the default lazy-loading rate; DescribeVolumeStatus reports it in EC2's
// shape, as the SDK reads it.
func TestDescribeVolumeStatusInitialization(t *testing.T) {
	f := start(t, Config{})
	src := f.volume("us-east-1", VolumeSpec{SizeGiB: 3}) // 3072 MiB
	snap := f.snapshot("us-east-1", src, nil)
	f.clock.Advance(10 * time.Second)
	c := f.client("us-east-1")
	create := func(rate *int32) string {
		out, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"),
			SnapshotId: aws.String(snap), VolumeInitializationRate: rate})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.VolumeId)
	}
	provisioned, lazy := create(aws.Int32(256)), create(nil) // 12 s and 61 s of initialization
	status := func() map[string]*types.InitializationStatusDetails {
		out, err := c.DescribeVolumeStatus(ctx, &ec2.DescribeVolumeStatusInput{VolumeIds: []string{provisioned, lazy}})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*types.InitializationStatusDetails{}
		for _, it := range out.VolumeStatuses {
			got[aws.ToString(it.VolumeId)] = it.InitializationStatusDetails
		}
		return got
	}
	f.clock.Advance(2 * time.Second) // available after VolumeCreateDuration
	steps := []struct {
		after                         time.Duration
		provisionedPct, left, lazyPct int64
	}{
		{after: 0, provisionedPct: 0, left: 12, lazyPct: 0},
		{after: 6 * time.Second, provisionedPct: 50, left: 6, lazyPct: 9},
		{after: 12 * time.Second, provisionedPct: 100, left: 0, lazyPct: 19},
		{after: 61 * time.Second, provisionedPct: 100, left: 0, lazyPct: 100},
	}
	var elapsed time.Duration
	for _, st := range steps {
		f.clock.Advance(st.after - elapsed)
		elapsed = st.after
		got := status()
		p, l := got[provisioned], got[lazy]
		if p == nil || l == nil {
			t.Fatalf("after %s: initialization %+v", st.after, got)
		}
		if p.InitializationType != types.InitializationTypeProvisionedRate || aws.ToInt64(p.Progress) != st.provisionedPct ||
			aws.ToInt64(p.EstimatedTimeToCompleteInSeconds) != st.left {
			t.Errorf("after %s: provisioned %s %d%% %ds left, want %d%% %ds left", st.after, p.InitializationType,
				aws.ToInt64(p.Progress), aws.ToInt64(p.EstimatedTimeToCompleteInSeconds), st.provisionedPct, st.left)
		}
		if l.InitializationType != types.InitializationTypeDefault || aws.ToInt64(l.Progress) != st.lazyPct || l.EstimatedTimeToCompleteInSeconds != nil {
			t.Errorf("after %s: default %s %d%% (estimate %v), want %d%% without estimate", st.after, l.InitializationType,
				aws.ToInt64(l.Progress), l.EstimatedTimeToCompleteInSeconds, st.lazyPct)
		}
	}
	if _, err := c.DescribeVolumeStatus(ctx, &ec2.DescribeVolumeStatusInput{VolumeIds: []string{"vol-0123456789abcdef0"}}); errCode(err) != "InvalidVolume.NotFound" {
		t.Errorf("unknown volume: %v, want InvalidVolume.NotFound", err)
	}
}
