package ebs

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// describePageSize is the largest page DescribeSnapshots returns.
const describePageSize = 1000

// describeSnapshots lists this account's snapshots matching filters, every page.
func describeSnapshots(ctx context.Context, c ec2api.EC2, filters []types.Filter, optFns ...func(*ec2.Options)) ([]types.Snapshot, error) {
	in := &ec2.DescribeSnapshotsInput{
		OwnerIds:   []string{"self"},
		Filters:    filters,
		MaxResults: aws.Int32(describePageSize),
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

// tagFilter matches resources whose tag key has one of values.
func tagFilter(key string, values ...string) types.Filter {
	return types.Filter{Name: aws.String("tag:" + key), Values: values}
}

// sleep waits for d on clk, or until ctx ends.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
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
