package plugin

import (
	"context"
	"fmt"
	"maps"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/velero-async/velero-plugin-for-aws/internal/deleting"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/pv"
	"github.com/velero-async/velero-plugin-for-aws/internal/restoring"
	"github.com/velero-async/velero-plugin-for-aws/internal/tracking"
)

// VolumeSnapshotter is the VolumeSnapshotLocation provider velero-async.io/aws.
type VolumeSnapshotter struct {
	clients *ec2api.Factory
	handoff *ebs.Handoff
	vault   VaultCredentials
	log     logrus.FieldLogger
	config  map[string]string
	creds   ec2api.Credentials // the location's, as the last Init read them
	// The location's jobs, made by the last Init.
	snapshots *tracking.Snapshotter
	deleter   *deleting.Deleter
	restorer  *restoring.Restorer
	install   func() string // this install's identity, for ebs.TagInstall; nil: none
}

// VaultCredentials returns the credentials a location's config names for its vault account,
// nil when it names none.
type VaultCredentials func(ctx context.Context, config map[string]string) (*ec2api.Credentials, error)

// NewVolumeSnapshotter returns a VolumeSnapshotter whose EC2 clients come from clients, tagging
// snapshots with the backup UIDs the backup item action hands over through handoff, and
// reaching a location's vault account with the credentials vault finds.
func NewVolumeSnapshotter(clients *ec2api.Factory, handoff *ebs.Handoff, vault VaultCredentials, log logrus.FieldLogger) *VolumeSnapshotter {
	return &VolumeSnapshotter{clients: clients, handoff: handoff, vault: vault, log: log}
}

// TagInstall makes the snapshots taken carry the identity of this Velero install that install
// returns (ebs.TagInstall), "" when it cannot be read.
func (v *VolumeSnapshotter) TagInstall(install func() string) *VolumeSnapshotter {
	v.install = install
	return v
}

// Init validates the location's config. Velero calls it again before every restored volume,
// having written the location's Secret to credentialsFile: a path named after the Secret and
// key, which another location's Secret may share. The file's content is read here and the
// snapshotter's clients keyed by it, whatever the path holds later. The same config and content
// keep the snapshotter, and with it what it learnt from EC2.
func (v *VolumeSnapshotter) Init(config map[string]string) error {
	cfg, err := model.ParseConfig(config)
	if err != nil {
		return err
	}
	if cfg.Credentials, err = v.clients.Pin(cfg.Credentials); err != nil {
		return fmt.Errorf("the location's credentials: %w", err)
	}
	if v.snapshots != nil && maps.Equal(config, v.config) && cfg.Credentials == v.creds {
		return nil
	}
	opts := []ebs.Option{ebs.WithLogger(v.log), ebs.WithHandoff(v.handoff)}
	if cfg.Vault.Enabled() {
		config, own := maps.Clone(config), cfg.Credentials
		opts = append(opts, ebs.WithVaultClients(func(ctx context.Context, region string) (ec2api.EC2, error) {
			creds, err := v.vault(ctx, config) // read when needed: the Secret may change, and only deletions need it
			if err != nil || creds == nil {
				return nil, fmt.Errorf("the credentials of vault account %s: %w", cfg.Vault.AccountID, err)
			}
			if creds.File == own.File { // the location's own file: its content as Init read it
				pinned := own
				pinned.Profile = creds.Profile
				creds = &pinned
			}
			return v.clients.Client(ctx, region, *creds)
		}))
	}
	ctx, cancel := callContext(ec2api.SnapshotterCallTimeout)
	defer cancel()
	clients := v.clients.ForCredentials(cfg.Credentials)
	restorer := restoring.NewRestorer(cfg, clients, opts...)
	if err := restorer.ValidateRestoreZone(ctx); err != nil {
		return err
	}
	snapshots := tracking.NewSnapshotter(cfg, clients, opts...)
	if v.install != nil {
		snapshots.SetInstall(v.install())
	}
	v.snapshots, v.deleter, v.restorer = snapshots, deleting.NewDeleter(cfg, clients, opts...), restorer
	v.config, v.creds = maps.Clone(config), cfg.Credentials
	return nil
}

// CreateVolumeFromSnapshot creates a volume from the snapshot, or from its copy in this region,
// within ec2api.SnapshotterCallTimeout.
func (v *VolumeSnapshotter) CreateVolumeFromSnapshot(snapshotID, volumeType, volumeAZ string, iops *int64) (string, error) {
	ctx, cancel := callContext(ec2api.SnapshotterCallTimeout)
	defer cancel()
	return v.restorer.CreateVolumeFromSnapshot(ctx, snapshotID, volumeType, volumeAZ, iops)
}

// GetVolumeID returns the EBS volume ID of an EBS-backed PV, and "" for any other PV (one of a
// CSI driver the plugin does not know among them).
func (v *VolumeSnapshotter) GetVolumeID(item runtime.Unstructured) (string, error) {
	vol, kind, err := pv.Parse(item)
	if err != nil || kind != pv.EBS {
		return "", err
	}
	return vol.VolumeID, nil
}

// SetVolumeID points the PV at a restored volume, moving its zone and region metadata along
// when the volume is in another AZ or region.
func (v *VolumeSnapshotter) SetVolumeID(item runtime.Unstructured, volumeID string) (runtime.Unstructured, error) {
	ctx, cancel := callContext(ec2api.SnapshotterCallTimeout)
	defer cancel()
	az, err := v.restorer.VolumeZone(ctx, volumeID)
	if err != nil {
		return nil, err
	}
	return pv.SetVolume(item, volumeID, az)
}

// GetVolumeInfo returns the volume's type and, for io1 and io2, its IOPS.
func (v *VolumeSnapshotter) GetVolumeInfo(volumeID, volumeAZ string) (string, *int64, error) {
	ctx, cancel := callContext(ec2api.SnapshotterCallTimeout)
	defer cancel()
	return v.snapshots.GetVolumeInfo(ctx, volumeID)
}

// CreateSnapshot starts a snapshot and returns its ID without waiting for it to complete,
// within ec2api.SnapshotterCallTimeout.
func (v *VolumeSnapshotter) CreateSnapshot(volumeID, volumeAZ string, tags map[string]string) (string, error) {
	ctx, cancel := callContext(ec2api.SnapshotterCallTimeout)
	defer cancel()
	return v.snapshots.CreateSnapshot(ctx, volumeID, tags)
}

// DeleteSnapshot deletes the snapshot and every copy of it, within
// ec2api.SnapshotterCallTimeout.
func (v *VolumeSnapshotter) DeleteSnapshot(snapshotID string) error {
	ctx, cancel := callContext(ec2api.SnapshotterCallTimeout)
	defer cancel()
	return v.deleter.DeleteSnapshot(ctx, snapshotID)
}
