package faults

import (
	"context"
	"fmt"
	"sync"

	"github.com/sirupsen/logrus"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
	corev1api "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/harness"
)

// reusedNames plays what makes a backup's name identify nothing: a backup named again while the
// first one's snapshots and copies are still in the account (a Backup removed without its
// snapshots), and, at the same time, another Velero install backing up other volumes under the
// same name into the same account. Every backup must complete with one snapshot and one copy per
// volume of its own, and deleting the three must leave nothing.
func reusedNames(ctx context.Context, e *Env, res *Result, volumes int) error {
	return e.withRig("reused names", FastConfig(7), 2*volumes, func(r *Rig) error {
		mine, theirs := r.PVs[:volumes], r.PVs[volumes:]
		plugins, err := harness.ProcessPlugins(e.Plugin.Dir, r.Core.Log, logrus.InfoLevel)
		if err != nil {
			return err
		}
		other := &harness.Core{Plugins: plugins, Log: r.Core.Log, SyncPeriod: e.syncPeriod()}
		loc := Location(SourceRegion, CopyRegion)
		const name = "nightly"
		first, err := r.BackupPVs(ctx, res, harness.BackupRequest{Name: name, Location: loc, PVs: mine})
		if err != nil {
			return err
		}
		var again, elsewhere *harness.BackupResult
		var errAgain, errElsewhere error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			again, errAgain = r.BackupPVs(ctx, res, harness.BackupRequest{Name: name, Location: loc, PVs: mine})
		}()
		go func() {
			defer wg.Done()
			elsewhere, errElsewhere = other.Backup(ctx, harness.BackupRequest{Name: name, Location: loc, PVs: theirs})
		}()
		wg.Wait()
		if errAgain != nil || errElsewhere != nil {
			return fmt.Errorf("backups of %s: %v, %v", name, errAgain, errElsewhere)
		}
		res.Operations += len(elsewhere.Operations)
		res.LongestReconcile = max(res.LongestReconcile, elsewhere.LongestReconcile)
		for _, op := range elsewhere.Operations {
			if op.Status.Phase == itemoperation.OperationPhaseFailed {
				res.Failed++
			}
		}
		checkOwn(res, first, mine)
		checkOwn(res, again, mine)
		checkOwn(res, elsewhere, theirs)
		res.Duplicates = Duplicates(r.Sim, name) // over all three backups of the name, each by its UID
		for _, b := range []*harness.BackupResult{first, again} {
			r.Delete(res, b, loc)
		}
		if err := other.DeleteBackup(elsewhere, loc); err != nil {
			res.Problemf("deleting the other install's backup: %v", err)
		}
		r.CountLeaked(res, deletionSettle)
		return nil
	})
}

// checkOwn records as problems a backup that did not complete, or whose snapshots are not
// exactly one per PV of pvs.
func checkOwn(res *Result, b *harness.BackupResult, pvs []*corev1api.PersistentVolume) {
	if b.Backup.Status.Phase != velerov1api.BackupPhaseCompleted {
		res.Problemf("backup %s (%s) is %s: %v", b.Backup.Name, b.Backup.UID, b.Backup.Status.Phase, b.OperationErrors)
	}
	if len(b.Snapshots) != len(pvs) || len(b.Operations) != len(pvs) {
		res.Problemf("backup %s (%s): %d snapshots and %d operations for %d PVs", b.Backup.Name, b.Backup.UID, len(b.Snapshots), len(b.Operations), len(pvs))
	}
}
