package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// RunBlocking runs the blocking baseline on measure volumes (one after another: per volume
// DescribeVolumes as core's GetVolumeInfo, CreateSnapshot, wait until completed,
// CopySnapshot, wait until the copy completes) and
// scales makespan and calls linearly to the scenario's volume count, which is exact for a
// serial strategy. It polls every sync period.
func RunBlocking(ctx context.Context, sc Scenario, measure int) (Result, error) {
	measure = min(measure, sc.Volumes)
	srv, err := rig.StartSimulator(sc.simConfig())
	if err != nil {
		return Result{}, err
	}
	defer srv.Close()
	pvs := fixture.Fleet{Region: sc.SourceRegion, Count: measure}.Seed(srv.Sim)
	b := blocking{src: newEC2(srv.URL, sc.SourceRegion), dst: newEC2(srv.URL, sc.CopyRegion), sc: sc}
	res := sc.newResult("blocking", measure)
	start := time.Now()
	for _, pv := range pvs {
		if err := b.backupVolume(ctx, fixture.VolumeIDOf(pv), pv.Name); err != nil {
			res.FailedOps++
		}
	}
	res.fill(sc.LowerBound(), sc.CopyRegion, srv.Sim.Stats(), time.Since(start))
	res.FailedOps = res.FailedOps * sc.Volumes / measure
	return res, nil
}

// blocking is the blocking strategy of the earlier cross-region forks.
type blocking struct {
	src, dst *ec2.Client
	sc       Scenario
}

func (b blocking) backupVolume(ctx context.Context, volumeID, pv string) error {
	if _, err := b.src.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{volumeID}}); err != nil {
		return err
	}
	out, err := b.src.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(volumeID), TagSpecifications: []types.TagSpecification{{
		ResourceType: types.ResourceTypeSnapshot, Tags: []types.Tag{{Key: aws.String("velero.io/pv"), Value: aws.String(pv)}},
	}}})
	if err != nil {
		return err
	}
	if err := b.wait(ctx, b.src, aws.ToString(out.SnapshotId)); err != nil {
		return err
	}
	cp, err := b.dst.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String(b.sc.SourceRegion), SourceSnapshotId: out.SnapshotId})
	if err != nil {
		return err
	}
	return b.wait(ctx, b.dst, aws.ToString(cp.SnapshotId))
}

// wait polls DescribeSnapshots every sync period until the snapshot is completed.
func (b blocking) wait(ctx context.Context, c *ec2.Client, id string) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.sc.SyncPeriod.Duration):
		}
		out, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{id}})
		if err != nil {
			if ec2api.IsNotFound(err) {
				continue // not visible yet
			}
			return err
		}
		if len(out.Snapshots) == 0 {
			continue
		}
		switch out.Snapshots[0].State {
		case types.SnapshotStateCompleted:
			return nil
		case types.SnapshotStateError:
			return fmt.Errorf("snapshot %s: %s", id, aws.ToString(out.Snapshots[0].StateMessage))
		}
	}
}
