// Package check is the plugin's preflight check (velero-plugin-for-aws-async check): for each
// VolumeSnapshotLocation of the plugin it checks its config (naming the key a misspelt one
// meant), whether the cluster's EBS volumes are in its region, finds the credentials as the
// item actions do, asks whose they are, whether each region answers, whether every EC2 action
// the plugin needs there is permitted (with EC2's DryRun for mutating actions, for real for
// reads), what the KMS keys and source volumes allow, how many copy slots are in use, how
// Velero's settings suit the copies and the provider's locations, and whether a location of the
// upstream AWS plugin would snapshot EBS volumes without copies; each finding passes, fails
// with its fix, warns, or says why it could not be checked (incomplete when the Kubernetes
// API refused a read, with the grant that would allow it).
//
// It changes nothing: its EC2 clients refuse, before sending, any request that is neither a read
// nor a dry run, and it only reads from the Kubernetes API.
package check

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/vault"
)

// Identities names the account of credentials, with STS GetCallerIdentity (*ec2api.Factory).
type Identities interface {
	Account(ctx context.Context, region string, creds ec2api.Credentials) (ec2api.Identity, error)
}

// Checker runs the checks. Its fields are the narrow ports it reads through.
type Checker struct {
	// Kube reads VolumeSnapshotLocations, PersistentVolumes, Schedules and Velero's Deployment.
	Kube client.Reader
	// Resolver finds each location's credentials; Clients and Identities reach AWS with them.
	Resolver   cli.Resolver
	Clients    cli.Clients
	Identities Identities
	// Buckets loads the AWS config of the vault bucket's S3 client (*ec2api.Factory).
	Buckets vault.Configs
	// Namespace is Velero's; Provider the plugin's (location.DefaultProvider).
	Namespace, Provider string
	// Shell is where the check runs: it labels the default credential chain.
	Shell Shell
}
