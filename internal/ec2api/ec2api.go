// Package ec2api gives the plugin its EC2 clients (and the AWS config an S3 client of the same
// credentials is built from): one per region per process, with the SDK's
// adaptive retry mode tuned to ride out throttling, AWS's documented request rates applied on
// the client side, and a classification of EC2 errors.
package ec2api

//go:generate go run github.com/golang/mock/mockgen@v1.6.0 -destination=mock/ec2.go -package=mock . EC2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// EC2 is the part of the EC2 API the plugin uses. *ec2.Client satisfies it.
type EC2 interface {
	CreateSnapshot(ctx context.Context, in *ec2.CreateSnapshotInput, optFns ...func(*ec2.Options)) (*ec2.CreateSnapshotOutput, error)
	CopySnapshot(ctx context.Context, in *ec2.CopySnapshotInput, optFns ...func(*ec2.Options)) (*ec2.CopySnapshotOutput, error)
	DescribeSnapshots(ctx context.Context, in *ec2.DescribeSnapshotsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSnapshotsOutput, error)
	DeleteSnapshot(ctx context.Context, in *ec2.DeleteSnapshotInput, optFns ...func(*ec2.Options)) (*ec2.DeleteSnapshotOutput, error)
	DescribeVolumes(ctx context.Context, in *ec2.DescribeVolumesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error)
	DescribeVolumeStatus(ctx context.Context, in *ec2.DescribeVolumeStatusInput, optFns ...func(*ec2.Options)) (*ec2.DescribeVolumeStatusOutput, error)
	CreateVolume(ctx context.Context, in *ec2.CreateVolumeInput, optFns ...func(*ec2.Options)) (*ec2.CreateVolumeOutput, error)
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, optFns ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	DeleteTags(ctx context.Context, in *ec2.DeleteTagsInput, optFns ...func(*ec2.Options)) (*ec2.DeleteTagsOutput, error)
	DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
	ModifySnapshotAttribute(ctx context.Context, in *ec2.ModifySnapshotAttributeInput, optFns ...func(*ec2.Options)) (*ec2.ModifySnapshotAttributeOutput, error)
	DescribeSnapshotAttribute(ctx context.Context, in *ec2.DescribeSnapshotAttributeInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSnapshotAttributeOutput, error)
	LockSnapshot(ctx context.Context, in *ec2.LockSnapshotInput, optFns ...func(*ec2.Options)) (*ec2.LockSnapshotOutput, error)
	DescribeLockedSnapshots(ctx context.Context, in *ec2.DescribeLockedSnapshotsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeLockedSnapshotsOutput, error)
}

var _ EC2 = (*ec2.Client)(nil)
