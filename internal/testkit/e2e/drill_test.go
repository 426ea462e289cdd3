//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// recoveryName names the recovery cluster, its folder and its processes' logs.
	recoveryName = "recovery"
	// replicaBucket is the source bucket's replica in the copy region; recoveryBucket the
	// recovery cluster's own bucket for its backups.
	replicaBucket  = "velero-e2e-west"
	recoveryBucket = "velero-recovery"
	// replicaBSL is the recovery cluster's read-only location of the replicated backups.
	replicaBSL = "replica"
	// recoveredBackup is the recovery cluster's backup of the restored workload.
	recoveredBackup = "e2e-recovered"
	// afterOutageBackup is the source cluster's backup once the region is back.
	afterOutageBackup = "e2e-after-outage"
	// recoveryInitializationRate is the recovery cluster's volumeInitializationRate, MiB/s: its
	// 10 GiB volumes take about 34 s to initialize.
	recoveryInitializationRate = "300"
)

// drill is the disaster-recovery drill: with backup's source region down (EC2, and the source
// cluster's Velero server with it), a recovery cluster reading a replica of the bucket restores
// every PV from the copies without a request to the source region, backs the workload up again,
// and deletes the source cluster's backup (failing fast, keeping every snapshot, then again once
// the region is back, leaving nothing); then the source cluster backs up again. Velero before
// v1.18 removes the backup from object storage although the deletion failed, so there the second
// deletion finds nothing to delete and what is left goes as the README tells v1.17 users.
func (r *rig) drill(sim simClient, backup string) {
	t := r.t
	source := r.cluster
	sources, copies := backupSnapshots(sim, r.acctA().ID, backup)
	r.drillCopies(sim, backup, copies)

	r.step("replicating bucket %s to %s in %s, as S3 Cross-Region Replication keeps it", bucket, replicaBucket, copyRegion)
	r.saw("%d objects replicated", r.replicate(bucket, replicaBucket))

	r.step("taking %s down: EC2 there answers nothing and its time stands still, bucket %s answers 503; the source cluster's Velero server goes down with it", srcRegion, bucket)
	sim.post("/_sim/outage", map[string]any{"region": srcRegion, "down": true, "frozen": true})
	r.s3("POST", "_fake/outage?bucket="+bucket+"&down=true", nil)
	r.stop(source.server)
	before := requestsTo(sim.stats(), srcRegion)

	recovery := &cluster{name: recoveryName, dir: filepath.Join(r.dir, recoveryName), region: copyRegion}
	if err := os.MkdirAll(filepath.Join(recovery.dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.use(recovery)
	// Whatever happens in the drill, the source region and cluster come back for the steps after.
	defer r.failback(sim, source, recovery)
	r.startCluster()
	r.installRecovery()
	r.startVeleroServer()
	r.waitBSLAvailable()

	r.step("waiting for Velero's backup sync to bring backup %s in from %s", backup, replicaBSL)
	// Velero syncs every minute (--backup-sync-period). With it and --store-validation-frequency
	// at 5 s, an unrelated backup once failed on the upstream plugin finding no credentials for
	// the bucket; the rig keeps Velero's defaults.
	waitFor(t, "backup "+backup+" synced", 3*time.Minute, r.server, func() bool {
		b, err := r.getBackup(backup)
		return err == nil && b.Status.Phase == velerov1.BackupPhaseCompleted
	})
	r.saw("velero backup get:\n%s", indent(r.mustVelero("backup", "get")))
	seen := r.watchDescribe("restore", "e2e-drill-restore", "initializing at "+recoveryInitializationRate+" MiB/s")
	r.restoreFromCopies(sim, backup, "e2e-drill-restore")
	if d := seen(); d == "" {
		t.Errorf("`velero restore describe --details` never showed a volume initializing at %s MiB/s while the restore waited", recoveryInitializationRate)
	} else {
		r.saveDescribe("e2e-drill-restore-initializing", d, true)
	}
	r.checkFullyInitialized(r.restoredVolumeIDs(volumes))
	if n := requestsTo(sim.stats(), srcRegion) - before; n != 0 {
		t.Errorf("the recovery cluster sent %d requests to %s, which is down", n, srcRegion)
	}
	refused := strings.TrimSpace(string(r.s3("GET", "_fake/refused?bucket="+bucket, nil)))
	if refused != "0" {
		t.Errorf("the recovery cluster sent %s requests to bucket %s, which is down", refused, bucket)
	}
	r.saw("requests since the outage began: %d to EC2 in %s, %s to bucket %s", requestsTo(sim.stats(), srcRegion)-before, srcRegion, refused, bucket)

	r.bindRestored(appNS, volumes)
	r.step("velero backup create %s in the recovery cluster: snapshots in %s, copies to %s, which is down", recoveredBackup, copyRegion, srcRegion)
	r.mustVelero("backup", "create", recoveredBackup, "--include-namespaces", appNS, "--snapshot-volumes",
		"--volume-snapshot-locations", vslName, "--storage-location", "default")
	r.waitForDescription(recoveredBackup, srcRegion)

	r.deleteDuringOutage(sim, backup, sources, copies)

	r.step("bringing %s back (EC2; the bucket comes back at failback)", srcRegion)
	sim.post("/_sim/outage", map[string]any{"region": srcRegion, "down": false})
	b := r.waitBackupDone(recoveredBackup, 5*time.Minute, nil)
	r.saw("backup %s ended %s once %s was back: operations %d of %d completed, %d failed", recoveredBackup, b.Status.Phase, srcRegion,
		b.Status.BackupItemOperationsCompleted, b.Status.BackupItemOperationsAttempted, b.Status.BackupItemOperationsFailed)
	if b.Status.Phase != velerov1.BackupPhaseCompleted {
		t.Errorf("backup %s ended %s, want Completed once %s is back", recoveredBackup, b.Status.Phase, srcRegion)
	}
	r.step("deleting %s again from the recovery cluster, now that %s is back", backup, srcRegion)
	if veleroKeepsFailedDeletions() {
		r.deleteBackups(sim, backup, recoveredBackup)
	} else {
		r.deleteAfterFailedDeletion(sim, backup, sources, copies, recoveredBackup)
	}

	r.failback(sim, source, recovery)
	r.volumeBackup(sim, r.mainBackup(afterOutageBackup, ""))
}

// drillCopies is what a user runs before the worst day: `drill` of backup with no flag but
// --confirm restores every volume from its copy in the copy region (one of copies, never the
// source), in the source cluster's account, times it and leaves no volume behind.
func (r *rig) drillCopies(sim simClient, backup string, copies []simObject) {
	t := r.t
	acct := r.acctA()
	r.step("velero-plugin-for-aws-async drill --backup %s --confirm: the copies in %s, through the backup's own location", backup, copyRegion)
	before := len(live(sim.listIn("volumes", copyRegion, acct.ID)))
	out, code := r.runSubcommand(drill.Command, "--backup", backup, "--confirm", "--output", "json")
	r.saveLog("drill-copies-"+backup, out)
	r.saw("drill: exit status %d\n%s", code, indent(out))
	var rep drill.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("drill --output json: %v\n%s", err, out)
	}
	if code != drill.ExitPassed || rep.From != drill.FromCopy || rep.Region != copyRegion || rep.Account != acct.ID || rep.Location != vslName {
		t.Errorf("drill: exit %d, from %s in %s of %s through %s; want %d, from %s in %s of %s through %s",
			code, rep.From, rep.Region, rep.Account, rep.Location, drill.ExitPassed, drill.FromCopy, copyRegion, acct.ID, vslName)
	}
	r.checkDrillVolumes(rep, snapshotIDs(copies), len(copies), "copies")
	if after := live(sim.listIn("volumes", copyRegion, acct.ID)); len(after) != before {
		t.Errorf("%d volumes in %s after the drill, %d before", len(after), copyRegion, before)
	}
}

// checkDrillVolumes fails the test unless the drill restored want volumes, each made from one
// of from (the kind of snapshots they are) and deleted.
func (r *rig) checkDrillVolumes(rep drill.Report, from []string, want int, kind string) {
	if len(rep.Volumes) != want {
		r.t.Errorf("the drill restored %d volumes, want %d, one from each of the %s", len(rep.Volumes), want, kind)
	}
	for _, v := range rep.Volumes {
		if !slices.Contains(from, v.RestoredFrom) || !v.Deleted {
			r.t.Errorf("volume %s of %s: made from %s (want one of the %s %v), deleted %v", v.VolumeID, v.SnapshotID, v.RestoredFrom, kind, from, v.Deleted)
		}
	}
}

// failback ends the drill, whether it got through or not: the source region is back, the
// recovery cluster's Velero server stops (so that the fixed listener of the next one is free)
// and the source cluster's starts again. Doing it twice does nothing more.
func (r *rig) failback(sim simClient, source, recovery *cluster) {
	if r.cluster == source {
		return
	}
	r.step("failback: %s up, the recovery cluster's Velero server stops, the source cluster's starts again", srcRegion)
	sim.post("/_sim/outage", map[string]any{"region": srcRegion, "down": false})
	r.s3("POST", "_fake/outage?bucket="+bucket+"&down=false", nil)
	if recovery.server != nil {
		r.stop(recovery.server)
	}
	r.use(source)
	r.startVeleroServer()
	r.waitBSLAvailable()
}

// bindRestored plays the PV controller the rig has not got: it marks the restored PVs of vols
// and their claims in ns Bound, as a cluster would, so that a backup includes them.
func (r *rig) bindRestored(ns string, vols []volume) {
	ctx := context.Background()
	for _, v := range vols {
		var pv corev1.PersistentVolume
		must(r.t, r.c.Get(ctx, client.ObjectKey{Name: v.PV}, &pv))
		pv.Status.Phase = corev1.VolumeBound
		must(r.t, r.c.Status().Update(ctx, &pv))
		var pvc corev1.PersistentVolumeClaim
		must(r.t, r.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.PVC}, &pvc))
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.AccessModes = pvc.Spec.AccessModes
		pvc.Status.Capacity = pvc.Spec.Resources.Requests
		must(r.t, r.c.Status().Update(ctx, &pvc))
	}
	r.saw("restored PVs and claims of %s marked Bound (the rig runs no PV controller)", ns)
}

// requestsTo counts the requests the simulator got for region, answered or not.
func requestsTo(st ec2sim.Stats, region string) int {
	n := 0
	for _, outcomes := range st.Calls[region] {
		for _, c := range outcomes {
			n += c
		}
	}
	return n
}

// installRecovery installs Velero's CRDs and objects in the recovery cluster: its own bucket as
// location default, the replica of the source bucket as the read-only location replicaBSL, and
// the source cluster's VolumeSnapshotLocations by name, in the copy region, copying back to the
// source region.
func (r *rig) installRecovery() {
	t := r.t
	ctx := context.Background()
	r.step("velero install --crds-only, namespace %s, the credential Secrets", veleroNS)
	r.mustVelero("install", "--crds-only")
	waitFor(t, "Velero CRDs established", time.Minute, nil, func() bool {
		return r.c.List(ctx, &velerov1.BackupStorageLocationList{}, client.InNamespace(veleroNS)) == nil
	})
	must(t, r.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: veleroNS}}))
	r.createCredentialSecrets()
	for _, l := range []struct {
		name, bucket string
		mode         velerov1.BackupStorageLocationAccessMode
	}{{"default", recoveryBucket, velerov1.BackupStorageLocationAccessModeReadWrite}, {replicaBSL, replicaBucket, velerov1.BackupStorageLocationAccessModeReadOnly}} {
		r.step("creating BackupStorageLocation %s (bucket %s in %s, %s)", l.name, l.bucket, copyRegion, l.mode)
		must(t, r.c.Create(ctx, r.bsl(l.name, l.bucket, copyRegion, l.mode, l.name == "default")))
	}
	r.createServerStandIn()
	for _, l := range r.locations() {
		loc := vsl(l, copyRegion, srcRegion)
		if l.VSL == vslName {
			// The recovery's restore: volumes initialized at a provisioned rate, each PV's
			// operation in progress until its volume is readable at full speed.
			loc.Spec.Config["volumeInitializationRate"] = recoveryInitializationRate
			loc.Spec.Config["waitForVolumeInitialization"] = "true"
		}
		r.step("creating VolumeSnapshotLocation %s (region %s, copyToRegion %s, credential %s/%s, config %v)", l.VSL, copyRegion, srcRegion, l.Secret, credKey, loc.Spec.Config)
		must(t, r.c.Create(ctx, loc))
	}
}

// replicate copies every object of bucket from into bucket to, as S3 replication would.
func (r *rig) replicate(from, to string) int {
	keys := r.objectKeys(from, "")
	for _, k := range keys {
		key := (&url.URL{Path: k}).EscapedPath()
		r.s3("PUT", to+"/"+key, r.s3("GET", from+"/"+key, nil))
	}
	return len(keys)
}

// objectKeys lists the keys of the objects of bucket under prefix in the stand-in S3.
func (r *rig) objectKeys(bucket, prefix string) []string {
	var list struct {
		Contents []struct{ Key string }
	}
	body := r.s3("GET", bucket+"?list-type=2&max-keys=10000&prefix="+url.QueryEscape(prefix), nil)
	if err := xml.Unmarshal(body, &list); err != nil {
		r.t.Fatalf("listing bucket %s: %v", bucket, err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, o.Key)
	}
	return keys
}

// s3 makes one unsigned request to the stand-in S3 and returns the body of its answer, a 200
// (a 204 for a deletion).
func (r *rig) s3(method, path string, body []byte) []byte {
	r.t.Helper()
	var in io.Reader
	if body != nil {
		in = strings.NewReader(string(body))
	}
	req, err := http.NewRequest(method, r.s3URL+"/"+path, in)
	if err != nil {
		r.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && (method != http.MethodDelete || resp.StatusCode != http.StatusNoContent) {
		r.t.Fatalf("%s %s: %s: %s", method, path, resp.Status, out)
	}
	return out
}

// waitForDescription waits until an operation of backup says, in `velero backup describe
// --details`, that it waits on region.
func (r *rig) waitForDescription(backup, region string) {
	var d string
	waitFor(r.t, "an operation of "+backup+" waiting on "+region, 2*time.Minute, r.server, func() bool {
		d, _ = r.velero("backup", "describe", backup, "--details", "--colorized=false")
		for _, line := range strings.Split(d, "\n") {
			if desc, ok := strings.CutPrefix(strings.TrimSpace(line), "Progress description:"); ok && strings.Contains(desc, region) {
				return strings.Contains(d, "WaitingForPluginOperations")
			}
		}
		return false
	})
	r.saveDescribe(backup+"-during-outage", d, true)
}

// deleteDuringOutage deletes backup from the recovery cluster while the source region is down:
// the deletion must fail at once, name what it kept and why, and leave every source and copy.
func (r *rig) deleteDuringOutage(sim simClient, backup string, sources, copies []simObject) {
	t := r.t
	ctx := context.Background()
	r.step("switching %s to ReadWrite: Velero deletes nothing through a ReadOnly location", replicaBSL)
	var bsl velerov1.BackupStorageLocation
	must(t, r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: replicaBSL}, &bsl))
	bsl.Spec.AccessMode = velerov1.BackupStorageLocationAccessModeReadWrite
	must(t, r.c.Update(ctx, &bsl))

	files := bslPrefix + "/backups/" + backup + "/"
	filesBefore := 0
	if !veleroKeepsFailedDeletions() {
		filesBefore = len(r.objectKeys(replicaBucket, files))
	}
	r.step("velero backup delete %s --confirm, with %s down", backup, srcRegion)
	start := time.Now()
	r.mustVelero("backup", "delete", backup, "--confirm")
	var done *velerov1.DeleteBackupRequest
	waitFor(t, "the deletion of "+backup+" to be processed", 3*time.Minute, r.server, func() bool {
		var dbrs velerov1.DeleteBackupRequestList
		if r.c.List(ctx, &dbrs, client.InNamespace(veleroNS)) != nil {
			return false
		}
		for i, d := range dbrs.Items {
			if d.Spec.BackupName == backup && d.Status.Phase == velerov1.DeleteBackupRequestPhaseProcessed {
				done = &dbrs.Items[i]
			}
		}
		return done != nil
	})
	r.saw("deletion processed after %s with %d errors:\n%s", time.Since(start).Round(time.Second), len(done.Status.Errors), indent(strings.Join(done.Status.Errors, "\n")))
	errs := strings.Join(done.Status.Errors, "\n")
	for _, s := range sources {
		if !strings.Contains(errs, s.ID) {
			t.Errorf("the deletion's errors do not name source snapshot %s", s.ID)
		}
	}
	if len(done.Status.Errors) == 0 || !strings.Contains(errs, srcRegion) || !strings.Contains(errs, "copies") {
		t.Errorf("the deletion's errors do not say that %s could not be reached and the copies are kept: %v", srcRegion, done.Status.Errors)
	}
	if _, err := r.getBackup(backup); err != nil {
		t.Errorf("backup %s is gone after a failed deletion (%v): a later deletion could not find its snapshots", backup, err)
	}
	srcLeft, copiesLeft := backupSnapshots(sim, r.acctA().ID, backup)
	r.saw("after the failed deletion: %d of %d sources and %d of %d copies still there", len(srcLeft), len(sources), len(copiesLeft), len(copies))
	if len(srcLeft) != len(sources) || len(copiesLeft) != len(copies) {
		t.Errorf("the failed deletion removed snapshots: %d of %d sources, %d of %d copies left", len(srcLeft), len(sources), len(copiesLeft), len(copies))
	}
	if !veleroKeepsFailedDeletions() {
		// What a v1.17 user sees: the Backup stays, in phase Deleting, but its files are gone from
		// the bucket, and with them the list of its snapshots a later deletion would need.
		phase := "gone"
		if b, err := r.getBackup(backup); err == nil {
			phase = string(b.Status.Phase)
		}
		keys := r.objectKeys(replicaBucket, files)
		r.saw("Velero %s: backup %s is %s in the cluster, %d of its %d objects (%s*) left in bucket %s; velero backup get:\n%s",
			veleroVersion(), backup, phase, len(keys), filesBefore, files, replicaBucket, indent(r.mustVelero("backup", "get")))
		if filesBefore == 0 {
			t.Errorf("no object under %s in bucket %s before the deletion: the listing cannot tell whether Velero removed them", files, replicaBucket)
		}
		if phase != string(velerov1.BackupPhaseDeleting) {
			t.Errorf("backup %s is %s after the failed deletion, want %s (Velero %s)", backup, phase, velerov1.BackupPhaseDeleting, veleroVersion())
		}
		if len(keys) != 0 {
			t.Errorf("Velero %s kept %v of backup %s in bucket %s: it removes a backup whose deletion failed, see the README (Known limits) if it no longer does", veleroVersion(), keys, backup, replicaBucket)
		}
	}
	// The request stays as Velero's record of the failure; the next deletion makes a new one.
	if err := r.c.Delete(ctx, done); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("removing the processed DeleteBackupRequest %s: %v", done.Name, err)
	}
}

// deleteAfterFailedDeletion is, with Velero before v1.18, what follows a deletion that failed
// while the source region was down: the backup's files are gone from object storage, so deleting
// it again removes the Backup, reports no error and deletes no snapshot. What is left is deleted
// as the README tells v1.17 users (deleteByBackupTag); then nothing of backup or of also is left.
func (r *rig) deleteAfterFailedDeletion(sim simClient, backup string, sources, copies []simObject, also ...string) {
	t := r.t
	names := append([]string{backup}, also...)
	r.requestDeletions(names...)
	srcLeft, copiesLeft := backupSnapshots(sim, r.acctA().ID, backup)
	r.saw("Velero %s deleted backup %s and none of its snapshots: %d of %d sources and %d of %d copies still there",
		veleroVersion(), backup, len(srcLeft), len(sources), len(copiesLeft), len(copies))
	if !slices.Equal(snapshotIDs(srcLeft), snapshotIDs(sources)) || !slices.Equal(snapshotIDs(copiesLeft), snapshotIDs(copies)) {
		t.Errorf("after deleting %s again, sources %v and copies %v are left, want all of %v and %v",
			backup, snapshotIDs(srcLeft), snapshotIDs(copiesLeft), snapshotIDs(sources), snapshotIDs(copies))
	}
	r.deleteByBackupTag(r.acctA(), backup, map[string][]simObject{srcRegion: sources, copyRegion: copies})
	r.checkDeleted(sim, names...)
}

// deleteByBackupTag deletes what is left of backup as the README tells v1.17 users: through the
// EC2 API with acct's credentials, in the source region and in the copy region, every snapshot
// acct owns tagged velero.io/backup=backup. The tag must find exactly want[region] there (the
// copies carry it too). The volumes of the restored PVs carry it as well: those are not deleted.
func (r *rig) deleteByBackupTag(acct awsAccount, backup string, want map[string][]simObject) {
	t := r.t
	ctx := context.Background()
	filter := []types.Filter{{Name: aws.String("tag:" + backupTag), Values: []string{backup}}}
	tagged := map[string]bool{}
	for _, region := range []string{srcRegion, copyRegion} {
		c := r.ec2As(acct, region)
		r.step("aws ec2 describe-snapshots --region %s --owner-ids self --filters Name=tag:%s,Values=%s, then delete-snapshot of each (account %s's credentials)",
			region, backupTag, backup, acct.Name)
		var found []string
		p := ec2.NewDescribeSnapshotsPaginator(c, &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}, Filters: filter})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("DescribeSnapshots in %s: %v", region, err)
			}
			for _, s := range page.Snapshots {
				found = append(found, aws.ToString(s.SnapshotId))
			}
		}
		sort.Strings(found)
		r.saw("%d snapshots tagged %s=%s in %s: %v", len(found), backupTag, backup, region, found)
		if w := snapshotIDs(want[region]); !slices.Equal(found, w) {
			t.Errorf("the tag finds snapshots %v in %s, want exactly %v", found, region, w)
		}
		for _, id := range found {
			if _, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(id)}); err != nil {
				t.Errorf("DeleteSnapshot %s in %s: %v", id, region, err)
			}
		}
		vols, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: filter})
		if err != nil {
			t.Fatalf("DescribeVolumes in %s: %v", region, err)
		}
		var ids []string
		for _, v := range vols.Volumes {
			ids = append(ids, aws.ToString(v.VolumeId))
			tagged[aws.ToString(v.VolumeId)] = true
		}
		r.saw("volumes tagged %s=%s in %s (not deleted): %v", backupTag, backup, region, ids)
	}
	for _, v := range volumes {
		var pv corev1.PersistentVolume
		if err := r.c.Get(ctx, client.ObjectKey{Name: v.PV}, &pv); err != nil {
			t.Errorf("restored PV %s: %v", v.PV, err)
		} else if id := pvVolumeID(&pv); !tagged[id] {
			t.Errorf("volume %s of restored PV %s is not tagged %s=%s: the README warns that restored volumes carry the tag", id, v.PV, backupTag, backup)
		}
	}
}

// snapshotIDs returns the IDs of objs, sorted.
func snapshotIDs(objs []simObject) []string {
	ids := make([]string, 0, len(objs))
	for _, o := range objs {
		ids = append(ids, o.ID)
	}
	sort.Strings(ids)
	return ids
}

// watchDescribe polls `velero <kind> describe name --details` until its output contains want,
// from now until the returned function is called; that function returns the first such output,
// or "" when none had it.
func (r *rig) watchDescribe(kind, name, want string) func() string {
	stop, done := make(chan struct{}), make(chan string, 1)
	go func() {
		tick := time.NewTicker(describeEvery)
		defer tick.Stop()
		for {
			if d, err := r.velero(kind, "describe", name, "--details", "--colorized=false"); err == nil && strings.Contains(d, want) {
				done <- d
				return
			}
			select {
			case <-stop:
				done <- ""
				return
			case <-tick.C:
			}
		}
	}()
	return func() string {
		close(stop)
		return <-done
	}
}

// describeEvery is how often watchDescribe asks.
const describeEvery = time.Second

// restoredVolumeIDs are the EBS volumes the PVs of vols point at now.
func (r *rig) restoredVolumeIDs(vols []volume) []string {
	var ids []string
	for _, v := range vols {
		var pv corev1.PersistentVolume
		if err := r.c.Get(context.Background(), client.ObjectKey{Name: v.PV}, &pv); err == nil {
			ids = append(ids, pvVolumeID(&pv))
		}
	}
	return ids
}

// checkFullyInitialized fails the test unless EC2 reports each volume 100% initialized, at the
// provisioned rate: the restore that waits for initialization has completed.
func (r *rig) checkFullyInitialized(ids []string) {
	t := r.t
	if len(ids) == 0 {
		t.Errorf("no restored volume in %s to check", copyRegion)
		return
	}
	out, err := r.ec2As(r.acctA(), copyRegion).DescribeVolumeStatus(context.Background(), &ec2.DescribeVolumeStatusInput{VolumeIds: ids})
	if err != nil {
		t.Errorf("DescribeVolumeStatus of the restored volumes: %v", err)
		return
	}
	for _, s := range out.VolumeStatuses {
		d := s.InitializationStatusDetails
		if d == nil {
			t.Errorf("volume %s: EC2 reports no initialization", aws.ToString(s.VolumeId))
			continue
		}
		r.saw("volume %s once the restore completed: initialization %s, %d%%", aws.ToString(s.VolumeId), d.InitializationType, aws.ToInt64(d.Progress))
		if aws.ToInt64(d.Progress) != 100 || d.InitializationType != types.InitializationTypeProvisionedRate {
			t.Errorf("volume %s: initialization %s at %d%% when the restore completed, want provisioned-rate at 100%%",
				aws.ToString(s.VolumeId), d.InitializationType, aws.ToInt64(d.Progress))
		}
	}
}
