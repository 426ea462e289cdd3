package ec2sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestOutage takes a region down in each mode: every request to it fails as the mode says and
// counts as RegionDown, other regions go on, and a frozen region's pending snapshot ends later
// by the outage's length.
func TestOutage(t *testing.T) {
	tests := []struct {
		name     string
		outage   Outage
		wantCode string // "" for no answer at all
		// wantLeft is how much of the snapshot's 10 s is left when the region returns after 6 s.
		wantLeft time.Duration
	}{
		{"no answer, time goes on", Outage{}, "", 0},
		{"unavailable, frozen", Outage{Mode: OutageUnavailable, Frozen: true}, "Unavailable", 6 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, Config{SnapshotDuration: Fixed(10 * time.Second)})
			vol := f.volume("us-east-1", VolumeSpec{})
			id := f.snapshot("us-east-1", vol, nil)
			f.clock.Advance(2 * time.Second)
			if err := f.srv.Sim.TakeDown("us-east-1", tc.outage); err != nil {
				t.Fatal(err)
			}
			_, err := f.client("us-east-1").DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{id}})
			var resp *awshttp.ResponseError
			switch {
			case err == nil:
				t.Fatal("a request to a region that is down succeeded")
			case tc.wantCode == "" && errors.As(err, &resp) && resp.HTTPStatusCode() != 0:
				t.Errorf("got HTTP %d, want no answer: %v", resp.HTTPStatusCode(), err)
			case tc.wantCode != "" && errCode(err) != tc.wantCode:
				t.Errorf("error %v, want %s", err, tc.wantCode)
			}
			if _, err := f.client("us-west-2").DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{}); err != nil {
				t.Errorf("us-west-2 while us-east-1 is down: %v", err)
			}
			if got := f.srv.Sim.Down(); len(got) != 1 || got[0] != "us-east-1" {
				t.Errorf("Down() = %v", got)
			}
			f.clock.Advance(6 * time.Second)
			f.srv.Sim.BringUp("us-east-1")
			f.clock.Advance(8*time.Second - time.Millisecond)
			s := f.describe("us-east-1", id)
			wantState := types.SnapshotStateCompleted
			if tc.wantLeft > 0 {
				wantState = types.SnapshotStatePending
			}
			if s.State != wantState {
				t.Errorf("snapshot %s %s after the outage, want %s", id, s.State, wantState)
			}
			f.clock.Advance(tc.wantLeft)
			if s := f.describe("us-east-1", id); s.State != types.SnapshotStateCompleted || aws.ToString(s.Progress) != "100%" {
				t.Errorf("snapshot %s %s %s once its time is up", id, s.State, aws.ToString(s.Progress))
			}
			if n := f.srv.Sim.Stats().Calls["us-east-1"]["DescribeSnapshots"][outcomeRegionDown]; n != 1 {
				t.Errorf("%d DescribeSnapshots counted RegionDown, want 1", n)
			}
		})
	}
	f := start(t, Config{})
	if err := f.srv.Sim.TakeDown("us-east-1", Outage{Mode: "flaky"}); err == nil {
		t.Error("TakeDown accepted an unknown mode")
	}
}

// TestSilentOutage: a silently down region accepts requests and never answers; a request whose
// client gives up has no effect, and one still waiting when the region returns is served.
func TestSilentOutage(t *testing.T) {
	f := start(t, Config{})
	vol := f.volume("us-east-1", VolumeSpec{})
	if err := f.srv.Sim.TakeDown("us-east-1", Outage{Mode: OutageSilent}); err != nil {
		t.Fatal(err)
	}
	const giveUp = 200 * time.Millisecond
	gaveUp, cancel := context.WithTimeout(ctx, giveUp)
	defer cancel()
	start := time.Now()
	_, err := f.client("us-east-1").CreateSnapshot(gaveUp, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
	if err == nil || time.Since(start) < giveUp {
		t.Fatalf("CreateSnapshot to a silent region: %v after %v, want no answer until the client gives up", err, time.Since(start))
	}
	if n := len(f.srv.Sim.Snapshots("us-east-1")); n != 0 {
		t.Errorf("%d snapshots made by a request nobody answered, want none", n)
	}
	if _, err := f.client("us-west-2").DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{}); err != nil {
		t.Errorf("us-west-2 while us-east-1 is silent: %v", err)
	}
	held := make(chan error, 1)
	go func() {
		_, err := f.client("us-east-1").DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{vol}})
		held <- err
	}()
	select {
	case err := <-held:
		t.Fatalf("answered while silent: %v", err)
	case <-time.After(giveUp):
	}
	f.srv.Sim.BringUp("us-east-1")
	if err := <-held; err != nil {
		t.Errorf("a request held until the region returned: %v", err)
	}
	if n := f.srv.Sim.Stats().Calls["us-east-1"]["CreateSnapshot"][outcomeRegionDown]; n != 1 {
		t.Errorf("%d CreateSnapshot counted RegionDown, want 1", n)
	}
}
