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
	provisioned, lazy := create(aws.Int32(256)), create(nil) // 12 s and 61.44 s of initialization
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
		{after: 61 * time.Second, provisionedPct: 100, left: 0, lazyPct: 99},
		{after: 62 * time.Second, provisionedPct: 100, left: 0, lazyPct: 100},
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

// With an initialization time scale, a volume initializes that many times faster than on EBS,
// its estimate on the same clock, while it still takes VolumeCreateDuration to be available.
func TestInitializationTimeScale(t *testing.T) {
	tests := []struct {
		name  string
		scale float64
		rate  *int32
		// available is when the volume is available, done when it is fully initialized, both
		// from CreateVolume.
		available, done time.Duration
	}{
		// 200 GiB at 300 MiB/s: 682.67 s on EBS
		{name: "EBS's time", scale: 1, rate: aws.Int32(300), available: 2 * time.Second, done: 2*time.Second + 682667*time.Millisecond},
		{name: "sixty times faster", scale: 60, rate: aws.Int32(300), available: 2 * time.Second, done: 2*time.Second + 11378*time.Millisecond},
		// 200 GiB at the default 50 MiB/s: 4,096 s on EBS
		{name: "default rate sixty times faster", scale: 60, available: 2 * time.Second, done: 2*time.Second + 68267*time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, Config{InitializationTimeScale: tc.scale})
			snap := f.snapshot("us-east-1", f.volume("us-east-1", VolumeSpec{SizeGiB: 200}), nil)
			f.clock.Advance(10 * time.Second)
			c := f.client("us-east-1")
			out, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"),
				SnapshotId: aws.String(snap), VolumeInitializationRate: tc.rate})
			if err != nil {
				t.Fatal(err)
			}
			id := aws.ToString(out.VolumeId)
			var elapsed time.Duration
			at := func(d time.Duration) (state types.VolumeState, pct int64, left *int64) {
				f.clock.Advance(d - elapsed)
				elapsed = d
				vols, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})
				if err != nil || len(vols.Volumes) != 1 {
					t.Fatalf("DescribeVolumes: %v", err)
				}
				st, err := c.DescribeVolumeStatus(ctx, &ec2.DescribeVolumeStatusInput{VolumeIds: []string{id}})
				if err != nil || len(st.VolumeStatuses) != 1 || st.VolumeStatuses[0].InitializationStatusDetails == nil {
					t.Fatalf("DescribeVolumeStatus: %+v, %v", st, err)
				}
				init := st.VolumeStatuses[0].InitializationStatusDetails
				return vols.Volumes[0].State, aws.ToInt64(init.Progress), init.EstimatedTimeToCompleteInSeconds
			}
			if state, _, _ := at(tc.available - time.Millisecond); state != types.VolumeStateCreating {
				t.Errorf("just before %s: %s, want creating", tc.available, state)
			}
			state, pct, left := at(tc.available)
			if state != types.VolumeStateAvailable || pct != 0 {
				t.Errorf("at %s: %s, %d%%; want available, 0%%", tc.available, state, pct)
			}
			if want := int64((tc.done - tc.available).Seconds()); tc.rate != nil && aws.ToInt64(left) != want {
				t.Errorf("at %s: %d s left, want %d", tc.available, aws.ToInt64(left), want)
			}
			if _, pct, _ := at(tc.done - time.Second); pct == 100 {
				t.Errorf("a second before %s: fully initialized already", tc.done)
			}
			if _, pct, _ := at(tc.done); pct != 100 {
				t.Errorf("at %s: %d%%, want 100%%", tc.done, pct)
			}
		})
	}
}
