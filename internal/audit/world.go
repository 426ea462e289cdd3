package audit

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/objectstore"
)

// Kind says what a snapshot is to a backup: the source Velero recorded, its copy in
// copyToRegion, or its copy in the vault account.
type Kind string

// Kinds of snapshots.
const (
	KindSource Kind = "source"
	KindCopy   Kind = "copy"
	KindVault  Kind = "vault"
)

// ownOrVault is the place kind of a snapshot of kind k: a region of a location's own account
// holds sources and copies alike.
func ownOrVault(k Kind) Kind {
	if k == KindVault {
		return KindVault
	}
	return KindSource
}

// placeName names a place of kind in account and region, for people.
func placeName(kind Kind, account, region string) string {
	switch kind {
	case KindCopy:
		return "copies in " + region
	case KindVault:
		return "vault " + account + " " + region
	}
	return "sources in " + region
}

// World is what one audit read: the cluster's Velero objects, what each backup storage location
// holds, Velero's record of each backup's snapshots, and the snapshots of every place the
// locations keep them. It classifies nothing.
type World struct {
	// Now is when the read began.
	Now time.Time
	// Install is this install's identity (ebs.TagInstall); "" when it could not be read, and
	// InstallErr says why.
	Install, InstallErr string
	// Only is the location --location names; "" audits every one.
	Only string
	// Locations are every VolumeSnapshotLocation of the plugin, audited or not: whichever
	// location reads a vault copy, any location's config may keep it (vaultRetainOnDelete).
	Locations        []Location
	Backups          []velerov1.Backup
	Schedules        []velerov1.Schedule
	StorageLocations []velerov1.BackupStorageLocation
	// Stored is what each storage location's object storage holds, by its name.
	Stored map[string]Stored
	// Records are Velero's record of each backup's native snapshots, by backup name, read from
	// the backup's storage location for the backups of the cluster that have one.
	Records map[string]Record
	// Snapshots are those of every place read, carrying Velero's backup tag.
	Snapshots []Snapshot
	// DrillVolumes are the drills' volumes in the regions of the locations' own accounts.
	DrillVolumes []DrillVolume
	// Places are the places the audit listed, or tried to.
	Places []PlaceRead
	// VaultBuckets are the vault buckets of the locations naming one, by location name.
	VaultBuckets map[string]BucketRead
}

// BucketRead is a location's vault bucket as the audit read it with the vault's credentials:
// the backups whose records it holds, by name, with when each was complete. Err says why it
// could not be read.
type BucketRead struct {
	Bucket  model.VaultBucket
	Records map[string]time.Time
	Err     string
}

// Stored is the backups a storage location's object storage holds, by name; Err says why they
// could not be listed.
type Stored struct {
	Backups []string
	Err     string
}

// Location is one VolumeSnapshotLocation of the plugin, its config parsed, with the credentials
// the item actions use for it.
type Location struct {
	Name   string
	Config model.Config
	// Err, when set, says why its config or its credentials could not be read.
	Err string
	// Creds are its own account's credentials; VaultCreds its vault account's, nil without a
	// vault.
	Creds      ec2api.Credentials
	VaultCreds *ec2api.Credentials
}

// PlaceRead is one place the audit listed snapshots in: a region of a location's own account
// (Kind KindSource) or of its vault account (KindVault), with the credentials it was read with.
type PlaceRead struct {
	Kind   Kind
	Creds  ec2api.Credentials
	Region string
	// Location names the location it was read through; Account the vault account it names,
	// for a vault place.
	Location, Account string
	// Err says why it could not be read.
	Err string
}

// Record is Velero's record of a backup's native snapshots, kept with the backup in object
// storage (what `velero backup describe --details` shows). Err says why it could not be read.
type Record struct {
	Snapshots []RecordedSnapshot
	Err       string
}

// RecordedSnapshot is one snapshot Velero recorded for a backup.
type RecordedSnapshot = objectstore.RecordedSnapshot

// Snapshot is one snapshot or copy as EC2 described it, in the place it was read.
type Snapshot struct {
	ID, Account, Region string
	Kind                Kind
	// State is EC2's: pending, completed, error, recoverable, recovering.
	State     string
	Started   time.Time
	Completed time.Time // zero when EC2 did not say
	// Bytes is EC2's FullSnapshotSizeInBytes when given (Exact), else the volume's size.
	Bytes int64
	Exact bool
	// Tier is EC2's storage tier: standard or archive.
	Tier string
	Tags map[string]string
	// Lock is the snapshot's lock, nil when it has none (read in every place that holds a
	// vault copy).
	Lock *Lock
	// Location is the location it was read through; Creds the credentials, which a deletion
	// uses.
	Location string             `json:"-"`
	Creds    ec2api.Credentials `json:"-"`
}

// Lock is a snapshot lock as EC2 described it.
type Lock struct {
	// Mode is compliance or governance; State EC2's lock state (expired among them).
	Mode, State string
	Until       time.Time
}

// Held reports whether the lock still prevents a deletion.
func (l *Lock) Held() bool { return l != nil && model.Locked(types.LockState(l.State)) }
