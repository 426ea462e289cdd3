package harness

import (
	"errors"
	"fmt"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
)

// DeleteBackup deletes a backup's snapshots as the backup deletion controller does: one
// DeleteSnapshot per recorded snapshot ID, through the location's volume snapshotter. With an
// API, the Backup is Deleting there meanwhile and is deleted from it when every snapshot was,
// as the controller deletes the Backup only when nothing failed; b itself is not changed.
func (c *Core) DeleteBackup(b *BackupResult, loc *velerov1api.VolumeSnapshotLocation) error {
	if c.API != nil {
		deleting := b.Backup.DeepCopy()
		deleting.Status.Phase = velerov1api.BackupPhaseDeleting
		c.publish(loc, deleting)
	}
	m := c.Plugins()
	defer m.CleanupClients()
	vs, err := m.GetVolumeSnapshotter(loc.Spec.Provider)
	if err != nil {
		return err
	}
	cfg, err := c.snapshotterConfig(loc)
	if err != nil {
		return err
	}
	if err := vs.Init(cfg); err != nil {
		return err
	}
	var errs []error
	for _, s := range b.Snapshots {
		if s.SnapshotID == "" {
			continue
		}
		if err := vs.DeleteSnapshot(s.SnapshotID); err != nil {
			errs = append(errs, fmt.Errorf("deleting snapshot %s of %s: %w", s.SnapshotID, s.PV, err))
		}
	}
	if len(errs) == 0 && c.API != nil {
		c.API.Delete(b.Backup)
	}
	return errors.Join(errs...)
}
