package rig

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// plainAttempts is how many times a plain client tries a request, riding out throttling.
const plainAttempts = 20

// NewEC2 returns a plain EC2 client of the simulator at url in region, for what is done behind
// the plugin's back (a person deleting pieces, another tool filling quotas, a baseline); opts
// adjust it, as a baseline's own retryer.
func NewEC2(url, region string, opts ...func(*ec2.Options)) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       region,
		BaseEndpoint: aws.String(url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIAPLAIN", SecretAccessKey: "plain"}, nil
		}),
		RetryMaxAttempts: plainAttempts,
	}, opts...)
}

// EC2 returns a plain EC2 client of the rig's simulator in region (NewEC2).
func (r *Rig) EC2(region string) *ec2.Client { return NewEC2(r.Server.URL, region) }

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
