package ebs

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// lockBatch is how many snapshot IDs one DescribeLockedSnapshots names.
const lockBatch = 200

// describeLocks adds the lock states of the vault copies among snaps that EC2 reports locked.
func describeLocks(ctx context.Context, c ec2api.EC2, snaps []types.Snapshot, into map[string]types.LockState) error {
	var ids []string
	for _, s := range snaps {
		if tagValue(s.Tags, TagVaultLock) != "" {
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

// locked reports whether a lock state holds the snapshot against deletion.
func locked(s types.LockState) bool {
	switch s {
	case types.LockStateCompliance, types.LockStateGovernance, types.LockStateComplianceCooloff:
		return true
	}
	return false
}
