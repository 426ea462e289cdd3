package tracking

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// backupRead is what one look at EC2 showed of a backup in its source region, as EC2 listed it:
// every snapshot tagged with the backup's name there, the snapshots each target those name
// lists as the backup's copies (no entry: the place has no credentials for the target), the
// locks of the vault copies, and when the look began.
type backupRead struct {
	began  time.Time
	listed []types.Snapshot
	copies map[model.Target][]types.Snapshot
	locks  map[string]types.LockState
}

// readBackup reads the backup's snapshots in region through the place's credentials, then, in
// every target a snapshot that is no copy names, the backup's copies (one paginated
// DescribeSnapshots per target) and the locks of the vault copies. It classifies nothing.
func readBackup(ctx context.Context, place ebs.Place, region, backup string, began time.Time) (backupRead, error) {
	r := backupRead{began: began, copies: map[model.Target][]types.Snapshot{}, locks: map[string]types.LockState{}}
	c, err := place.Clients(ctx, region)
	if err != nil {
		return r, err
	}
	if r.listed, err = ebs.DescribeSnapshots(ctx, c, []types.Filter{ebs.TagFilter(model.TagBackup, backup)}, ec2api.Bounded); err != nil {
		return r, fmt.Errorf("describing the snapshots of backup %s in %s %s: %w", backup, region, place.Where(), err)
	}
	targets := map[model.Target]bool{}
	for i := range r.listed {
		if model.TagValue(r.listed[i].Tags, model.TagSourceSnapshotID) == "" {
			for _, tg := range model.TargetsOf(&r.listed[i]) {
				targets[tg] = true
			}
		}
	}
	for tg := range targets {
		dc, ok, err := place.ClientsFor(ctx, tg)
		if err != nil {
			return r, err
		}
		if !ok {
			continue // the vault phase says why its copies cannot be seen
		}
		found, err := ebs.DescribeSnapshots(ctx, dc, []types.Filter{ebs.TagFilter(model.TagBackup, backup), ebs.TagFilter(model.TagSourceRegion, region)}, ec2api.Bounded)
		if err != nil {
			return r, fmt.Errorf("describing the %s of backup %s in %s %s: %w", tg.CopiesName(), backup, tg, place.Where(), err)
		}
		r.copies[tg] = found
		if tg.Vault() {
			if err := ebs.DescribeLocks(ctx, dc, found, r.locks); err != nil {
				return r, fmt.Errorf("describing the locks of the vault copies of backup %s in %s %s: %w", backup, tg, place.Where(), err)
			}
		}
	}
	return r, nil
}
