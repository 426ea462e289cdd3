package check

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/middleware"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// errNotDryRun is the guard's refusal of a mutating request without DryRun: the check changes
// nothing in AWS, and a request that could is never sent.
var errNotDryRun = errors.New("the check sends mutating EC2 requests only as dry runs")

// dryRunOnly is a per-call option that refuses, before anything is sent, every request that is
// neither a read nor a mutating request with DryRun set.
func dryRunOnly(o *ec2.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("CheckDryRunOnly",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if !harmless(in.Parameters) {
					return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("%T: %w", in.Parameters, errNotDryRun)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// harmless reports whether a request changes nothing: a read, or a mutating request with DryRun.
// Any other request is refused, including actions the check does not know.
func harmless(params any) bool {
	switch in := params.(type) {
	case *ec2.DescribeVolumesInput, *ec2.DescribeVolumeStatusInput, *ec2.DescribeSnapshotsInput, *ec2.DescribeAvailabilityZonesInput,
		*ec2.DescribeSnapshotAttributeInput, *ec2.DescribeLockedSnapshotsInput:
		return true
	case *ec2.CreateSnapshotInput:
		return aws.ToBool(in.DryRun)
	case *ec2.CopySnapshotInput:
		return aws.ToBool(in.DryRun)
	case *ec2.DeleteSnapshotInput:
		return aws.ToBool(in.DryRun)
	case *ec2.CreateVolumeInput:
		return aws.ToBool(in.DryRun)
	case *ec2.CreateTagsInput:
		return aws.ToBool(in.DryRun)
	case *ec2.DeleteTagsInput:
		return aws.ToBool(in.DryRun)
	case *ec2.ModifySnapshotAttributeInput:
		return aws.ToBool(in.DryRun)
	case *ec2.LockSnapshotInput:
		return aws.ToBool(in.DryRun)
	}
	return false
}

// guarded is an EC2 client whose every call carries dryRunOnly and retries at most a few times
// (ec2api.Bounded): a check reports what it finds and never waits out throttling.
type guarded struct{ c ec2api.EC2 }

var _ ec2api.EC2 = guarded{}

func opts(fns []func(*ec2.Options)) []func(*ec2.Options) {
	return append(append([]func(*ec2.Options){ec2api.Bounded}, fns...), dryRunOnly)
}

func (g guarded) CreateSnapshot(ctx context.Context, in *ec2.CreateSnapshotInput, o ...func(*ec2.Options)) (*ec2.CreateSnapshotOutput, error) {
	return g.c.CreateSnapshot(ctx, in, opts(o)...)
}

func (g guarded) CopySnapshot(ctx context.Context, in *ec2.CopySnapshotInput, o ...func(*ec2.Options)) (*ec2.CopySnapshotOutput, error) {
	return g.c.CopySnapshot(ctx, in, opts(o)...)
}

func (g guarded) DescribeSnapshots(ctx context.Context, in *ec2.DescribeSnapshotsInput, o ...func(*ec2.Options)) (*ec2.DescribeSnapshotsOutput, error) {
	return g.c.DescribeSnapshots(ctx, in, opts(o)...)
}

func (g guarded) DeleteSnapshot(ctx context.Context, in *ec2.DeleteSnapshotInput, o ...func(*ec2.Options)) (*ec2.DeleteSnapshotOutput, error) {
	return g.c.DeleteSnapshot(ctx, in, opts(o)...)
}

func (g guarded) DescribeVolumes(ctx context.Context, in *ec2.DescribeVolumesInput, o ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
	return g.c.DescribeVolumes(ctx, in, opts(o)...)
}

func (g guarded) DescribeVolumeStatus(ctx context.Context, in *ec2.DescribeVolumeStatusInput, o ...func(*ec2.Options)) (*ec2.DescribeVolumeStatusOutput, error) {
	return g.c.DescribeVolumeStatus(ctx, in, opts(o)...)
}

func (g guarded) CreateVolume(ctx context.Context, in *ec2.CreateVolumeInput, o ...func(*ec2.Options)) (*ec2.CreateVolumeOutput, error) {
	return g.c.CreateVolume(ctx, in, opts(o)...)
}

func (g guarded) CreateTags(ctx context.Context, in *ec2.CreateTagsInput, o ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	return g.c.CreateTags(ctx, in, opts(o)...)
}

func (g guarded) DeleteTags(ctx context.Context, in *ec2.DeleteTagsInput, o ...func(*ec2.Options)) (*ec2.DeleteTagsOutput, error) {
	return g.c.DeleteTags(ctx, in, opts(o)...)
}

func (g guarded) DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, o ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error) {
	return g.c.DescribeAvailabilityZones(ctx, in, opts(o)...)
}

func (g guarded) ModifySnapshotAttribute(ctx context.Context, in *ec2.ModifySnapshotAttributeInput, o ...func(*ec2.Options)) (*ec2.ModifySnapshotAttributeOutput, error) {
	return g.c.ModifySnapshotAttribute(ctx, in, opts(o)...)
}

func (g guarded) DescribeSnapshotAttribute(ctx context.Context, in *ec2.DescribeSnapshotAttributeInput, o ...func(*ec2.Options)) (*ec2.DescribeSnapshotAttributeOutput, error) {
	return g.c.DescribeSnapshotAttribute(ctx, in, opts(o)...)
}

func (g guarded) LockSnapshot(ctx context.Context, in *ec2.LockSnapshotInput, o ...func(*ec2.Options)) (*ec2.LockSnapshotOutput, error) {
	return g.c.LockSnapshot(ctx, in, opts(o)...)
}

func (g guarded) DescribeLockedSnapshots(ctx context.Context, in *ec2.DescribeLockedSnapshotsInput, o ...func(*ec2.Options)) (*ec2.DescribeLockedSnapshotsOutput, error) {
	return g.c.DescribeLockedSnapshots(ctx, in, opts(o)...)
}
