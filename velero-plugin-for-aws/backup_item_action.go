package plugin

import (
	"os"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/features"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/pv"
	"github.com/velero-async/velero-plugin-for-aws/internal/tracking"
)

// SnapshotProgressAction is the BackupItemAction v2 velero-async.io/aws-snapshot-progress. For
// every EBS PV that Velero will snapshot natively it opens an operation; Velero then keeps the
// backup in WaitingForPluginOperations until the snapshot and its copy are usable.
type SnapshotProgressAction struct {
	tracker *tracking.Tracker
	handoff *ebs.Handoff
	clock   clock.Clock
	log     logrus.FieldLogger
}

// NewSnapshotProgressAction returns the action, following snapshots through tracker and
// handing each backup's UID to the volume snapshotter through handoff.
func NewSnapshotProgressAction(tracker *tracking.Tracker, handoff *ebs.Handoff, clk clock.Clock, log logrus.FieldLogger) *SnapshotProgressAction {
	return &SnapshotProgressAction{tracker: tracker, handoff: handoff, clock: clk, log: log}
}

// Name is unused: Velero names the action by its registration.
func (a *SnapshotProgressAction) Name() string { return model.BackupItemActionName }

// AppliesTo selects PersistentVolumes.
func (a *SnapshotProgressAction) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"persistentvolumes"}}, nil
}

// Execute returns the PV unchanged and, for an EBS volume Velero will snapshot natively, the ID
// of an operation tracking that snapshot. Velero calls it once for every PV of a backup, so it
// is where a PV of a CSI driver the plugin does not know, whose handle is an EBS volume ID, is
// warned about in the backup's log.
func (a *SnapshotProgressAction) Execute(item runtime.Unstructured, backup *velerov1.Backup) (runtime.Unstructured, []velero.ResourceIdentifier, string, []velero.ResourceIdentifier, error) {
	op, why := a.operation(item, backup)
	if why != "" {
		a.log.Debugf("No snapshot operation: %s", why)
		return item, nil, "", nil, nil
	}
	a.handoff.Put(backup.Name, op.PV, op.VolumeID, string(backup.UID))
	a.log.Infof("Tracking the snapshot of volume %s in %s as operation %s", op.VolumeID, op.Region, op)
	return item, nil, op.String(), nil, nil
}

// operation returns the PV's snapshot operation, or why there is none.
func (a *SnapshotProgressAction) operation(item runtime.Unstructured, backup *velerov1.Backup) (model.Operation, string) {
	switch backup.Status.Phase {
	case velerov1.BackupPhaseFinalizing, velerov1.BackupPhaseFinalizingPartiallyFailed:
		return model.Operation{}, "the backup is finalizing"
	}
	if backup.Spec.SnapshotVolumes != nil && !*backup.Spec.SnapshotVolumes {
		return model.Operation{}, "the backup does not snapshot volumes"
	}
	vol, kind, err := pv.Parse(item)
	csiPath := features.IsEnabled(velerov1.CSIFeatureFlag)
	switch {
	case err != nil:
		a.log.WithError(err).Warn("Not tracking a snapshot for a malformed EBS persistent volume")
		return model.Operation{}, err.Error()
	case kind == pv.UnknownCSIDriver && !csiPath:
		a.log.Warnf("Persistent volume %s uses CSI driver %s, which this plugin does not know; its volume %s is not snapshotted by this plugin",
			vol.Name, vol.Driver, vol.VolumeID)
		return model.Operation{}, "unknown CSI driver " + vol.Driver
	case kind != pv.EBS:
		return model.Operation{}, "not an EBS volume"
	case vol.CSI() && csiPath:
		return model.Operation{}, "CSI volumes go through Velero's CSI path"
	}
	region := vol.Region
	for _, env := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
		if region == "" {
			region = os.Getenv(env)
		}
	}
	if region == "" {
		a.log.Warnf("Persistent volume %s names no zone or region, and AWS_REGION is unset: its snapshot will not be tracked", vol.Name)
		return model.Operation{}, "no region"
	}
	return model.Operation{Region: region, VolumeID: vol.VolumeID, Issued: a.clock.Now(), PV: vol.Name}, ""
}

// Progress reports the snapshot and its copy, within ec2api.ItemActionCallTimeout.
func (a *SnapshotProgressAction) Progress(operationID string, backup *velerov1.Backup) (velero.OperationProgress, error) {
	ctx, cancel := callContext(ec2api.ItemActionCallTimeout)
	defer cancel()
	return a.tracker.Progress(ctx, operationID, backup)
}

// Cancel deletes the operation's copy if it is still pending, within
// ec2api.ItemActionCallTimeout.
func (a *SnapshotProgressAction) Cancel(operationID string, backup *velerov1.Backup) error {
	ctx, cancel := callContext(ec2api.ItemActionCallTimeout)
	defer cancel()
	return a.tracker.Cancel(ctx, operationID, backup)
}
