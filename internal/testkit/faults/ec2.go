package faults

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// EC2 returns a plain EC2 client of the rig's simulator in region, retrying throttling, for
// what a scenario does behind the plugin's back (deleting pieces, filling quotas).
func (r *Rig) EC2(region string) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       region,
		BaseEndpoint: aws.String(r.Server.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIAFAULTS", SecretAccessKey: "faults"}, nil
		}),
		RetryMaxAttempts: 20,
	})
}

// DeleteDirectly deletes snapshots in region as someone else would (a person, a lifecycle
// policy), not through the plugin.
func (r *Rig) DeleteDirectly(ctx context.Context, region string, ids ...string) error {
	c := r.EC2(region)
	for _, id := range ids {
		if _, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(id)}); err != nil {
			return fmt.Errorf("deleting %s in %s: %w", id, region, err)
		}
	}
	return nil
}

// SourceOf returns the source snapshot of pvName in backup and its copy in CopyRegion (zero
// values when absent).
func (r *Rig) SourceOf(backup, pvName string) (source, copy ec2sim.Snapshot) {
	for _, s := range r.Sim.Snapshots(SourceRegion) {
		if s.SourceSnapshotID == "" && s.Tags[ebs.TagBackup] == backup && s.Tags[ebs.TagPV] == pvName {
			source = s
		}
	}
	for _, c := range r.Sim.Snapshots(CopyRegion) {
		if source.ID != "" && c.SourceSnapshotID == source.ID {
			copy = c
		}
	}
	return source, copy
}
