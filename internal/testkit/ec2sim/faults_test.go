package ec2sim

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestServerErrors(t *testing.T) {
	f := start(t, Config{Faults: Faults{ServerErrorRate: 1}})
	vol := f.volume("us-east-1", VolumeSpec{})
	c := f.client("us-east-1")
	for _, call := range []func() error{
		func() error {
			_, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
			return err
		},
		func() error { _, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{}); return err },
		func() error { _, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{}); return err },
	} {
		if err := call(); errCode(err) != "InternalError" || httpStatus(err) != 500 {
			t.Errorf("error %v (HTTP %d), want InternalError (500)", err, httpStatus(err))
		}
	}
	if n := len(f.srv.Sim.Snapshots("us-east-1")); n != 0 {
		t.Errorf("%d snapshots created behind a 500 that came before the effect", n)
	}
	if n := f.srv.Sim.Stats().Total("", "InternalError"); n != 3 {
		t.Errorf("InternalError counted %d times over all actions, want 3", n)
	}
	if n := f.srv.Sim.Stats().Total("DescribeVolumes", "InternalError"); n != 1 {
		t.Errorf("DescribeVolumes InternalError counted %d times", n)
	}
}

// TestDropAfterEffect: the client sees a failure (a 500 or a closed connection), yet the snapshot
// exists; actions outside DropActions are unaffected.
func TestDropAfterEffect(t *testing.T) {
	f := start(t, Config{Seed: 7, Faults: Faults{DropAfterEffectRate: 1}})
	c := f.client("us-east-1")
	const n = 20
	for range n {
		vol := f.volume("us-east-1", VolumeSpec{})
		_, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
		if err == nil {
			t.Fatal("CreateSnapshot succeeded despite DropAfterEffectRate 1")
		}
	}
	if got := len(f.srv.Sim.Snapshots("us-east-1")); got != n {
		t.Errorf("%d snapshots exist, want %d", got, n)
	}
	st := f.srv.Sim.Stats()
	closed, internal := st.Total("CreateSnapshot", "ConnectionClosed"), st.Total("CreateSnapshot", "InternalError")
	if closed == 0 || internal == 0 || closed+internal != n {
		t.Errorf("ConnectionClosed %d, InternalError %d; want both, summing to %d", closed, internal, n)
	}
	f.clock.Advance(time.Minute)
	src := f.srv.Sim.Snapshots("us-east-1")[0].ID
	if _, err := f.client("us-west-2").CopySnapshot(ctx, &ec2.CopySnapshotInput{
		SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(src),
	}); err == nil {
		t.Error("CopySnapshot succeeded despite DropAfterEffectRate 1")
	}
	if got := len(f.srv.Sim.Snapshots("us-west-2")); got != 1 {
		t.Errorf("%d copies exist, want 1", got)
	}
	if _, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{}); err != nil {
		t.Errorf("DescribeSnapshots is not a drop action: %v", err)
	}
	f.srv.Sim.SetFaults(Faults{DropAfterEffectRate: 1, DropActions: []string{"DeleteSnapshot"}})
	if _, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(src)}); err == nil {
		t.Error("DeleteSnapshot succeeded although it is now a drop action")
	}
	if got := len(f.srv.Sim.Snapshots("us-east-1")); got != n-1 {
		t.Errorf("%d snapshots after a dropped delete, want %d", got, n-1)
	}
}

func TestLatency(t *testing.T) {
	f := start(t, Config{Faults: Faults{Latency: Fixed(100 * time.Millisecond)}})
	begin := time.Now()
	if _, err := f.client("us-east-1").DescribeVolumes(ctx, &ec2.DescribeVolumesInput{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d < 100*time.Millisecond {
		t.Errorf("request took %v, want at least 100ms", d)
	}
}

// TestEventualConsistency: new snapshots, copies and volumes are missing from Describe* answers
// for InvisibleFor, though they exist.
func TestEventualConsistency(t *testing.T) {
	f := start(t, Config{Faults: Faults{InvisibleFor: Fixed(5 * time.Second)}})
	vol := f.volume("us-east-1", VolumeSpec{})
	c := f.client("us-east-1")
	snap := f.snapshot("us-east-1", vol, map[string]string{"velero.io/backup": "b"})
	newVol, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	volID := aws.ToString(newVol.VolumeId)
	visible := func() (bySnapID, byTag, byVolID bool) {
		_, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{snap}})
		bySnapID = err == nil
		if err != nil && errCode(err) != "InvalidSnapshot.NotFound" {
			t.Fatal(err)
		}
		out, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{
			Filters: []types.Filter{{Name: aws.String("tag:velero.io/backup"), Values: []string{"b"}}}})
		if err != nil {
			t.Fatal(err)
		}
		byTag = len(out.Snapshots) == 1
		_, err = c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{volID}})
		byVolID = err == nil
		if err != nil && errCode(err) != "InvalidVolume.NotFound" {
			t.Fatal(err)
		}
		return
	}
	if a, b, v := visible(); a || b || v {
		t.Errorf("visible at once: by ID %v, by tag %v, volume %v", a, b, v)
	}
	if len(f.srv.Sim.Snapshots("us-east-1")) != 1 {
		t.Error("the snapshot does not exist")
	}
	f.clock.Advance(5 * time.Second)
	if a, b, v := visible(); !a || !b || !v {
		t.Errorf("invisible after 5s: by ID %v, by tag %v, volume %v", a, b, v)
	}
	f.clock.Advance(5 * time.Second)
	out, err := f.client("us-west-2").CopySnapshot(ctx, &ec2.CopySnapshotInput{
		SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(snap)})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.client("us-west-2").DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{})
	if err != nil || len(d.Snapshots) != 0 {
		t.Errorf("copy %s visible at once: %v %v", aws.ToString(out.SnapshotId), d, err)
	}
}

func TestErrorStates(t *testing.T) {
	tests := []struct {
		name             string
		faults           Faults
		wantSnap, wantCp types.SnapshotState
	}{
		{"none", Faults{}, types.SnapshotStateCompleted, types.SnapshotStateCompleted},
		{"error volume", Faults{ErrorVolumes: []string{"vol-0000000000000bad0"}}, types.SnapshotStateError, ""},
		{"error copy volume", Faults{ErrorCopyVolumes: []string{"vol-0000000000000bad0"}}, types.SnapshotStateCompleted, types.SnapshotStateError},
		{"snapshot error rate", Faults{SnapshotErrorRate: 1}, types.SnapshotStateError, ""},
		{"copy error rate", Faults{CopyErrorRate: 1}, types.SnapshotStateCompleted, types.SnapshotStateError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, Config{})
			f.srv.Sim.SetFaults(tt.faults)
			vol := f.volume("us-east-1", VolumeSpec{ID: "vol-0000000000000bad0"})
			snap := f.snapshot("us-east-1", vol, nil)
			if s := f.describe("us-east-1", snap); s.State != types.SnapshotStatePending || s.StateMessage != nil {
				t.Errorf("new snapshot %s %q", s.State, aws.ToString(s.StateMessage))
			}
			f.clock.Advance(10 * time.Second)
			s := f.describe("us-east-1", snap)
			if s.State != tt.wantSnap || (s.State == types.SnapshotStateError) != (aws.ToString(s.StateMessage) != "") {
				t.Fatalf("snapshot %s %q, want %s", s.State, aws.ToString(s.StateMessage), tt.wantSnap)
			}
			dst := f.client("us-west-2")
			out, err := dst.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(snap)})
			if tt.wantCp == "" {
				if errCode(err) != "IncorrectState" {
					t.Errorf("copy of a failed snapshot: %v, want IncorrectState", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(20 * time.Second)
			c := f.describe("us-west-2", aws.ToString(out.SnapshotId))
			if c.State != tt.wantCp || (c.State == types.SnapshotStateError) != (aws.ToString(c.StateMessage) != "") {
				t.Errorf("copy %s %q, want %s", c.State, aws.ToString(c.StateMessage), tt.wantCp)
			}
			st := f.srv.Sim.Stats()
			if st.Snapshots["us-east-1"][string(tt.wantSnap)] != 1 || st.Copies["us-west-2"][string(tt.wantCp)] != 1 {
				t.Errorf("stats snapshots %v copies %v", st.Snapshots, st.Copies)
			}
		})
	}
}

func TestAllowedActions(t *testing.T) {
	f := start(t, Config{AllowedActions: []string{"DescribeVolumes", "CreateSnapshot"}})
	vol := f.volume("us-east-1", VolumeSpec{})
	c := f.client("us-east-1")
	tests := []struct {
		name   string
		call   func() error
		want   string
		status int
	}{
		{"allowed", func() error { _, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{}); return err }, "", 0},
		{"allowed too", func() error {
			_, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
			return err
		}, "", 0},
		{"dry run allowed", func() error {
			_, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol), DryRun: aws.Bool(true)})
			return err
		}, "DryRunOperation", 412},
		{"dry run not allowed", func() error {
			_, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String("snap-12345678"), DryRun: aws.Bool(true)})
			return err
		}, "UnauthorizedOperation", 403},
		{"not allowed", func() error { _, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{}); return err }, "UnauthorizedOperation", 403},
		{"unsupported action", func() error { _, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); return err }, "InvalidAction", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if errCode(err) != tt.want || httpStatus(err) != tt.status {
				t.Errorf("error %v (HTTP %d), want %q (%d)", err, httpStatus(err), tt.want, tt.status)
			}
		})
	}
}

// TestSeed: the same seed draws the same durations and fault decisions.
func TestSeed(t *testing.T) {
	run := func(seed int64) []string {
		f := start(t, Config{Seed: seed, SnapshotDuration: Range(time.Second, time.Hour), Faults: Faults{SnapshotErrorRate: 0.5}})
		c := f.client("us-east-1")
		for range 10 {
			vol := f.volume("us-east-1", VolumeSpec{})
			if _, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)}); err != nil {
				t.Fatal(err)
			}
		}
		var out []string
		for _, step := range []time.Duration{10 * time.Minute, 20 * time.Minute, time.Hour} {
			f.clock.Advance(step)
			for _, s := range f.srv.Sim.Snapshots("us-east-1") {
				out = append(out, s.State+s.Progress)
			}
		}
		return out
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different runs:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("different seeds, same run: %v", a)
	}
}
