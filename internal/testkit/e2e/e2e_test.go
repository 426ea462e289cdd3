//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/readme"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const appNS = "e2e-app"

// volume is one simulator volume and the PV/PVC that use it.
type volume struct {
	ID  string
	AZ  string
	PV  string
	PVC string
	// Driver is the CSI driver that provisioned it, "" for an in-tree awsElasticBlockStore PV.
	Driver string
	Type   string
	IOPS   int // provisioned IOPS (io1/io2 always have some)
	// ZoneKey, when set, is the only node-affinity key naming the zone, instead of the one
	// its driver's PVs usually carry.
	ZoneKey string
}

var volumes = []volume{
	{ID: "vol-0e2e0000000000001", AZ: "us-east-1a", PV: "pv-intree-a", PVC: "data-intree-a", Type: "gp2"},
	{ID: "vol-0e2e0000000000002", AZ: "us-east-1b", PV: "pv-intree-b", PVC: "data-intree-b", Type: "gp3"},
	{ID: "vol-0e2e0000000000003", AZ: "us-east-1a", PV: "pv-csi-a", PVC: "data-csi-a", Driver: ebsCSIDriver, Type: "gp3"},
	{ID: "vol-0e2e0000000000004", AZ: "us-east-1c", PV: "pv-csi-b", PVC: "data-csi-b", Driver: ebsCSIDriver, Type: "io2", IOPS: 4000},
	{ID: "vol-0e2e0000000000005", AZ: "us-east-1b", PV: "pv-auto-a", PVC: "data-auto-a", Driver: autoModeDriver, Type: "gp3"},
}

// The CSI drivers of EBS volumes: the EBS CSI driver, and EKS Auto Mode's built-in one.
const (
	ebsCSIDriver   = "ebs.csi.aws.com"
	autoModeDriver = "ebs.csi.eks.amazonaws.com"
	// autoModeZoneKey is EKS Auto Mode's own zone key, which Velero does not read: a PV whose
	// only zone is under it reaches the plugin's restore with no zone.
	autoModeZoneKey = "topology.ebs.csi.eks.amazonaws.com/zone"
)

// sub runs fn as a subtest with r.t pointing at it, so a failed step does not hide later ones.
func (r *rig) sub(name string, fn func()) bool {
	parent := r.t
	defer func() { r.t = parent }()
	return parent.Run(name, func(t *testing.T) {
		r.t = t
		fn()
	})
}

// TestE2E runs the whole scenario of issue 6 against real etcd, kube-apiserver and Velero.
func TestE2E(t *testing.T) {
	r := newRig(t)
	var sim simClient
	if !r.sub("rig", func() {
		r.buildTools()
		r.startCluster()
		r.startS3()
		sim = r.startEC2Sim()
		r.installVelero()
		r.startVeleroServer()
		r.waitBSLAvailable()
	}) {
		t.FailNow()
	}
	if !r.sub("backup-without-volumes", r.smokeBackup) {
		t.FailNow()
	}
	if r.pluginErr != nil {
		t.Fatalf("this repository's plugin is not built, volume steps cannot run: %v", r.pluginErr)
	}
	r.sub("workload", func() { r.createWorkload(sim, r.acctA(), appNS, volumes) })
	r.sub("backup-with-progress", func() { r.volumeBackup(sim, r.mainBackup("e2e-main", "")) })
	r.sub("resilience-kill-plugin", func() { r.volumeBackup(sim, r.mainBackup("e2e-kill", "kill-plugin")) })
	r.sub("resilience-restart-server", func() { r.volumeBackup(sim, r.mainBackup("e2e-restart", "restart-server")) })
	r.sub("delete-from-source-cluster", func() { r.deleteBackups(sim, "e2e-kill", "e2e-restart") })
	r.sub("audit-and-drill", func() { r.auditAndDrill(sim, "e2e-main") })
	r.sub("readme-roles-audit-drill", func() { r.readmeRolesForAuditAndDrill("e2e-main") })
	r.sub("readme-roles-plugin-cronjob", func() { r.readmeRolesForPluginAndCronJobs("e2e-main") })
	// Velero reinstalled: the first audit, before the backup sync, deletes nothing a record names.
	r.sub("reinstall", func() { r.reinstall(sim, "e2e-main") })
	// An existing install's upstream VolumeSnapshotLocation: check names it, the README's move.
	r.sub("existing-upstream-location", func() { r.existingUpstreamLocation(sim) })
	// Per-location credentials: account B through its own location, and a location whose Secret
	// holds a wrong secret key, backed up while account B's backup waits for its operations.
	bad := &badRun{name: badBackup}
	r.sub("account-b-workload", func() { r.createWorkload(sim, r.acctB(), appNSB, volumesB) })
	r.sub("concurrent-backups", func() { r.concurrentBackupsRun(sim) })
	r.sub("account-b-backup", func() { r.accountBBackup(sim, bad) })
	r.sub("bad-credentials", func() { r.badCredentialsBackup(sim, bad) })
	r.sub("account-b-restore", func() { r.accountBRestore(sim, accountBBackup) })
	r.sub("account-b-delete", func() { r.deleteBackups(sim, accountBBackup) })
	// Vault copies: account B's volumes copied into vault account A under a lock, restored from
	// the vault, and the locked copies kept when the backup is deleted.
	r.sub("vault-backup", func() { r.vaultBackup(sim) })
	// The preflight check of every location, the vault's included, changing nothing.
	r.sub("preflight-check", func() { r.preflightCheck(sim) })
	r.sub("readme-roles-check", r.readmeRolesForCheck)
	r.sub("vault-restore", func() { r.vaultRestore(sim) })
	r.sub("vault-delete", func() { r.vaultDelete(sim) })
	// The source account gone: a recovery cluster with the vault's identity alone restores.
	r.sub("account-loss", func() { r.accountLoss(sim) })
	// The disaster-recovery drill: the source region down, a second cluster restores.
	r.sub("dr-drill", func() { r.drill(sim, "e2e-main") })
	r.sub("delete-after-dr", func() {
		r.deleteBackups(sim, "e2e-main", "e2e-smoke", badBackup, afterOutageBackup)
		for _, a := range r.accounts {
			all := append(live(sim.listIn("snapshots", srcRegion, a.ID)), live(sim.listIn("snapshots", copyRegion, a.ID))...)
			r.saw("snapshots left in account %s (%s), both regions: %d", a.Name, a.ID, len(all))
			for _, s := range all {
				r.t.Errorf("snapshot left in account %s: %v", a.Name, s)
			}
		}
	})
	r.saw("simulator stats at the end: %v", sim.stats())
	r.sub("no-credentials-in-logs", r.checkNoSecretsInLogs)
	r.sub("readme-describe-samples", r.checkReadmeSamples)
	r.sub("readme-velero-commands", r.checkReadmeCommands)
}

func (r *rig) smokeBackup() {
	ctx := context.Background()
	r.step("backup of a namespace without volumes")
	must(r.t, r.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-smoke"}}))
	must(r.t, r.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "e2e-smoke"}, Data: map[string]string{"k": "v"}}))
	pl := r.watchPhases("e2e-smoke", false)
	defer pl.cancel()
	out := r.mustVelero("backup", "create", "e2e-smoke", "--include-namespaces", "e2e-smoke")
	r.saw("%s", firstLine(out))
	b := r.waitBackupDone("e2e-smoke", 3*time.Minute, nil)
	time.Sleep(300 * time.Millisecond)
	r.saw("phases %v; items backed up %d", pl.get(), itemsBackedUp(b))
	if b.Status.Phase != velerov1.BackupPhaseCompleted {
		r.t.Fatalf("backup e2e-smoke ended %s: %v", b.Status.Phase, b.Status.ValidationErrors)
	}
}

func itemsBackedUp(b *velerov1.Backup) int {
	if b.Status.Progress == nil {
		return 0
	}
	return b.Status.Progress.ItemsBackedUp
}

func firstLine(s string) string { return strings.SplitN(strings.TrimSpace(s), "\n", 2)[0] }

// createWorkload seeds vols in the simulator, in the account acct, and creates PVs/PVCs for them
// in namespace ns as EKS would.
func (r *rig) createWorkload(sim simClient, acct awsAccount, ns string, vols []volume) {
	ctx := context.Background()
	r.step("seeding %d volumes in the simulator (account %s %s, %s)", len(vols), acct.Name, acct.ID, srcRegion)
	var vs []map[string]any
	for _, v := range vols {
		spec := map[string]any{"id": v.ID, "availabilityZone": v.AZ, "type": v.Type, "sizeGiB": 10}
		if v.IOPS > 0 {
			spec["iops"] = v.IOPS
		}
		vs = append(vs, spec)
	}
	sim.post("/_sim/volumes", map[string]any{"region": srcRegion, "account": acct.ID, "volumes": vs})
	r.saw("simulator volumes of account %s in %s: %v", acct.Name, srcRegion, sim.listIn("volumes", srcRegion, acct.ID))

	r.step("creating namespace %s with PVCs bound to in-tree awsElasticBlockStore PVs, EBS CSI (ebs.csi.aws.com) PVs and EKS Auto Mode (ebs.csi.eks.amazonaws.com) PVs", ns)
	must(r.t, r.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(r.t, r.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: ns}, Data: map[string]string{"k": "v"}}))
	for _, v := range vols {
		pv := makePV(v, ns)
		must(r.t, r.c.Create(ctx, pv))
		pv.Status.Phase = corev1.VolumeBound
		must(r.t, r.c.Status().Update(ctx, pv))
		sc := "gp2"
		switch v.Driver {
		case ebsCSIDriver:
			sc = "ebs-sc"
		case autoModeDriver:
			sc = "auto-ebs-sc"
		}
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v.PVC, Namespace: ns, Annotations: map[string]string{
				"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
			}},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &sc,
				VolumeName:       v.PV,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
			},
		}
		must(r.t, r.c.Create(ctx, pvc))
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.AccessModes = pvc.Spec.AccessModes
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}
		must(r.t, r.c.Status().Update(ctx, pvc))
		r.saw("PV %s (%s) bound to PVC %s/%s", v.PV, pvSource(pv), ns, v.PVC)
	}
}

func pvSource(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore " + pv.Spec.AWSElasticBlockStore.VolumeID
	case pv.Spec.CSI != nil:
		return pv.Spec.CSI.Driver + " " + pv.Spec.CSI.VolumeHandle
	}
	return "?"
}

func makePV(v volume, ns string) *corev1.PersistentVolume {
	region := v.AZ[:len(v.AZ)-1]
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: v.PV},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: v.PVC},
		},
	}
	switch v.Driver {
	case ebsCSIDriver:
		pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": ebsCSIDriver}
		pv.Spec.StorageClassName = "ebs-sc"
		pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{
			Driver: ebsCSIDriver, VolumeHandle: v.ID, FSType: "ext4",
			VolumeAttributes: map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-8081-ebs.csi.aws.com"},
		}
		// The EBS CSI driver sets its own topology key (older releases) or the well-known one.
		key := "topology.ebs.csi.aws.com/zone"
		if strings.HasSuffix(v.PV, "-b") {
			key = "topology.kubernetes.io/zone"
		}
		pv.Spec.NodeAffinity = nodeAffinity(corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{v.AZ}})
	case autoModeDriver:
		// As EKS Auto Mode provisions them: no labels, the well-known zone key only.
		pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": autoModeDriver}
		pv.Spec.StorageClassName = "auto-ebs-sc"
		pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{
			Driver: autoModeDriver, VolumeHandle: v.ID, FSType: "ext4",
			VolumeAttributes: map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-8081-ebs.csi.eks.amazonaws.com"},
		}
		key := "topology.kubernetes.io/zone"
		if v.ZoneKey != "" {
			key = v.ZoneKey
		}
		pv.Spec.NodeAffinity = nodeAffinity(corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{v.AZ}})
	default:
		// In-tree volumes as the (now CSI-migrated) in-tree provisioner on EKS created them.
		pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/aws-ebs"}
		pv.Labels = map[string]string{
			"topology.kubernetes.io/zone":              v.AZ,
			"topology.kubernetes.io/region":            region,
			"failure-domain.beta.kubernetes.io/zone":   v.AZ,
			"failure-domain.beta.kubernetes.io/region": region,
		}
		pv.Spec.StorageClassName = "gp2"
		pv.Spec.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://" + v.AZ + "/" + v.ID, FSType: "ext4"}
		pv.Spec.NodeAffinity = nodeAffinity(
			corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{v.AZ}},
			corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/region", Operator: corev1.NodeSelectorOpIn, Values: []string{region}},
		)
	}
	return pv
}

func nodeAffinity(reqs ...corev1.NodeSelectorRequirement) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}}}}
}

// backupTag is the tag Velero core puts on every snapshot it asks for, the backup's name; the
// plugin carries it over to the copies.
const backupTag = "velero.io/backup"

// backupSnapshots returns the live source snapshots of a backup in an account and their copies.
func backupSnapshots(sim simClient, account, name string) (src, copies []simObject) {
	srcIDs := map[string]bool{}
	for _, s := range live(sim.listIn("snapshots", srcRegion, account)) {
		if s.Tags[backupTag] == name {
			src = append(src, s)
			srcIDs[s.ID] = true
		}
	}
	for _, s := range live(sim.listIn("snapshots", copyRegion, account)) {
		isCopy := s.Tags[backupTag] == name || srcIDs[s.Source]
		for _, v := range s.Tags {
			if srcIDs[v] {
				isCopy = true
			}
		}
		if isCopy {
			copies = append(copies, s)
		}
	}
	return src, copies
}

var describeDir = "describe"

// backupSpec is one backup of volumeBackup.
type backupSpec struct {
	name string
	// disrupt is "", "kill-plugin" or "restart-server".
	disrupt string
	// ns is the namespace backed up, vols its volumes, in account acct, through location vsl,
	// into the BackupStorageLocation bsl ("default" when "").
	ns, vsl, bsl string
	vols         []volume
	acct         awsAccount
	// vault, when set, is the ID of the account that holds the backup's vault copies.
	vault string
	// during, when set, is called at every poll of the backup until it ends.
	during func(*velerov1.Backup)
}

// mainBackup is a backup of the app namespace (account A) through location aws-async.
func (r *rig) mainBackup(name, disrupt string) backupSpec {
	return backupSpec{name: name, disrupt: disrupt, ns: appNS, vsl: vslName, vols: volumes, acct: r.acctA()}
}

// volumeBackup backs up a namespace with snapshots and checks phases, describe output and the
// simulator's snapshots: in the spec's account, and none in any other.
func (r *rig) volumeBackup(sim simClient, bs backupSpec) {
	t := r.t
	name, disrupt, volumes := bs.name, bs.disrupt, bs.vols
	statsBefore := sim.stats()
	pl := r.watchPhases(name, false)
	defer pl.cancel()
	r.step("velero backup create %s --include-namespaces %s --snapshot-volumes --volume-snapshot-locations %s (volumes in account %s)", name, bs.ns, bs.vsl, bs.acct.Name)
	out := r.mustVelero("backup", "create", name, "--include-namespaces", bs.ns, "--snapshot-volumes",
		"--volume-snapshot-locations", bs.vsl, "--storage-location", cmp.Or(bs.bsl, "default"))
	r.saw("%s", firstLine(out))

	// Disruptions happen while the backup waits for plugin operations.
	done := make(chan struct{})
	killed := make(chan int, 1)
	if disrupt == "kill-plugin" {
		go func() {
			n, seen := 0, map[int]bool{}
			defer func() { killed <- n }()
			for n < 1 {
				select {
				case <-done:
					return
				case <-time.After(5 * time.Millisecond):
				}
				ph := pl.get()
				if len(ph) == 0 || ph[len(ph)-1] != string(velerov1.BackupPhaseWaitingForPluginOperations) {
					continue
				}
				for _, pid := range r.pluginPIDs() {
					if seen[pid] {
						continue
					}
					seen[pid] = true
					if killPID(pid) == nil {
						n++
						r.t.Logf("%s   saw plugin process %d of velero server; killed it (SIGKILL #%d)", time.Now().UTC().Format("15:04:05"), pid, n)
						time.Sleep(2500 * time.Millisecond)
					}
				}
			}
		}()
	}
	restarted := false
	var waitingSince time.Time
	describedWaiting := false
	b := r.waitBackupDone(name, 5*time.Minute, func(b *velerov1.Backup) {
		if bs.during != nil {
			bs.during(b)
		}
		if b.Status.Phase != velerov1.BackupPhaseWaitingForPluginOperations {
			return
		}
		if waitingSince.IsZero() {
			waitingSince = time.Now()
			r.saw("backup %s WaitingForPluginOperations: %d operations attempted, %d completed", name,
				b.Status.BackupItemOperationsAttempted, b.Status.BackupItemOperationsCompleted)
		}
		if disrupt == "restart-server" && !restarted && time.Since(waitingSince) > 2500*time.Millisecond {
			restarted = true
			r.restartVeleroServer()
		}
		if disrupt == "" {
			r.captureWaiting(name)
		}
		if disrupt == "" && !describedWaiting {
			d, err := r.velero("backup", "describe", name, "--details", "--colorized=false")
			if err != nil {
				return
			}
			// Wait for a description from Progress before judging.
			if !strings.Contains(d, "Progress description:") && time.Since(waitingSince) < 20*time.Second {
				return
			}
			describedWaiting = true
			r.saveDescribe(name+"-waiting", d, true)
			r.checkDescribeOps(d, false, len(volumes))
		}
	})
	close(done)
	time.Sleep(500 * time.Millisecond)
	phases := pl.get()
	r.saw("backup %s phases observed by watch: %v", name, phases)
	r.saw("backup %s ended %s: operations attempted %d, completed %d, failed %d; volume snapshots attempted %d, completed %d; errors %d warnings %d",
		name, b.Status.Phase, b.Status.BackupItemOperationsAttempted, b.Status.BackupItemOperationsCompleted,
		b.Status.BackupItemOperationsFailed, b.Status.VolumeSnapshotsAttempted, b.Status.VolumeSnapshotsCompleted,
		b.Status.Errors, b.Status.Warnings)
	if disrupt == "kill-plugin" {
		n := <-killed
		r.saw("plugin processes killed while WaitingForPluginOperations: %d", n)
		if n == 0 {
			t.Errorf("never caught a running %s process to kill", pluginBin)
		}
	}
	if disrupt == "restart-server" && !restarted {
		t.Errorf("backup never stayed in WaitingForPluginOperations long enough to restart the server")
	}
	d := r.mustVelero("backup", "describe", name, "--details", "--colorized=false")
	r.saveDescribe(name+"-final", d, disrupt == "")
	if disrupt == "" && b.Status.Phase == velerov1.BackupPhaseCompleted {
		r.addSample(readme.BackupCompleted, d)
	}
	// A kill lands inside a reconcile (plugin processes live only that long), so Velero core may fail
	// the operation whose call was cut; that is judged separately from the plugin's own guarantees.
	coreLimit := false
	// The backup's log (with the plugins' lines) is kept for the search for credentials.
	logs, _ := r.velero("backup", "logs", name)
	r.saveLog(name+"-backup-logs", logs)
	// A server restart kills the plugin processes too: a call it cuts is the same limitation, and
	// Velero may then still call the backup Completed.
	if failed := failedOpErrors(d); b.Status.Phase != velerov1.BackupPhaseCompleted || len(failed) > 0 {
		r.saveDescribe(name+"-backup-logs", logs, false)
		if disrupt != "" && b.Status.Phase != velerov1.BackupPhaseFailed &&
			len(failed) > 0 && len(failed) == b.Status.BackupItemOperationsFailed && allTransport(failed) &&
			os.Getenv("E2E_STRICT_KILL") == "" {
			coreLimit = true
			r.saw("KNOWN VELERO LIMITATION: backup %s ended %s with failed operations because a killed plugin process cut "+
				"%d call(s) (%v). Velero core marks an operation Failed for good when GetBackupItemActionV2 or "+
				"Progress returns an error (pkg/controller/backup_operations_controller.go, "+
				"getBackupItemOperationProgress); only a kill between two calls is recovered by the restartable "+
				"process. Set E2E_STRICT_KILL=1 to count this as a failure. The plugin's own guarantees (no duplicate, "+
				"every snapshot and copy completed) are checked below.", name, b.Status.Phase, len(failed), failed)
		} else {
			t.Errorf("backup %s ended %s, want Completed (describe and logs in %s)", name, b.Status.Phase, filepath.Join(r.logDir, describeDir))
		}
	}
	want := []string{"InProgress", "WaitingForPluginOperations", "Finalizing", "Completed"}
	if disrupt == "" && !isSubsequence(want, phases) {
		t.Errorf("phases %v do not contain %v in order", phases, want)
	}
	if disrupt == "" && !describedWaiting {
		t.Errorf("never captured `velero backup describe --details` while WaitingForPluginOperations")
	}
	r.checkDescribeOps(d, !coreLimit, len(volumes))
	if coreLimit && b.Status.BackupItemOperationsCompleted+b.Status.BackupItemOperationsFailed != len(volumes) {
		t.Errorf("operations completed %d + failed %d, want %d", b.Status.BackupItemOperationsCompleted, b.Status.BackupItemOperationsFailed, len(volumes))
	}
	if b.Status.BackupItemOperationsAttempted != len(volumes) {
		t.Errorf("backup item operations attempted = %d, want %d (one per PV)", b.Status.BackupItemOperationsAttempted, len(volumes))
	}
	if b.Status.VolumeSnapshotsAttempted != len(volumes) || b.Status.VolumeSnapshotsCompleted != len(volumes) {
		t.Errorf("volume snapshots attempted/completed = %d/%d, want %d", b.Status.VolumeSnapshotsAttempted, b.Status.VolumeSnapshotsCompleted, len(volumes))
	}

	src, copies := backupSnapshots(sim, bs.acct.ID, name)
	r.saw("simulator, account %s (%s): %d source snapshots in %s, %d copies in %s for backup %s", bs.acct.Name, bs.acct.ID, len(src), srcRegion, len(copies), copyRegion, name)
	for _, s := range append(append([]simObject(nil), src...), copies...) {
		r.saw("  %v", s)
	}
	perVol := map[string]int{}
	for _, s := range src {
		perVol[s.VolumeID]++
		if s.State != "completed" {
			t.Errorf("source snapshot %s state %s, want completed", s.ID, s.State)
		}
	}
	for _, v := range volumes {
		if perVol[v.ID] != 1 {
			t.Errorf("volume %s has %d source snapshots for backup %s, want exactly 1", v.ID, perVol[v.ID], name)
		}
	}
	if len(copies) != len(volumes) {
		t.Errorf("%d copies in %s for backup %s, want exactly %d (one per volume, no duplicates)", len(copies), copyRegion, name, len(volumes))
	}
	for _, s := range copies {
		if s.State != "completed" {
			t.Errorf("copy %s state %s, want completed", s.ID, s.State)
		}
	}
	for _, other := range r.accounts {
		if other.ID == bs.acct.ID || other.ID == bs.vault {
			continue
		}
		osrc, ocopies := backupSnapshots(sim, other.ID, name)
		r.saw("simulator, account %s (%s): %d source snapshots, %d copies for backup %s (want none)", other.Name, other.ID, len(osrc), len(ocopies), name)
		for _, s := range append(osrc, ocopies...) {
			t.Errorf("snapshot of backup %s (volumes of account %s) in account %s: %v", name, bs.acct.Name, other.Name, s)
		}
	}
	r.saw("simulator stats before: %v", statsBefore)
	r.saw("simulator stats after:  %v", sim.stats())
}

// failedOpErrors returns the "Operation Error" of every Failed operation in describe output.
func failedOpErrors(d string) []string {
	var out []string
	blocks := opBlock.FindAllStringIndex(d, -1)
	for i, m := range blocks {
		end := len(d)
		if i+1 < len(blocks) {
			end = blocks[i+1][0]
		}
		blk := d[m[0]:end]
		if !regexp.MustCompile(`Phase:\s+Failed`).MatchString(blk) {
			continue
		}
		msg := "?"
		if j := strings.Index(blk, "Operation Error:"); j >= 0 {
			msg = strings.TrimSpace(firstLine(blk[j+len("Operation Error:"):]))
		}
		out = append(out, msg)
	}
	return out
}

// allTransport reports whether every error is one of go-plugin's "the process went away" errors.
func allTransport(errs []string) bool {
	for _, e := range errs {
		ok := false
		for _, p := range []string{"Unrecognized remote plugin message", "transport is closing", "error reading from server",
			"connection refused", "code = Unavailable", "plugin exited", "EOF"} {
			if strings.Contains(e, p) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func isSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// saveDescribe stores CLI output in the logs folder; show prints it, otherwise only the lines
// about operations and errors are printed.
func (r *rig) saveDescribe(name, text string, show bool) {
	dir := filepath.Join(r.logDir, describeDir)
	_ = os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, name+".txt")
	_ = os.WriteFile(path, []byte(text), 0o644)
	if show {
		r.saw("captured %s:\n%s", path, indent(text))
		return
	}
	var keep []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "Operation for") || strings.Contains(l, "Phase:") || strings.Contains(l, "Error") ||
			strings.Contains(l, "level=error") || strings.Contains(l, "Progress description:") {
			keep = append(keep, l)
		}
	}
	r.saw("captured %s (excerpt):\n%s", path, indent(strings.Join(keep, "\n")))
}

// saveLog stores a log fetched with the CLI in the logs folder (searched for credentials at the
// end) and prints only where it went.
func (r *rig) saveLog(name, text string) {
	dir := filepath.Join(r.logDir, describeDir)
	_ = os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, name+".txt")
	_ = os.WriteFile(path, []byte(text), 0o644)
	r.saw("saved %s (%d lines)", path, strings.Count(text, "\n"))
}

func indent(s string) string {
	return "      | " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n      | ")
}

var opBlock = regexp.MustCompile(`(?m)^\s*Operation for persistentvolumes /(\S+):`)

// checkDescribeOps checks that `velero backup describe --details` shows one operation of our
// BackupItemAction per PV (want of them) with a progress description, none of them on the default
// credential chain; final requires them Completed.
func (r *rig) checkDescribeOps(d string, final bool, want int) {
	t := r.t
	for _, fallback := range []string{"no Kubernetes API access", "default AWS credential"} {
		if strings.Contains(d, fallback) {
			t.Errorf("describe says %q: the item actions did not use the location's credentials", fallback)
		}
	}
	if !strings.Contains(d, "Backup Item Operations:") {
		t.Errorf("describe shows no \"Backup Item Operations:\" section")
		return
	}
	blocks := opBlock.FindAllStringSubmatchIndex(d, -1)
	var pvs []string
	for i, m := range blocks {
		end := len(d)
		if i+1 < len(blocks) {
			end = blocks[i+1][0]
		}
		blk := d[m[0]:end]
		pv := d[m[2]:m[3]]
		pvs = append(pvs, pv)
		if !strings.Contains(blk, "velero-async.io/aws-snapshot-progress") {
			t.Errorf("operation for %s does not name velero-async.io/aws-snapshot-progress:\n%s", pv, blk)
		}
		if !strings.Contains(blk, "Progress:") {
			t.Errorf("operation for %s shows no progress (N of M):\n%s", pv, blk)
		}
		if !strings.Contains(blk, "Progress description:") {
			t.Errorf("operation for %s has no progress description:\n%s", pv, blk)
		}
		if final && !regexp.MustCompile(`Phase:\s+Completed`).MatchString(blk) {
			t.Errorf("operation for %s not Completed at the end:\n%s", pv, blk)
		}
	}
	sort.Strings(pvs)
	if len(pvs) != want {
		t.Errorf("describe shows operations for %v, want one per PV (%d)", pvs, want)
	}
}

// deleteBackups deletes backups with the CLI and checks their snapshots and copies are gone.
func (r *rig) deleteBackups(sim simClient, names ...string) {
	r.requestDeletions(names...)
	r.checkDeleted(sim, names...)
}

// requestDeletions deletes backups with the CLI and waits until they are gone from the cluster.
func (r *rig) requestDeletions(names ...string) {
	for _, name := range names {
		r.step("velero backup delete %s --confirm", name)
		out, err := r.velero("backup", "delete", name, "--confirm")
		r.saw("%s (err=%v)", firstLine(out), err)
	}
	for _, name := range names {
		waitFor(r.t, "backup "+name+" to be deleted", 5*time.Minute, nil, func() bool {
			_, err := r.getBackup(name)
			return apierrors.IsNotFound(err)
		})
		r.saw("backup %s is gone from the cluster", name)
	}
}

// checkDeleted checks that no snapshot or copy of the deleted backups is left in any account and
// that no DeleteBackupRequest reported errors.
func (r *rig) checkDeleted(sim simClient, names ...string) {
	// Deletion of snapshots may lag (pending snapshots are deleted when they complete).
	for _, name := range names {
		for _, a := range r.accounts {
			var src, copies []simObject
			deadline := time.Now().Add(time.Minute)
			for {
				src, copies = backupSnapshots(sim, a.ID, name)
				if len(src)+len(copies) == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Second)
			}
			r.saw("simulator after deleting %s, account %s (%s): %d source snapshots, %d copies left", name, a.Name, a.ID, len(src), len(copies))
			for _, s := range append(src, copies...) {
				r.t.Errorf("snapshot of deleted backup %s still in account %s: %v", name, a.Name, s)
			}
		}
	}
	var dbrs velerov1.DeleteBackupRequestList
	if err := r.c.List(context.Background(), &dbrs, client.InNamespace(veleroNS)); err == nil {
		for _, d := range dbrs.Items {
			r.saw("DeleteBackupRequest %s for %s: %s %v", d.Name, d.Spec.BackupName, d.Status.Phase, d.Status.Errors)
			if len(d.Status.Errors) > 0 {
				r.t.Errorf("deletion of %s reported errors: %v", d.Spec.BackupName, d.Status.Errors)
			}
		}
	}
}

// deleteNamespace deletes a workload namespace and the PVs of vols; with no controller manager,
// the finalizers the API server adds are removed by hand.
func (r *rig) deleteNamespace(ns string, vols []volume) {
	ctx := context.Background()
	var pvcs corev1.PersistentVolumeClaimList
	must(r.t, r.c.List(ctx, &pvcs, client.InNamespace(ns)))
	for i := range pvcs.Items {
		p := &pvcs.Items[i]
		_ = r.c.Delete(ctx, p)
		// kubernetes.io/pvc-protection is normally removed by the controller manager.
		if err := r.c.Get(ctx, client.ObjectKeyFromObject(p), p); err == nil {
			p.Finalizers = nil
			must(r.t, r.c.Update(ctx, p))
		}
	}
	for _, v := range vols {
		var pv corev1.PersistentVolume
		if err := r.c.Get(ctx, client.ObjectKey{Name: v.PV}, &pv); err != nil {
			continue
		}
		_ = r.c.Delete(ctx, &pv)
		if err := r.c.Get(ctx, client.ObjectKey{Name: v.PV}, &pv); err == nil {
			pv.Finalizers = nil
			must(r.t, r.c.Update(ctx, &pv))
		}
	}
	var cms corev1.ConfigMapList
	_ = r.c.List(ctx, &cms, client.InNamespace(ns))
	for i := range cms.Items {
		_ = r.c.Delete(ctx, &cms.Items[i])
	}
	waitFor(r.t, "PVCs of "+ns+" gone", time.Minute, nil, func() bool {
		var left corev1.PersistentVolumeClaimList
		return r.c.List(ctx, &left, client.InNamespace(ns)) == nil && len(left.Items) == 0
	})
	_ = r.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	waitFor(r.t, "namespace "+ns+" and its PVs gone", time.Minute, nil, func() bool {
		ns, err := r.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err == nil {
			ns.Spec.Finalizers = nil
			_, _ = r.cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
			return false
		}
		if !apierrors.IsNotFound(err) {
			return false
		}
		for _, v := range vols {
			if err := r.c.Get(ctx, client.ObjectKey{Name: v.PV}, &corev1.PersistentVolume{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
}

// drRestore restores the backup as a recovery cluster in the copy region would.
// restoreFromCopies restores backup as name in the current cluster, whose location of the
// backup's name is in the copy region, and checks every PV: a new volume there made from a copy
// of the backup, its zone, region labels and node affinity moved along, its PVC bound to it.
func (r *rig) restoreFromCopies(sim simClient, backup, name string) {
	t := r.t
	_, copies := backupSnapshots(sim, r.acctA().ID, backup)
	copyIDs := map[string]bool{}
	for _, c := range copies {
		copyIDs[c.ID] = true
	}
	volsBefore := map[string]bool{}
	for _, v := range sim.listIn("volumes", copyRegion, r.acctA().ID) {
		volsBefore[v.ID] = true
	}

	r.step("velero restore create %s --from-backup %s", name, backup)
	r.restore(t, name, backup, len(volumes))

	west := map[string]simObject{}
	for _, v := range live(sim.listIn("volumes", copyRegion, r.acctA().ID)) {
		west[v.ID] = v
	}
	r.saw("simulator volumes in %s after restore: %d (before: %d)", copyRegion, len(west), len(volsBefore))
	for _, v := range volumes {
		pv, wv, ok := r.restoredVolume(v, west, volsBefore, "the simulator in "+copyRegion)
		if pv == nil {
			continue
		}
		if ok {
			if wv.Source != "" && !copyIDs[wv.Source] {
				t.Errorf("volume %s of PV %s was created from %s, not from a copy of backup %s", wv.ID, v.PV, wv.Source, backup)
			}
			if pv.Spec.AWSElasticBlockStore != nil && !strings.HasPrefix(pv.Spec.AWSElasticBlockStore.VolumeID, "aws://"+wv.AZ+"/") && strings.HasPrefix(pv.Spec.AWSElasticBlockStore.VolumeID, "aws://") {
				t.Errorf("PV %s volumeID %s names a zone other than the volume's %s", v.PV, pv.Spec.AWSElasticBlockStore.VolumeID, wv.AZ)
			}
		}
		for k, val := range pv.Labels {
			if strings.HasSuffix(k, "/zone") && !strings.HasPrefix(val, copyRegion) {
				t.Errorf("PV %s label %s=%s not rewritten to a %s zone", v.PV, k, val, copyRegion)
			} else if strings.HasSuffix(k, "/zone") && ok && val != wv.AZ {
				t.Errorf("PV %s label %s=%s, but its volume is in %s", v.PV, k, val, wv.AZ)
			}
			if strings.HasSuffix(k, "/region") && val != copyRegion {
				t.Errorf("PV %s label %s=%s not rewritten to %s", v.PV, k, val, copyRegion)
			}
		}
		if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
			for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
				for _, e := range term.MatchExpressions {
					for _, val := range e.Values {
						if strings.HasSuffix(e.Key, "/zone") && !strings.HasPrefix(val, copyRegion) {
							t.Errorf("PV %s node affinity %s=%s not rewritten to a %s zone", v.PV, e.Key, val, copyRegion)
						} else if strings.HasSuffix(e.Key, "/zone") && ok && val != wv.AZ {
							t.Errorf("PV %s node affinity %s=%s, but its volume is in %s", v.PV, e.Key, val, wv.AZ)
						}
						if strings.HasSuffix(e.Key, "/region") && val != copyRegion {
							t.Errorf("PV %s node affinity %s=%s not rewritten to %s", v.PV, e.Key, val, copyRegion)
						}
					}
				}
			}
		}
		r.checkRestoredClaim(appNS, v, name)
	}
}

// restoredVolume reads the restored PV of v and finds the volume it points at among made (the
// volumes of where). It fails the test when the PV is missing, still points at the backed-up
// volume, points at none of made, or at one that existed before the restore. The PV is nil when
// missing; ok reports whether its volume is among made.
func (r *rig) restoredVolume(v volume, made map[string]simObject, before map[string]bool, where string) (*corev1.PersistentVolume, simObject, bool) {
	t := r.t
	t.Helper()
	var pv corev1.PersistentVolume
	if err := r.c.Get(context.Background(), client.ObjectKey{Name: v.PV}, &pv); err != nil {
		t.Errorf("PV %s not restored: %v", v.PV, err)
		return nil, simObject{}, false
	}
	volID := pvVolumeID(&pv)
	r.saw("restored PV %s: %s; labels %v; node affinity %s", v.PV, pvSource(&pv), pv.Labels, affinityString(pv.Spec.NodeAffinity))
	wv, ok := made[volID]
	switch {
	case volID == v.ID:
		t.Errorf("PV %s still points at the backed-up volume %s", v.PV, volID)
	case !ok:
		t.Errorf("PV %s volume %q is not a volume of %s", v.PV, volID, where)
	default:
		r.saw("  volume %v", wv)
		if before[volID] {
			t.Errorf("volume %s existed before the restore", volID)
		}
	}
	return &pv, wv, ok && volID != v.ID
}

// checkRestoredClaim fails the test unless the claim of v in ns was restored by restore, bound
// to v's PV.
func (r *rig) checkRestoredClaim(ns string, v volume, restore string) {
	r.t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := r.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v.PVC}, &pvc); err != nil {
		r.t.Errorf("PVC %s/%s not restored: %v", ns, v.PVC, err)
	} else if pvc.Spec.VolumeName != v.PV || pvc.Labels["velero.io/restore-name"] != restore {
		r.t.Errorf("PVC %s/%s volumeName %s restore label %q, want %s restored by %s", ns, v.PVC, pvc.Spec.VolumeName, pvc.Labels["velero.io/restore-name"], v.PV, restore)
	}
}

func affinityString(a *corev1.VolumeNodeAffinity) string {
	if a == nil || a.Required == nil {
		return "none"
	}
	var parts []string
	for _, term := range a.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			parts = append(parts, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
		}
	}
	return strings.Join(parts, "; ")
}
