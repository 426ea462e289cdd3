package ebs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// DescribePageSize is the largest page DescribeSnapshots returns.
const DescribePageSize = 1000

// describeSnapshots lists this account's snapshots matching filters, every page.
func DescribeSnapshots(ctx context.Context, c ec2api.EC2, filters []types.Filter, optFns ...func(*ec2.Options)) ([]types.Snapshot, error) {
	in := &ec2.DescribeSnapshotsInput{
		OwnerIds:   []string{"self"},
		Filters:    filters,
		MaxResults: aws.Int32(DescribePageSize),
	}
	var all []types.Snapshot
	p := ec2.NewDescribeSnapshotsPaginator(c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, optFns...)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Snapshots...)
	}
	return all, nil
}

// TagFilter matches resources whose tag key has one of values.
func TagFilter(key string, values ...string) types.Filter {
	return types.Filter{Name: aws.String("tag:" + key), Values: values}
}

// sleep waits for d on clk, or until ctx ends.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// DescribeVolume describes one volume in region through clients, whose credentials creds names.
func DescribeVolume(ctx context.Context, clients ec2api.Regional, region string, creds ec2api.Credentials, volumeID string) (types.Volume, error) {
	if !awsid.IsVolumeID(volumeID) {
		return types.Volume{}, fmt.Errorf("%q is not an EBS volume ID", volumeID)
	}
	c, err := clients(ctx, region)
	if err != nil {
		return types.Volume{}, err
	}
	out, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{volumeID}})
	if err == nil && len(out.Volumes) == 0 || ec2api.IsNotFound(err) {
		return types.Volume{}, fmt.Errorf("volume %s does not exist in %s", volumeID, region)
	}
	if err != nil {
		return types.Volume{}, fmt.Errorf("describing volume %s in %s with %s: %w", volumeID, region, creds, err)
	}
	return out.Volumes[0], nil
}

// CreateTokenBytes is the size of a random token: one per CreateSnapshot call, and one per
// restore session.
const CreateTokenBytes = 12

// NewCreateToken returns a random token for one CreateSnapshot call or restore session.
func NewCreateToken() (string, error) {
	b := make([]byte, CreateTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("drawing a random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// describeSnapshot returns one snapshot by ID; found is false when EC2 does not know it.
func DescribeSnapshot(ctx context.Context, clients ec2api.Regional, region, id string) (types.Snapshot, bool, error) {
	c, err := clients(ctx, region)
	if err != nil {
		return types.Snapshot{}, false, err
	}
	out, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{id}})
	if ec2api.IsNotFound(err) || err == nil && len(out.Snapshots) == 0 {
		return types.Snapshot{}, false, nil
	}
	if err != nil {
		return types.Snapshot{}, false, fmt.Errorf("describing snapshot %s in %s: %w", id, region, err)
	}
	return out.Snapshots[0], true, nil
}

// CopiesOf lists the copies of a source snapshot that region holds, seen through clients.
func CopiesOf(ctx context.Context, clients ec2api.Regional, region, sourceID string) ([]types.Snapshot, error) {
	c, err := clients(ctx, region)
	if err != nil {
		return nil, err
	}
	copies, err := DescribeSnapshots(ctx, c, []types.Filter{TagFilter(model.TagSourceSnapshotID, sourceID)})
	if err != nil {
		return nil, fmt.Errorf("looking for copies of snapshot %s in %s: %w", sourceID, region, err)
	}
	return copies, nil
}

// lockBatch is how many snapshot IDs one DescribeLockedSnapshots names.
const lockBatch = 200

// DescribeLocks adds the lock states of the vault copies among snaps that EC2 reports locked.
func DescribeLocks(ctx context.Context, c ec2api.EC2, snaps []types.Snapshot, into map[string]types.LockState) error {
	var ids []string
	for _, s := range snaps {
		if model.TagValue(s.Tags, model.TagVaultLock) != "" {
			ids = append(ids, aws.ToString(s.SnapshotId))
		}
	}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), lockBatch)]
		ids = ids[len(batch):]
		in := &ec2.DescribeLockedSnapshotsInput{SnapshotIds: batch}
		for {
			out, err := c.DescribeLockedSnapshots(ctx, in, ec2api.Bounded)
			if err != nil {
				return err
			}
			for _, l := range out.Snapshots {
				into[aws.ToString(l.SnapshotId)] = l.LockState
			}
			if aws.ToString(out.NextToken) == "" {
				break
			}
			in.NextToken = out.NextToken
		}
	}
	return nil
}
