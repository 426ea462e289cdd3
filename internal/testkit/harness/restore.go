package harness

import (
	"context"
	"fmt"
	"time"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RestoreRequest restores a backup's PVs from their snapshots.
type RestoreRequest struct {
	// Name is the restore's name.
	Name string
	// Backup is the backup to restore.
	Backup *BackupResult
	// Location is the restoring cluster's VolumeSnapshotLocation of the name the backup
	// recorded; its config may name another region (a disaster-recovery cluster).
	Location *velerov1api.VolumeSnapshotLocation
	// ItemOperationTimeout is the restore's spec.itemOperationTimeout (4h if zero).
	ItemOperationTimeout time.Duration
}

// RestoredVolume is one PV restored from a snapshot.
type RestoredVolume struct {
	PV, SnapshotID, VolumeID string
}

// RestoreResult is the outcome of a restore.
type RestoreResult struct {
	Restore    *velerov1api.Restore
	Operations []*Operation
	Volumes    []RestoredVolume
	// Items are the PVs as core would create them (after SetVolumeID and restore item actions).
	Items           []*unstructured.Unstructured
	ItemErrors      []string
	OperationErrors []string
	Reconciles      int
	ItemPhase       time.Duration
	Total           time.Duration
}

// Succeeded reports whether the restore ended Completed.
func (r *RestoreResult) Succeeded() bool {
	return r.Restore.Status.Phase == velerov1api.RestorePhaseCompleted
}

// Restore restores every PV of the backup that has a snapshot, as restoreItem and
// pvRestorer.executePVAction do, then runs the restore item actions v2 and waits for their
// operations as the restore operations controller does.
func (c *Core) Restore(ctx context.Context, req RestoreRequest) (*RestoreResult, error) {
	timeout := itemOperationTimeout(req.ItemOperationTimeout)
	start := time.Now()
	restore := &velerov1api.Restore{
		TypeMeta:   metav1.TypeMeta{APIVersion: velerov1api.SchemeGroupVersion.String(), Kind: "Restore"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: req.Name, UID: uuid.NewUUID()},
		Spec: velerov1api.RestoreSpec{
			BackupName:           req.Backup.Backup.Name,
			ItemOperationTimeout: metav1.Duration{Duration: timeout},
		},
		Status: velerov1api.RestoreStatus{Phase: velerov1api.RestorePhaseInProgress, StartTimestamp: &metav1.Time{Time: start}},
	}
	res := &RestoreResult{Restore: restore}
	c.publish(req.Location, restore)
	c.observe(restoreStatus(res, start))
	if err := c.restoreItems(req, res); err != nil {
		return nil, err
	}
	restore.Status.RestoreItemOperationsAttempted = len(res.Operations)
	restore.Status.Errors = len(res.ItemErrors)
	return res, c.waitAndFinalize(ctx, restoreRun{res, start}, restoreOps{restore: restore}, timeout)
}

func (c *Core) restoreItems(req RestoreRequest, res *RestoreResult) error {
	m := c.Plugins()
	defer m.CleanupClients()
	actions, err := m.GetRestoreItemActionsV2()
	if err != nil {
		return fmt.Errorf("getting restore item actions: %w", err)
	}
	resolved, err := framework.NewRestoreItemActionResolverV2(actions).ResolveActions(coreDiscovery{}, c.log())
	if err != nil {
		return fmt.Errorf("resolving restore item actions: %w", err)
	}
	snapshots := map[string]VolumeSnapshot{}
	for _, s := range req.Backup.Snapshots {
		if s.SnapshotID != "" {
			snapshots[s.PV] = s
		}
	}
	for _, item := range req.Backup.Items {
		fromBackup := item.DeepCopy()
		obj, vol, err := c.restorePV(m, req.Location, fromBackup.DeepCopy(), snapshots)
		if err == nil {
			obj, err = c.runRestoreActions(resolved, obj, fromBackup, res)
		}
		if err != nil {
			res.ItemErrors = append(res.ItemErrors, fmt.Sprintf("persistentvolume %s: %v", item.GetName(), err))
			continue
		}
		if vol != nil {
			res.Volumes = append(res.Volumes, *vol)
		}
		res.Items = append(res.Items, obj)
	}
	return nil
}

// restorePV is pvRestorer.executePVAction: Init with the location's config, then
// CreateVolumeFromSnapshot and SetVolumeID. PVs without a snapshot come back unchanged.
func (c *Core) restorePV(m PluginManager, loc *velerov1api.VolumeSnapshotLocation, obj *unstructured.Unstructured, snapshots map[string]VolumeSnapshot) (*unstructured.Unstructured, *RestoredVolume, error) {
	resetVolumeBindingInfo(obj)
	snap, ok := snapshots[obj.GetName()]
	if !ok {
		return obj, nil, nil
	}
	vs, err := m.GetVolumeSnapshotter(loc.Spec.Provider)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := c.snapshotterConfig(loc)
	if err != nil {
		return nil, nil, err
	}
	if err := vs.Init(cfg); err != nil {
		return nil, nil, err
	}
	volumeID, err := vs.CreateVolumeFromSnapshot(snap.SnapshotID, snap.VolumeType, snap.Zone, snap.IOPS)
	if err != nil {
		return nil, nil, err
	}
	updated, err := vs.SetVolumeID(obj, volumeID)
	if err != nil {
		return nil, nil, err
	}
	u, ok := updated.(*unstructured.Unstructured)
	if !ok {
		return nil, nil, fmt.Errorf("unexpected type %T", updated)
	}
	return u, &RestoredVolume{PV: snap.PV, SnapshotID: snap.SnapshotID, VolumeID: volumeID}, nil
}

// runRestoreActions runs the applicable restore item actions v2 on a restored PV and records
// the operations they start.
func (c *Core) runRestoreActions(actions []framework.RestoreItemResolvedActionV2, obj, fromBackup *unstructured.Unstructured, res *RestoreResult) (*unstructured.Unstructured, error) {
	for _, a := range actions {
		if !a.ShouldUse(pvResource, "", obj, c.log()) {
			continue
		}
		out, err := a.Execute(&velero.RestoreItemActionExecuteInput{Item: obj, ItemFromBackup: fromBackup, Restore: res.Restore})
		if err != nil {
			return nil, fmt.Errorf("error preparing persistentvolume %s: %w", obj.GetName(), err)
		}
		if out.OperationID != "" {
			res.Operations = append(res.Operations, newOperation(a.Name(), out.OperationID,
				velero.ResourceIdentifier{GroupResource: pvResource, Name: fromBackup.GetName()}))
		}
		if out.SkipRestore {
			return obj, nil
		}
		u, ok := out.UpdatedItem.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("unexpected type %T", out.UpdatedItem)
		}
		obj = u
	}
	return obj, nil
}

// resetVolumeBindingInfo clears what binds a PV to its old claim and cluster, as core does
// before restoring it.
func resetVolumeBindingInfo(obj *unstructured.Unstructured) {
	unstructured.RemoveNestedField(obj.Object, "spec", "claimRef", "uid")
	unstructured.RemoveNestedField(obj.Object, "spec", "claimRef", "resourceVersion")
	unstructured.RemoveNestedField(obj.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(obj.Object, "metadata", "uid")
	unstructured.RemoveNestedField(obj.Object, "status")
	annotations := obj.GetAnnotations()
	delete(annotations, "pv.kubernetes.io/bound-by-controller")
	delete(annotations, "pv.kubernetes.io/provisioned-by")
	obj.SetAnnotations(annotations)
}

// restoreRun is a restore as core's operations controller moves it on.
type restoreRun struct {
	res   *RestoreResult
	start time.Time
}

func (r restoreRun) endItemPhase(at time.Time) { r.res.ItemPhase = at.Sub(r.start) }

func (r restoreRun) enter(s stage) {
	st := &r.res.Restore.Status
	st.Phase = phaseOf(s, st.Errors > 0, velerov1api.RestorePhaseWaitingForPluginOperations,
		velerov1api.RestorePhaseWaitingForPluginOperationsPartiallyFailed, velerov1api.RestorePhaseCompleted, velerov1api.RestorePhasePartiallyFailed)
}

func (r restoreRun) record(reconcile int, t tally) {
	st := &r.res.Restore.Status
	st.RestoreItemOperationsCompleted, st.RestoreItemOperationsFailed = t.completed, t.failed
	st.Errors += len(t.errs)
	r.res.OperationErrors = append(r.res.OperationErrors, t.errs...)
	r.res.Reconciles = reconcile
}

func (r restoreRun) finish() {
	r.res.Restore.Status.CompletionTimestamp = &metav1.Time{Time: time.Now()}
	r.res.Total = time.Since(r.start)
}

func (r restoreRun) status() Status { return restoreStatus(r.res, r.start) }

func (r restoreRun) operations() []*Operation { return r.res.Operations }

func (r restoreRun) object() client.Object { return r.res.Restore }

// restoreOps reaches restore item actions v2 for Progress and Cancel.
type restoreOps struct{ restore *velerov1api.Restore }

func (r restoreOps) progress(m PluginManager, op *Operation) (velero.OperationProgress, error) {
	a, err := m.GetRestoreItemActionV2(op.Action)
	if err != nil {
		return velero.OperationProgress{}, err
	}
	return a.Progress(op.ID, r.restore)
}

func (r restoreOps) cancel(m PluginManager, op *Operation) error {
	a, err := m.GetRestoreItemActionV2(op.Action)
	if err != nil {
		return err
	}
	return a.Cancel(op.ID, r.restore)
}
