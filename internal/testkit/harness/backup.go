package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	vsv1 "github.com/vmware-tanzu/velero/pkg/plugin/velero/volumesnapshotter/v1"
	corev1api "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// Namespace is the Velero namespace of the harness's backups and restores.
	Namespace = "velero"
	// Provider is the VolumeSnapshotLocation provider the harness uses by default.
	Provider = model.VolumeSnapshotterName
)

// NewLocation returns a VolumeSnapshotLocation served by this plugin.
func NewLocation(name string, config map[string]string) *velerov1api.VolumeSnapshotLocation {
	return &velerov1api.VolumeSnapshotLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec:       velerov1api.VolumeSnapshotLocationSpec{Provider: Provider, Config: config},
	}
}

// BackupRequest is what a user asks for: a named backup of PersistentVolumes.
type BackupRequest struct {
	// Name is the backup's name; Labels its labels (core passes them on as snapshot tags).
	Name   string
	Labels map[string]string
	// Location is the VolumeSnapshotLocation the snapshots go to.
	Location *velerov1api.VolumeSnapshotLocation
	// PVs are the items to back up.
	PVs []*corev1api.PersistentVolume
	// ItemOperationTimeout is the backup's spec.itemOperationTimeout (4h if zero).
	ItemOperationTimeout time.Duration
}

// VolumeSnapshot is core's record of a native snapshot (Velero's volume.Snapshot).
type VolumeSnapshot struct {
	PV, VolumeID, VolumeType, Zone, Location string
	IOPS                                     *int64
	// SnapshotID is the provider's snapshot ID; empty if CreateSnapshot failed.
	SnapshotID string
	// Err is the error of a failed snapshot.
	Err string
}

// BackupResult is the outcome of a backup: the Backup object, its item operations and its
// snapshots, with timings.
type BackupResult struct {
	Backup     *velerov1api.Backup
	Operations []*Operation
	Snapshots  []VolumeSnapshot
	// Items are the PVs as backed up (after the backup item actions).
	Items []*unstructured.Unstructured
	// ItemErrors are per-item errors of the item phase.
	ItemErrors []string
	// OperationErrors are the errors of failed operations.
	OperationErrors []string
	// Reconciles counts the operation reconciles.
	Reconciles int
	// LongestReconcile is the longest time one reconcile spent in the plugin's Progress and
	// Cancel calls: while it lasts, Velero's operations controller reconciles no other backup.
	LongestReconcile time.Duration
	// ReconcileTimes are the reconciles in order: how many operations each called Progress for
	// and how long those calls took.
	ReconcileTimes []ReconcileTime
	// ItemPhase is the time from start to WaitingForPluginOperations; Total from start to the end.
	ItemPhase, Total time.Duration
}

// ReconcileTime is what one reconcile of a backup spent in the plugin.
type ReconcileTime struct {
	// Open is the number of open operations it called Progress for, one after another.
	Open int
	// Took is the time of those Progress calls (and of any Cancel call), from the first call,
	// which starts the reconcile's plugin process, to the end of the last.
	Took time.Duration
}

// PerOperation is Took divided among the open operations; zero when none was open.
func (r ReconcileTime) PerOperation() time.Duration {
	if r.Open == 0 {
		return 0
	}
	return r.Took / time.Duration(r.Open)
}

// Succeeded reports whether the backup ended Completed.
func (r *BackupResult) Succeeded() bool {
	return r.Backup.Status.Phase == velerov1api.BackupPhaseCompleted
}

// Backup runs a backup: the item phase (backup item actions, then the native snapshot of each
// PV), then the operations phase until every operation is done. It returns an error only when
// the harness itself cannot go on; a failed backup is a result with phase PartiallyFailed. It
// is Backups with one backup.
func (c *Core) Backup(ctx context.Context, req BackupRequest) (*BackupResult, error) {
	b, err := c.Backups(ctx, []ScheduledBackup{{BackupRequest: req}})
	if b == nil {
		return nil, err
	}
	return b.Backups[0], err
}

// startBackup is the backup controller's part of a backup: the Backup InProgress, then its
// item phase. The operations controller takes it on from there.
func (c *Core) startBackup(req BackupRequest) (*BackupResult, error) {
	start := time.Now()
	backup := &velerov1api.Backup{
		TypeMeta: metav1.TypeMeta{APIVersion: velerov1api.SchemeGroupVersion.String(), Kind: "Backup"},
		// Kubernetes gives every object a UID of its own: two backups of one name never share one.
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: req.Name, Labels: req.Labels, UID: uuid.NewUUID()},
		Spec: velerov1api.BackupSpec{
			VolumeSnapshotLocations: []string{req.Location.Name},
			ItemOperationTimeout:    metav1.Duration{Duration: itemOperationTimeout(req.ItemOperationTimeout)},
		},
		Status: velerov1api.BackupStatus{Phase: velerov1api.BackupPhaseInProgress, StartTimestamp: &metav1.Time{Time: start}},
	}
	res := &BackupResult{Backup: backup}
	c.publish(req.Location, backup)
	c.observe(backupStatus(res, start))
	if err := c.backupItems(req, res); err != nil {
		return nil, err
	}
	backup.Status.BackupItemOperationsAttempted = len(res.Operations)
	backup.Status.Errors = len(res.ItemErrors)
	return res, nil
}

// waitForBackup hands a backup whose item phase has ended to the operations controller.
func (oc *operationsController) waitForBackup(res *BackupResult) {
	b := res.Backup
	oc.add(backupRun{res, b.Status.StartTimestamp.Time}, backupOps{backup: b}, b.Spec.ItemOperationTimeout.Duration)
}

// backupItems is the item phase, one plugin manager for all items as in a backup run.
func (c *Core) backupItems(req BackupRequest, res *BackupResult) error {
	m := c.Plugins()
	defer m.CleanupClients()
	actions, err := m.GetBackupItemActionsV2()
	if err != nil {
		return fmt.Errorf("getting backup item actions: %w", err)
	}
	resolved, err := framework.NewBackupItemActionResolverV2(actions).ResolveActions(coreDiscovery{}, c.log())
	if err != nil {
		return fmt.Errorf("resolving backup item actions: %w", err)
	}
	vs, err := m.GetVolumeSnapshotter(req.Location.Spec.Provider)
	if err != nil {
		return fmt.Errorf("getting volume snapshotter: %w", err)
	}
	cfg, err := c.snapshotterConfig(req.Location)
	if err != nil {
		return fmt.Errorf("initializing volume snapshotter: %w", err)
	}
	if err := vs.Init(cfg); err != nil {
		return fmt.Errorf("initializing volume snapshotter: %w", err)
	}
	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
		next = make(chan *corev1api.PersistentVolume)
	)
	for range c.workers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pv := range next {
				item, ops, snap, err := c.backupPV(pv, res.Backup, resolved, vs, req.Location.Name)
				mu.Lock()
				res.Operations = append(res.Operations, ops...)
				if item != nil {
					res.Items = append(res.Items, item)
				}
				if snap != nil {
					res.Snapshots = append(res.Snapshots, *snap)
					res.Backup.Status.VolumeSnapshotsAttempted++
					if snap.SnapshotID != "" {
						res.Backup.Status.VolumeSnapshotsCompleted++
					}
				}
				if err != nil {
					res.ItemErrors = append(res.ItemErrors, fmt.Sprintf("persistentvolume %s: %v", pv.Name, err))
				}
				if c.Hooks.AfterItem != nil {
					c.Hooks.AfterItem(done)
				}
				done++
				mu.Unlock()
			}
		}()
	}
	for _, pv := range req.PVs {
		next <- pv
	}
	close(next)
	wg.Wait()
	return nil
}

// backupPV backs up one PV as itemBackupper does: executeActions, then takePVSnapshot.
func (c *Core) backupPV(pv *corev1api.PersistentVolume, backup *velerov1api.Backup, actions []framework.BackupItemResolvedActionV2, vs vsv1.VolumeSnapshotter, location string) (*unstructured.Unstructured, []*Operation, *VolumeSnapshot, error) {
	obj, err := toUnstructured(pv)
	if err != nil {
		return nil, nil, nil, err
	}
	var ops []*Operation
	for _, a := range actions {
		if !a.ShouldUse(pvResource, "", obj, c.log()) {
			continue
		}
		updated, _, opID, _, err := a.Execute(obj, backup)
		if err != nil {
			return nil, ops, nil, fmt.Errorf("error executing custom action (groupResource=%s, name=%s): %w", pvResource, pv.Name, err)
		}
		obj = &unstructured.Unstructured{Object: updated.UnstructuredContent()}
		if opID != "" {
			ops = append(ops, newOperation(a.Name(), opID, velero.ResourceIdentifier{GroupResource: pvResource, Name: pv.Name}))
		}
	}
	snap, err := takePVSnapshot(obj, backup, vs, location)
	return obj, ops, snap, err
}

// takePVSnapshot mirrors core: zone from labels or node affinity, GetVolumeID, GetVolumeInfo,
// then CreateSnapshot with the backup's labels plus velero.io/backup and velero.io/pv as tags.
func takePVSnapshot(obj *unstructured.Unstructured, backup *velerov1api.Backup, vs vsv1.VolumeSnapshotter, location string) (*VolumeSnapshot, error) {
	pv, err := fromUnstructured(obj)
	if err != nil {
		return nil, err
	}
	zone := pvZone(pv)
	volumeID, err := vs.GetVolumeID(obj)
	if err != nil || volumeID == "" {
		// core skips the PV: no applicable volume snapshotter
		return nil, nil
	}
	tags := map[string]string{}
	for k, v := range backup.Labels {
		tags[k] = v
	}
	tags["velero.io/backup"] = backup.Name
	tags["velero.io/pv"] = pv.Name
	volumeType, iops, err := vs.GetVolumeInfo(volumeID, zone)
	if err != nil {
		return nil, fmt.Errorf("error getting volume info: %w", err)
	}
	snap := &VolumeSnapshot{PV: pv.Name, VolumeID: volumeID, VolumeType: volumeType, Zone: zone, Location: location, IOPS: iops}
	id, err := vs.CreateSnapshot(volumeID, zone, tags)
	if err != nil {
		snap.Err = err.Error()
		return snap, errors.Join(errors.New("error taking snapshot of volume"), err)
	}
	snap.SnapshotID = id
	return snap, nil
}

// backupRun is a backup as core's operations controller moves it on.
type backupRun struct {
	res   *BackupResult
	start time.Time
}

func (b backupRun) endItemPhase(at time.Time) { b.res.ItemPhase = at.Sub(b.start) }

func (b backupRun) enter(s stage) {
	st := &b.res.Backup.Status
	st.Phase = phaseOf(s, st.Errors > 0, velerov1api.BackupPhaseWaitingForPluginOperations,
		velerov1api.BackupPhaseWaitingForPluginOperationsPartiallyFailed, velerov1api.BackupPhaseCompleted, velerov1api.BackupPhasePartiallyFailed)
}

func (b backupRun) record(reconcile int, t tally) {
	st := &b.res.Backup.Status
	st.BackupItemOperationsCompleted, st.BackupItemOperationsFailed = t.completed, t.failed
	st.Errors += len(t.errs)
	b.res.OperationErrors = append(b.res.OperationErrors, t.errs...)
	b.res.Reconciles = reconcile
	b.res.LongestReconcile = max(b.res.LongestReconcile, t.took)
	b.res.ReconcileTimes = append(b.res.ReconcileTimes, ReconcileTime{Open: t.open, Took: t.took})
}

func (b backupRun) finish() {
	b.res.Backup.Status.CompletionTimestamp = &metav1.Time{Time: time.Now()}
	b.res.Total = time.Since(b.start)
}

func (b backupRun) status() Status { return backupStatus(b.res, b.start) }

func (b backupRun) operations() []*Operation { return b.res.Operations }

func (b backupRun) object() client.Object { return b.res.Backup }

// backupOps reaches backup item actions v2 for Progress and Cancel.
type backupOps struct{ backup *velerov1api.Backup }

func (b backupOps) progress(m PluginManager, op *Operation) (velero.OperationProgress, error) {
	a, err := m.GetBackupItemActionV2(op.Action)
	if err != nil {
		return velero.OperationProgress{}, err
	}
	return a.Progress(op.ID, b.backup)
}

func (b backupOps) cancel(m PluginManager, op *Operation) error {
	a, err := m.GetBackupItemActionV2(op.Action)
	if err != nil {
		return err
	}
	return a.Cancel(op.ID, b.backup)
}
