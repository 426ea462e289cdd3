package explore

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"pgregory.net/rapid"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Velero's backup storage and its sync, and the users' changes around them, as actors: Velero
// reinstalled in the same cluster (its namespace's objects made anew, the install identity
// unchanged), the Backup removed from the cluster while its files stay in the bucket
// (kubectl delete), Velero's backup sync bringing finished backups back from the bucket, and a
// location's config changed after the backup's snapshots were taken (vaultRetainOnDelete turned
// on, copyToRegion moved). What the bucket holds is the proof the audit's orphan rule rests on.
//
// Velero uploads a backup's files, its record of the native snapshots among them, when the item
// phase ends, and again when its operations end; a deletion removes them only when every
// snapshot's deletion succeeded (v1.18: a failed deletion leaves the files and the Backup, in
// phase Deleting). Its sync (pkg/controller/backup_sync_controller.go) brings into the cluster
// the backups of the bucket it does not hold, but not one waiting for its operations until that
// one expires: a reinstall while the backup waits leaves its operations to nobody.

// Actor kinds of this file.
const (
	actReinstall    = "velero: reinstall (its namespace's objects made anew)"
	actForget       = "user: kubectl delete backup (its files stay in the bucket)"
	actSync         = "velero: backup sync"
	actConfigChange = "user: location config changed"
)

// Config changes a user may make after the backup's snapshots were taken.
const (
	retainTurnedOn  = "vaultRetainOnDelete turned on"
	retainTurnedOff = "vaultRetainOnDelete turned off"
	copyMoved       = "copyToRegion moved to " + farRegion
)

// syncActors lists the actors of this file that may take the next step.
func (w *world) syncActors() []string {
	if !w.itemPhaseDone() {
		return nil // the item phase's plugin process and worker are not modelled across a reinstall
	}
	var out []string
	if !w.reinstalled && w.inBucket() {
		out = append(out, actReinstall)
	}
	if w.inCluster() && !w.waiting() && !w.deleted {
		out = append(out, actForget)
	}
	if w.inBucket() && !w.inCluster() {
		out = append(out, actSync)
	}
	if len(w.configChanges()) > 0 {
		out = append(out, actConfigChange)
	}
	return out
}

// stepSync draws and takes one step of an actor of syncActors.
func (w *world) stepSync(t *rapid.T, actor string) {
	switch actor {
	case actReinstall:
		w.reinstall()
	case actForget:
		w.forget()
	case actSync:
		w.sync()
	case actConfigChange:
		w.changeConfig(rapid.SampledFrom(w.configChanges()).Draw(t, "config change"))
	}
}

// veleroTags are the tags Velero passes to CreateSnapshot for the backup's PV pv: the Backup's
// labels (its storage location's among them), its name and the PV's.
func veleroTags(pv string) map[string]string {
	return map[string]string{velerov1.StorageLocationLabel: storageLocation, model.TagBackup: backupName, model.TagPV: pv}
}

// inBucket reports whether the bucket holds the backup's files: uploaded once the item phase
// ended, and kept unless a deletion succeeded.
func (w *world) inBucket() bool {
	return w.itemPhaseDone() && (!w.deleted || w.deletionFailed)
}

// inCluster reports whether the cluster holds the Backup.
func (w *world) inCluster() bool {
	return !w.notInCluster && (!w.deleted || w.deletionFailed)
}

// reinstall is Velero removed and installed again in the same cluster: the Backup is gone
// from the cluster until Velero's sync brings it back, and, if the backup was waiting for its
// operations, nobody reconciles them any more.
func (w *world) reinstall() {
	w.reinstalled, w.notInCluster = true, true
	w.abandoned = w.waiting()
	w.logf("velero: reinstalled; the Backup is gone from the cluster until the sync (its operations abandoned: %v)", w.abandoned)
}

// forget is a user deleting the Backup with kubectl: its files and snapshots stay.
func (w *world) forget() {
	w.notInCluster = true
	w.logf("user: kubectl delete backup %s (its files stay in the bucket)", backupName)
}

// sync is Velero's backup sync: the backup comes back into the cluster unless it was still
// waiting for its operations when its files were last written.
func (w *world) sync() {
	if w.waiting() {
		w.logf("velero: backup sync; %s waits for its operations in the bucket: not synced until it expires", backupName)
		return
	}
	w.notInCluster = false
	w.logf("velero: backup sync brings %s back into the cluster", backupName)
}

// configChanges are the changes a user may still make to the location's config.
func (w *world) configChanges() []string {
	var out []string
	switch {
	case w.setup.vault && !w.setup.retain:
		out = append(out, retainTurnedOn)
	case w.setup.vault:
		out = append(out, retainTurnedOff)
	}
	if w.setup.copyTo && !w.setup.copyMoved {
		out = append(out, copyMoved)
	}
	return out
}

// changeConfig changes the location's config as the cluster holds it: every plugin process and
// command started after reads it, while the snapshots keep the tags written at their creation.
func (w *world) changeConfig(change string) {
	switch change {
	case retainTurnedOn:
		w.setup.retain = true
	case retainTurnedOff:
		// What only the config kept may go from now on; the next check keeps what the tags keep.
		w.setup.retain, w.retained = false, map[string]bool{}
	case copyMoved:
		w.setup.copyMoved = true
	}
	cfg, err := model.ParseConfig(w.setup.config())
	if err != nil {
		w.violate(catHung, "the changed config does not parse: %v", err)
		return
	}
	w.cfg = cfg
	w.logf("user: the location's %s", change)
}
