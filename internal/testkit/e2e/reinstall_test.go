//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

const (
	// bucketBackups is how many backups the bucket holds while the reinstalled Velero has synced
	// none: the backup and copies of its record under other names.
	bucketBackups = 50
	// cloneBackupPrefix names the copies of the backup's record.
	cloneBackupPrefix = "e2e-record-"
	// syncWait bounds the wait for Velero's backup sync once it is turned on.
	syncWait = 3 * time.Minute
)

// reinstall is Velero reinstalled in the same cluster: the server stopped, its Backups, backup
// storage location and volume snapshot locations deleted and made again, the storage location
// Available while its backup sync has not run (spec.backupSyncPeriod 0, as a slow first sync
// would leave it). The first `audit --delete-orphans --confirm`, in that window, reads the
// backups' records from the bucket (the backup's and bucketBackups-1 copies of it under other
// names, which it reports the time of) and deletes nothing any of them names; once the sync runs,
// the backups are back, Completed, with every snapshot (the dr-drill restores the backup later).
func (r *rig) reinstall(sim simClient, backup string) {
	ctx := context.Background()
	acct := r.acctA()
	var kept []string
	for _, region := range []string{srcRegion, copyRegion} {
		for _, s := range live(sim.listIn("snapshots", region, acct.ID)) {
			if s.Tags[model.TagBackup] == backup {
				kept = append(kept, s.ID)
			}
		}
	}
	if len(kept) == 0 {
		r.t.Fatalf("backup %s has no snapshot to keep", backup)
	}
	clones := r.cloneRecord(backup, bucketBackups-1)
	defer func() { r.removeObjects(clones) }()

	r.step("reinstalling Velero: server stopped; Backups, BackupStorageLocation default and the VolumeSnapshotLocations deleted and made again, the storage location's backup sync off")
	r.stop(r.server)
	var backups velerov1.BackupList
	must(r.t, r.c.List(ctx, &backups, client.InNamespace(veleroNS)))
	for i := range backups.Items {
		must(r.t, r.c.Delete(ctx, &backups.Items[i]))
	}
	var vsls velerov1.VolumeSnapshotLocationList
	must(r.t, r.c.List(ctx, &vsls, client.InNamespace(veleroNS)))
	for i := range vsls.Items {
		must(r.t, r.c.Delete(ctx, &vsls.Items[i]))
	}
	old := r.bsl("default", bucket, srcRegion, velerov1.BackupStorageLocationAccessModeReadWrite, true)
	must(r.t, r.c.Delete(ctx, old))
	fresh := r.bsl("default", bucket, srcRegion, velerov1.BackupStorageLocationAccessModeReadWrite, true)
	fresh.Spec.BackupSyncPeriod = &metav1.Duration{}
	must(r.t, r.c.Create(ctx, fresh))
	for _, v := range vsls.Items {
		must(r.t, r.c.Create(ctx, &velerov1.VolumeSnapshotLocation{
			ObjectMeta: metav1.ObjectMeta{Name: v.Name, Namespace: v.Namespace, Labels: v.Labels, Annotations: v.Annotations},
			Spec:       v.Spec,
		}))
	}
	r.startVeleroServer()
	r.waitBSLAvailable()
	var bsl velerov1.BackupStorageLocation
	must(r.t, r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: "default"}, &bsl))
	backups = velerov1.BackupList{}
	must(r.t, r.c.List(ctx, &backups, client.InNamespace(veleroNS)))
	if len(backups.Items) != 0 || bsl.Status.LastSyncedTime != nil {
		r.t.Fatalf("before the sync: %d Backups in the cluster, last synced %v; want none, never", len(backups.Items), bsl.Status.LastSyncedTime)
	}

	r.step("audit --location %s --delete-orphans --confirm --orphan-grace 0s before Velero's sync: %d backups in the bucket, none in the cluster", vslName, bucketBackups)
	start := time.Now()
	rep, code := r.runAudit("--location", vslName, "--delete-orphans", "--confirm", "--orphan-grace", "0s")
	r.saw("the audit of %d backups read from the bucket through the upstream plugin took %s (exit status %d)", bucketBackups, time.Since(start).Round(time.Millisecond), code)
	if code == audit.ExitError {
		// An audit that could not read everything deletes nothing whatever the rule: this one must
		// have judged every snapshot.
		r.t.Errorf("the audit before the sync could not read everything (exit status %d): %v", code, rep.Problems)
	}
	for _, d := range rep.Deletions {
		if d.Deleted {
			r.t.Errorf("the audit before the sync deleted %s in %s", d.ID, d.Region)
		}
	}
	left := map[string]bool{}
	for _, region := range []string{srcRegion, copyRegion} {
		for _, s := range live(sim.listIn("snapshots", region, acct.ID)) {
			left[s.ID] = true
		}
	}
	for _, id := range kept {
		if !left[id] {
			r.t.Errorf("snapshot %s of backup %s is gone after the audit before the sync", id, backup)
		}
	}

	r.step("turning the storage location's backup sync on: backups %s and e2e-smoke come back", backup)
	r.removeObjects(clones)
	clones = nil
	must(r.t, r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: "default"}, &bsl))
	bsl.Spec.BackupSyncPeriod = nil
	must(r.t, r.c.Update(ctx, &bsl))
	for _, name := range []string{backup, "e2e-smoke"} {
		waitFor(r.t, "backup "+name+" synced", syncWait, r.server, func() bool {
			b, err := r.getBackup(name)
			return err == nil && b.Status.Phase == velerov1.BackupPhaseCompleted
		})
	}
	r.saw("velero backup get:\n%s", indent(r.mustVelero("backup", "get")))
}

// cloneRecord copies backup's files in the bucket under n other names, each file's name and the
// record's metadata.name changed, as if n more backups of the same volumes had been taken, and
// returns the keys written.
func (r *rig) cloneRecord(backup string, n int) []string {
	dir := bslPrefix + "/backups/" + backup + "/"
	files := r.objectKeys(bucket, dir)
	if len(files) == 0 {
		r.t.Fatalf("no file of backup %s under %s in bucket %s", backup, dir, bucket)
	}
	var written []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s%02d", cloneBackupPrefix, i)
		for _, key := range files {
			body := r.s3("GET", bucket+"/"+(&url.URL{Path: key}).EscapedPath(), nil)
			base := strings.TrimPrefix(key, dir)
			if base == "velero-backup.json" {
				body = renamedRecord(r, body, name)
			}
			to := bslPrefix + "/backups/" + name + "/" + strings.Replace(base, backup, name, 1)
			r.s3("PUT", bucket+"/"+(&url.URL{Path: to}).EscapedPath(), body)
			written = append(written, to)
		}
	}
	return written
}

// renamedRecord is a backup's velero-backup.json under another name.
func renamedRecord(r *rig, body []byte, name string) []byte {
	var b velerov1.Backup
	if err := json.Unmarshal(body, &b); err != nil {
		r.t.Fatalf("the backup's record: %v", err)
	}
	b.Name = name
	var out bytes.Buffer
	must(r.t, json.NewEncoder(&out).Encode(&b))
	return out.Bytes()
}

// removeObjects deletes keys from the bucket.
func (r *rig) removeObjects(keys []string) {
	for _, key := range keys {
		r.s3("DELETE", bucket+"/"+(&url.URL{Path: key}).EscapedPath(), nil)
	}
}
