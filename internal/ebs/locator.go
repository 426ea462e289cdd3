package ebs

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Place is where an operation's snapshots or volumes may be: a VolumeSnapshotLocation and the
// EC2 clients of its credentials.
type Place struct {
	// Location is the VolumeSnapshotLocation's name; "" when no location could be read.
	Location string
	// Clients reach EC2 with the location's credentials.
	Clients ec2api.Regional
	// Note says why the default credential chain is used, when it is.
	Note string
	// Vault reaches EC2 with the credentials of the location's vault account; nil when the
	// location has none.
	Vault ec2api.Regional
	// VaultIdentity names the account of the vault credentials, as STS says; nil when it is not
	// checked. Nothing is shared with the vault before it confirms the vault account.
	VaultIdentity func(ctx context.Context) (string, error)
	// Config is the location's config as Velero passes it to the volume snapshotter; nil when
	// not known. The copies it asks for are expected of the location's snapshots.
	Config map[string]string
	// Unread is true when the Kubernetes API refused to show the backup's locations: the
	// copies they ask for cannot be told.
	Unread bool
}

// ClientsFor returns the clients of the target's account: the vault's for a vault, the
// location's otherwise. ok is false when the place has no credentials for the vault.
func (p Place) ClientsFor(ctx context.Context, tg model.Target) (c ec2api.EC2, ok bool, err error) {
	clients := p.Clients
	if tg.Vault() {
		if p.Vault == nil {
			return nil, false, nil
		}
		clients = p.Vault
	}
	c, err = clients(ctx, tg.Region)
	return c, err == nil, err
}

// Locator finds the places where a backup's (or a restore's) operation in region may have its
// snapshots or volumes: the locations Velero used for it, in order of preference.
type Locator interface {
	BackupPlaces(ctx context.Context, backup *velerov1.Backup, region string) ([]Place, error)
	RestorePlaces(ctx context.Context, restore *velerov1.Restore, region string) ([]Place, error)
}

// FixedPlace is the one place of a Tracker or VolumeWatcher made without a Locator.
func FixedPlace(clients, vault ec2api.Regional) []Place {
	return []Place{{Clients: clients, Vault: vault}}
}

// Where names a place for messages: "with the credentials of location X", or nothing.
func (p Place) Where() string {
	if p.Location == "" {
		return "with the default AWS credentials"
	}
	return "with the credentials of location " + p.Location
}

// locationResolver is the part of location.Resolver a Locator uses.
type locationResolver interface {
	ForBackup(ctx context.Context, backup *velerov1.Backup, region string) (location.Choice, error)
	ForRestore(ctx context.Context, restore *velerov1.Restore, region string) (location.Choice, error)
}

// resolvedLocator finds places through the VolumeSnapshotLocations a resolver reads from the
// Kubernetes API, with EC2 clients of each location's credentials.
type resolvedLocator struct {
	resolver locationResolver
	clients  *ec2api.Factory
}

// NewLocator returns a Locator that reads the backup's locations through resolver and reaches
// EC2 with the credentials of each, through clients.
func NewLocator(resolver locationResolver, clients *ec2api.Factory) Locator {
	return resolvedLocator{resolver: resolver, clients: clients}
}

// BackupPlaces returns the places of the backup's locations for region.
func (l resolvedLocator) BackupPlaces(ctx context.Context, backup *velerov1.Backup, region string) ([]Place, error) {
	c, err := l.resolver.ForBackup(ctx, backup, region)
	return l.places(c, region), err
}

// RestorePlaces returns the places of the restore's locations for region.
func (l resolvedLocator) RestorePlaces(ctx context.Context, restore *velerov1.Restore, region string) ([]Place, error) {
	c, err := l.resolver.ForRestore(ctx, restore, region)
	return l.places(c, region), err
}

// places are the places of the locations of c, their vault credentials' account asked of STS
// in region (once per process and credentials).
func (l resolvedLocator) places(c location.Choice, region string) []Place {
	out := make([]Place, 0, len(c.Locations))
	for _, loc := range c.Locations {
		p := Place{Location: loc.Name, Clients: l.clients.ForCredentials(loc.Credentials), Note: c.Note, Config: loc.Config, Unread: loc.Unread}
		if loc.Vault != nil {
			creds := *loc.Vault
			p.Vault = l.clients.ForCredentials(creds)
			p.VaultIdentity = func(ctx context.Context) (string, error) {
				id, err := l.clients.Account(ctx, region, creds)
				return id.Account, err
			}
		}
		out = append(out, p)
	}
	return out
}
