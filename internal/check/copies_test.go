package check

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The copy slots in use are the account's pending copies in the destination, the plugin's and
// other tools'; a snapshot being taken there takes none.
func TestCopySlotsInUse(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	srv, err := ec2sim.Start(ec2sim.Config{SnapshotDuration: ec2sim.Fixed(time.Minute), CopyDuration: ec2sim.Fixed(time.Hour)}, ec2sim.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx := t.Context()
	east, west := simClient(srv.URL, "us-east-1"), simClient(srv.URL, "us-west-2")
	vol := srv.Sim.AddVolumes("us-east-1", ec2sim.VolumeSpec{AvailabilityZone: "us-east-1a"})[0]
	snap, err := east.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Minute) // the source completes
	for _, tags := range [][]types.Tag{{{Key: aws.String(model.TagSourceSnapshotID), Value: snap.SnapshotId}}, nil} {
		in := &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: snap.SnapshotId}
		if tags != nil {
			in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tags}}
		}
		if _, err := west.CopySnapshot(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	westVol := srv.Sim.AddVolumes("us-west-2", ec2sim.VolumeSpec{AvailabilityZone: "us-west-2a"})[0]
	if _, err := west.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(westVol)}); err != nil {
		t.Fatal(err)
	} // a snapshot being taken: pending, and no copy
	lc := &locationCheck{}
	f := slots(ctx, lc, &place{region: "us-west-2", c: guarded{west}}, 60)
	if f.Status != Pass || f.Check != "copy slots in us-west-2" || !strings.HasPrefix(f.Detail, "2 of 20 in use (1 of the plugin's, 1 of other tools)") {
		t.Errorf("%+v", f)
	}
	if len(lc.copyTimes) != 1 || lc.copyTimes[0].each != time.Hour {
		t.Errorf("copy times %+v, want the location's 60 minutes", lc.copyTimes)
	}
}
