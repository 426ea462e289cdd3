package audit

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
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

// ownOrVault is the Place kind of a place of kind k.
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

// World is what one audit read: the cluster's Velero objects, Velero's record of each backup's
// snapshots, and the snapshots of every place the locations keep them. It classifies nothing.
type World struct {
	// Now is when the read began.
	Now time.Time
	// Install is this install's identity (ebs.TagInstall); "" when it could not be read, and
	// InstallErr says why.
	Install, InstallErr string
	Locations           []Location
	Backups             []velerov1.Backup
	Schedules           []velerov1.Schedule
	StorageLocations    []velerov1.BackupStorageLocation
	// Records are Velero's record of each backup's native snapshots, by backup name.
	Records map[string]Record
	// Snapshots are those of every place read, carrying Velero's backup tag.
	Snapshots []Snapshot
	// DrillVolumes are the drills' volumes in the regions of the locations' own accounts.
	DrillVolumes []DrillVolume
	// Read are the places whose snapshots were listed: KindSource for a region of a location's
	// own account (sources and copies alike), KindVault for a vault account's region.
	Read []Place
	// Unread are the places (or other parts) that could not be read, with why.
	Unread []string
}

// Place is a region of a location's own account (Kind KindSource) or of its vault account
// (KindVault).
type Place struct {
	Kind   Kind
	Region string
}

// Location is one VolumeSnapshotLocation of the plugin, its config parsed.
type Location struct {
	Name   string
	Config model.Config
	// Err, when set, says why the config could not be parsed.
	Err string
}

// Record is Velero's record of a backup's native snapshots, kept with the backup in object
// storage (what `velero backup describe --details` shows). Err says why it could not be read.
type Record struct {
	Snapshots []RecordedSnapshot
	Err       string
}

// RecordedSnapshot is one snapshot Velero recorded for a backup.
type RecordedSnapshot struct {
	// ID is the snapshot ID CreateSnapshot returned; Location the VolumeSnapshotLocation.
	ID, Location, PV string
	// VolumeType, VolumeAZ and VolumeIOPS are the backed-up volume's, which a restore passes
	// to CreateVolumeFromSnapshot.
	VolumeType, VolumeAZ string
	VolumeIOPS           *int64
}

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
	// Lock is the snapshot's lock, nil when it has none.
	Lock *Lock
	// Creds are the credentials it was read with, which a deletion uses.
	Creds ec2api.Credentials `json:"-"`
}

// Lock is a snapshot lock as EC2 described it.
type Lock struct {
	// Mode is compliance or governance; State EC2's lock state (expired among them).
	Mode, State string
	Until       time.Time
}

// Held reports whether the lock still prevents a deletion.
func (l *Lock) Held() bool { return l != nil && l.State != "expired" }
