// Package check is the plugin's preflight check (velero-plugin-for-aws-async check): for each
// VolumeSnapshotLocation of the plugin it checks its config (naming the key a misspelt one
// meant), whether the cluster's EBS volumes are in its region, finds the credentials as the
// item actions do, asks whose they are, whether each region answers, whether every EC2 action
// the plugin needs there is permitted (with EC2's DryRun for mutating actions, for real for
// reads), what the KMS keys and source volumes allow, how many copy slots are in use, and how
// Velero's settings suit the copies and the provider's locations; each finding passes, fails
// with its fix, warns, or says why it could not be checked (incomplete when the Kubernetes
// API refused a read, with the grant that would allow it).
//
// It changes nothing: its EC2 clients refuse, before sending, any request that is neither a read
// nor a dry run, and it only reads from the Kubernetes API.
package check

import (
	"context"
	"fmt"
	"sort"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

// Resolver finds a location's credentials as the item actions do (*location.Resolver).
type Resolver interface {
	ForBackup(ctx context.Context, backup *velerov1.Backup, region string) (location.Choice, error)
}

// Clients hands out EC2 clients (*ec2api.Factory).
type Clients interface {
	Client(ctx context.Context, region string, creds ec2api.Credentials) (ec2api.EC2, error)
}

// Identities names the account of credentials, with STS GetCallerIdentity (*ec2api.Factory).
type Identities interface {
	Account(ctx context.Context, region string, creds ec2api.Credentials) (ec2api.Identity, error)
}

// Checker runs the checks. Its fields are the narrow ports it reads through.
type Checker struct {
	// Kube reads VolumeSnapshotLocations, PersistentVolumes, Schedules and Velero's Deployment.
	Kube client.Reader
	// Resolver finds each location's credentials; Clients and Identities reach AWS with them.
	Resolver   Resolver
	Clients    Clients
	Identities Identities
	// Namespace is Velero's; Provider the plugin's (location.DefaultProvider).
	Namespace, Provider string
	// Shell is where the check runs: it labels the default credential chain.
	Shell Shell
}

// Run checks every location of the provider, or only the one named, then Velero's settings.
// It returns an error only when it cannot list the locations at all.
func (c *Checker) Run(ctx context.Context, only string) (Report, error) {
	rep := Report{Namespace: c.Namespace}
	var list velerov1.VolumeSnapshotLocationList
	if err := c.Kube.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		if u := newUnreadable("", "list volumesnapshotlocations.velero.io in namespace "+c.Namespace, err); u.refused {
			return rep, fmt.Errorf("listing the VolumeSnapshotLocations in namespace %s: %w; grant %s to whoever runs the check", c.Namespace, err, u.grant)
		}
		return rep, fmt.Errorf("listing the VolumeSnapshotLocations in namespace %s: %w", c.Namespace, err)
	}
	cluster := c.readCluster(ctx)
	var mine []velerov1.VolumeSnapshotLocation
	for _, v := range list.Items {
		if v.Spec.Provider != c.Provider {
			continue
		}
		cluster.locations = append(cluster.locations, v.Name)
		if only == "" || v.Name == only {
			mine = append(mine, v)
		}
	}
	sort.Strings(cluster.locations)
	sort.Slice(mine, func(i, j int) bool { return mine[i].Name < mine[j].Name })
	if len(mine) == 0 {
		rep.add(Section{Title: "VolumeSnapshotLocations", Findings: []Finding{c.noLocation(only, list.Items)}})
	}
	for _, v := range mine {
		rep.add(c.location(ctx, v, cluster))
	}
	velero := cluster.settings.section()
	if len(cluster.locations) > 0 {
		velero.Findings = append(velero.Findings, defaultLocation(c.Provider, c.Namespace, cluster.locations, cluster.settings))
	}
	rep.add(velero)
	return rep, nil
}

// noLocation is the failure of a check that found no location to check.
func (c *Checker) noLocation(only string, all []velerov1.VolumeSnapshotLocation) Finding {
	if only != "" {
		for _, v := range all {
			if v.Name == only {
				return fail("VolumeSnapshotLocation "+only, fmt.Sprintf("its provider is %q, not %s", v.Spec.Provider, c.Provider),
					"set spec.provider: "+c.Provider)
			}
		}
		return fail("VolumeSnapshotLocation "+only, "not found in namespace "+c.Namespace,
			fmt.Sprintf("velero snapshot-location create %s --provider %s --config region=REGION", only, c.Provider))
	}
	return fail("VolumeSnapshotLocations", fmt.Sprintf("none of provider %s in namespace %s", c.Provider, c.Namespace),
		fmt.Sprintf("velero snapshot-location create ebs --provider %s --config region=REGION", c.Provider))
}
