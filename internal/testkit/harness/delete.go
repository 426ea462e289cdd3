package harness

import (
	"errors"
	"fmt"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
)

// DeleteBackup deletes a backup's snapshots as the backup deletion controller does: one
// DeleteSnapshot per recorded snapshot ID, through the location's volume snapshotter.
func (c *Core) DeleteBackup(b *BackupResult, loc *velerov1api.VolumeSnapshotLocation) error {
	m := c.Plugins()
	defer m.CleanupClients()
	vs, err := m.GetVolumeSnapshotter(loc.Spec.Provider)
	if err != nil {
		return err
	}
	if err := vs.Init(loc.Spec.Config); err != nil {
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
	return errors.Join(errs...)
}
