package plugin

import (
	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/pv"
	"github.com/velero-async/velero-plugin-for-aws/internal/restoring"
)

// VolumeRestoreAction is the RestoreItemAction v2 velero-async.io/aws-volume-restore. For every
// PV that Velero restored from a snapshot it opens an operation, so the restore is not Completed
// before the new volume is usable.
type VolumeRestoreAction struct {
	watcher *restoring.VolumeWatcher
	clock   clock.Clock
	log     logrus.FieldLogger
}

// NewVolumeRestoreAction returns the action, following volumes through watcher.
func NewVolumeRestoreAction(watcher *restoring.VolumeWatcher, clk clock.Clock, log logrus.FieldLogger) *VolumeRestoreAction {
	return &VolumeRestoreAction{watcher: watcher, clock: clk, log: log}
}

// Name is unused: Velero names the action by its registration.
func (a *VolumeRestoreAction) Name() string { return model.RestoreItemActionName }

// AppliesTo selects PersistentVolumes.
func (a *VolumeRestoreAction) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"persistentvolumes"}}, nil
}

// Execute returns the PV unchanged and, when Velero pointed it at a new EBS volume, the ID of an
// operation that waits for that volume.
func (a *VolumeRestoreAction) Execute(input *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	out := velero.NewRestoreItemActionExecuteOutput(input.Item)
	restored, kind, err := pv.Parse(input.Item)
	if err != nil || kind != pv.EBS {
		return out, nil
	}
	if input.ItemFromBackup != nil {
		if backedUp, _, _ := pv.Parse(input.ItemFromBackup); backedUp.VolumeID == restored.VolumeID {
			return out, nil
		}
	}
	region := restored.Region // pv.Parse derives it from the zone when no label names it
	if region == "" {
		a.log.Warnf("Restored persistent volume %s names no zone or region: not waiting for volume %s", restored.Name, restored.VolumeID)
		return out, nil
	}
	op := model.VolumeOperation{Operation: model.Operation{Region: region, VolumeID: restored.VolumeID, Issued: a.clock.Now()}}
	out.OperationID = op.String()
	return out, nil
}

// Progress reports the restored volume, within ec2api.ItemActionCallTimeout.
func (a *VolumeRestoreAction) Progress(operationID string, restore *velerov1.Restore) (velero.OperationProgress, error) {
	ctx, cancel := callContext(ec2api.ItemActionCallTimeout)
	defer cancel()
	return a.watcher.Progress(ctx, operationID, restore)
}

// Cancel does nothing: a restored volume belongs to the cluster now.
func (a *VolumeRestoreAction) Cancel(operationID string, restore *velerov1.Restore) error {
	return nil
}

// AreAdditionalItemsReady is true: the action adds no items.
func (a *VolumeRestoreAction) AreAdditionalItemsReady(additionalItems []velero.ResourceIdentifier, restore *velerov1.Restore) (bool, error) {
	return true, nil
}
