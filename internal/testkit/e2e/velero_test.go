//go:build e2e

package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/readme"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	veleroNS   = "velero"
	bucket     = "velero-e2e"
	vslName    = "aws-async"
	srcRegion  = "us-east-1"
	copyRegion = "us-west-2"
	pluginBin  = "velero-plugin-for-aws-async"
	// bslPrefix is the prefix of every BackupStorageLocation of the rig in its bucket.
	bslPrefix = "rig"
)

// startS3 starts the in-memory S3-compatible server with the rig's bucket.
func (r *rig) startS3() {
	r.step("starting fakes3 (gofakes3, in memory) with buckets %s, %s (its replica in %s) and %s (the recovery cluster's)", bucket, replicaBucket, copyRegion, recoveryBucket)
	ch := make(chan string, 1)
	p := r.start("fakes3", nil, ch, filepath.Join(r.binDir, "fakes3"), "-port", "0", "-buckets", bucket+","+replicaBucket+","+recoveryBucket)
	r.s3URL = readLine(r.t, p, ch, 30*time.Second)
	r.saw("fakes3 at %s", r.s3URL)
}

// startEC2Sim starts the EC2 simulator with short snapshot and copy durations and the rig's two
// accounts (authentication on).
func (r *rig) startEC2Sim() simClient {
	cfg := `{"regions":{"us-east-1":{},"us-west-2":{}},"snapshotDuration":{"min":"3s","max":"5s"},"copyDuration":{"min":"4s","max":"6s"},"throttleScale":1}`
	if c := os.Getenv("E2E_SIM_CONFIG"); c != "" {
		cfg = c
	}
	full, shown := r.simConfig(cfg)
	path := filepath.Join(r.dir, "ec2sim.json")
	writeFile(r.t, path, full)
	r.step("starting the EC2 simulator with %s", shown)
	ch := make(chan string, 1)
	p := r.start("ec2sim", nil, ch, filepath.Join(r.dir, "bin", "ec2sim"), "-port", "0", "-config", path)
	r.ec2URL = readLine(r.t, p, ch, 30*time.Second)
	r.saw("ec2sim at %s", r.ec2URL)
	return simClient{t: r.t, url: r.ec2URL}
}

// installVelero installs the CRDs, the namespace and both locations.
func (r *rig) installVelero() {
	t := r.t
	ctx := context.Background()
	r.step("velero install --crds-only")
	out := r.mustVelero("install", "--crds-only")
	r.saw("%d CRD lines applied", strings.Count(out, "CustomResourceDefinition/"))
	waitFor(t, "Velero CRDs established", time.Minute, nil, func() bool {
		return r.c.List(ctx, &velerov1.BackupStorageLocationList{}, client.InNamespace(veleroNS)) == nil
	})

	r.step("creating namespace %s and the credential Secrets (key %s, an AWS shared-credentials file each)", veleroNS, credKey)
	must(t, r.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: veleroNS}}))
	r.createCredentialSecrets()
	r.step("creating BackupStorageLocation default (provider aws -> fakes3, credentialsFile with the key pair of %s)", bslSecret)
	must(t, r.c.Create(ctx, r.bsl("default", bucket, srcRegion, velerov1.BackupStorageLocationAccessModeReadWrite, true)))
	r.createServerStandIn()
	for _, l := range r.locations() {
		r.step("creating VolumeSnapshotLocation %s (provider velero-async.io/aws, region %s, copyToRegion %s, credential %s/%s: %s)",
			l.VSL, srcRegion, copyRegion, l.Secret, credKey, r.creds[l.Secret].For)
		must(t, r.c.Create(ctx, vsl(l, srcRegion, copyRegion)))
	}
}

// bsl is a BackupStorageLocation of the upstream AWS plugin on bucket of the stand-in S3. Its
// credentials are a file the rig writes once (config credentialsFile), not spec.credential:
// Velero rewrites a spec.credential's file in place (O_TRUNC, then write) every time it opens
// the location's object store, so an object store opened at the same moment by another
// controller can read it empty and fail the location with "no EC2 IMDS role found". The
// plugin's VolumeSnapshotLocations keep spec.credential: that is what the e2e proves.
func (r *rig) bsl(name, bucket, region string, mode velerov1.BackupStorageLocationAccessMode, isDefault bool) *velerov1.BackupStorageLocation {
	return &velerov1.BackupStorageLocation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: veleroNS},
		Spec: velerov1.BackupStorageLocationSpec{
			Provider:    "aws",
			Default:     isDefault,
			AccessMode:  mode,
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: bucket, Prefix: bslPrefix}},
			Config: map[string]string{
				"region":            region,
				"s3Url":             r.s3URL,
				"s3ForcePathStyle":  "true",
				"checksumAlgorithm": "",
				"credentialsFile":   r.bslCredentialsFile(),
			},
		},
	}
}

// bslCredentialsFile writes the BSL's key pair (once) to a private file in the work dir and
// returns its path.
func (r *rig) bslCredentialsFile() string {
	path := filepath.Join(r.dir, bslSecret)
	if _, err := os.Stat(path); err != nil {
		must(r.t, os.WriteFile(path, r.creds[bslSecret].body(), 0o600))
	}
	return path
}

// vsl is the VolumeSnapshotLocation l of this plugin in region, copying to copyTo.
func vsl(l vslCred, region, copyTo string) *velerov1.VolumeSnapshotLocation {
	return &velerov1.VolumeSnapshotLocation{
		ObjectMeta: metav1.ObjectMeta{Name: l.VSL, Namespace: veleroNS},
		Spec: velerov1.VolumeSnapshotLocationSpec{
			Provider:   "velero-async.io/aws",
			Config:     map[string]string{"region": region, "copyToRegion": copyTo},
			Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: l.Secret}, Key: credKey},
		},
	}
}

// defaultVeleroVersion is the Velero version the rig runs unless E2E_VELERO_VERSION names another
// (one build-tools.sh knows).
const defaultVeleroVersion = "v1.18.3"

// veleroVersion is the Velero version of the run: E2E_VELERO_VERSION, else defaultVeleroVersion.
func veleroVersion() string {
	if v := os.Getenv("E2E_VELERO_VERSION"); v != "" {
		return v
	}
	return defaultVeleroVersion
}

// veleroKeepsFailedDeletions reports whether the run's Velero keeps a backup in object storage
// when deleting its snapshots failed, so that a later deletion finds them (v1.18 on). v1.17
// removes the backup's files anyway and leaves the Backup in phase Deleting.
func veleroKeepsFailedDeletions() bool {
	return version.MustParseGeneric(veleroVersion()).AtLeast(version.MajorMinor(1, 18))
}

// The Velero server's concurrency in the rig: ItemBlock workers per backup, and backups run at
// once where the Velero version has --concurrent-backups.
const (
	itemBlockWorkers  = 4
	concurrentBackups = 2
)

// veleroRunsConcurrentBackups reports whether the run's Velero has --concurrent-backups (v1.18
// on); v1.17 runs one backup at a time.
func veleroRunsConcurrentBackups() bool {
	return version.MustParseGeneric(veleroVersion()).AtLeast(version.MajorMinor(1, 18))
}

// createServerStandIn creates the Deployment some restore actions read for the image of helper
// containers: the server runs outside the cluster, so a stand-in with no replicas plays it.
func (r *rig) createServerStandIn() {
	replicas := int32(0)
	must(r.t, r.c.Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "velero", Namespace: veleroNS, Labels: map[string]string{"component": "velero"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"deploy": "velero"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"deploy": "velero"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "velero", Image: "velero/velero:" + veleroVersion(), Command: []string{"/velero"}, Args: []string{"server"},
				}}},
			},
		},
	}))
}

// startVeleroServer runs `velero server` outside the cluster with both plugins.
func (r *rig) startVeleroServer() {
	if r.serverArgs == nil {
		r.serverArgs = []string{"server",
			"--kubeconfig", r.kubeconfig,
			"--namespace", veleroNS,
			"--plugin-dir", r.pluginDir,
			"--item-operation-sync-frequency", "2s",
			// With several locations of the provider, a backup naming none (the smoke backup)
			// fails validation unless the server names a default.
			"--default-volume-snapshot-locations", "velero-async.io/aws:" + vslName,
			"--metrics-address", "127.0.0.1:" + strconv.Itoa(freePort(r.t)),
			"--profiler-address", "127.0.0.1:" + strconv.Itoa(freePort(r.t)),
			"--log-level", "debug",
			// Several ItemBlock workers (v1.16 on) run Execute and CreateSnapshot of different
			// PVs at once in one plugin process.
			"--item-block-worker-count", strconv.Itoa(itemBlockWorkers),
		}
		if veleroRunsConcurrentBackups() {
			// Each backup its own plugin manager, so its own plugin processes (v1.18 on).
			r.serverArgs = append(r.serverArgs, "--concurrent-backups", strconv.Itoa(concurrentBackups))
		}
		// No default AWS credentials at all: every AWS_* variable of the test's environment is
		// dropped (inheritedEnv), the shared files point nowhere and instance metadata is off. The
		// locations' Secrets are the only credentials; the plugin processes, which inherit this
		// environment, read them through KUBECONFIG.
		r.serverEnv = append(r.cliEnv(),
			"AWS_ENDPOINT_URL_EC2="+r.ec2URL,
			// The vault's account is confirmed with STS GetCallerIdentity, which the simulator
			// serves for the accounts it knows.
			"AWS_ENDPOINT_URL_STS="+r.ec2URL,
			// The vault bucket is the simulator's (the BackupStorageLocations on the stand-in S3
			// name it in s3Url, which wins).
			"AWS_ENDPOINT_URL_S3="+r.ec2URL,
			"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(r.dir, "no-such-aws-credentials"),
			"AWS_CONFIG_FILE="+filepath.Join(r.dir, "no-such-aws-config"),
			"AWS_EC2_METADATA_DISABLED=true",
			"AWS_REGION="+r.cluster.region,
			// Velero writes each Secret it uses to <TMPDIR>/credentials/..., the plugin to
			// <TMPDIR>/velero-async-credentials/...: keep them in the work dir.
			"TMPDIR="+filepath.Join(r.cluster.dir, "tmp"),
		)
		for _, kv := range r.serverEnv {
			if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_SHARED") || k == "AWS_CONFIG_FILE" {
				if _, err := os.Stat(v); err == nil {
					r.t.Fatalf("%s=%s exists", k, v)
				}
			}
		}
	}
	r.saw("velero server environment (AWS_*, KUBECONFIG, VELERO_NAMESPACE, TMPDIR): %s",
		strings.Join(relevantEnv(append(inheritedEnv(), r.serverEnv...)), " "))
	// Velero (v1.18.3, v1.17.2) builds its controller-runtime manager without metrics options, so the manager's
	// metrics server always listens on :8080 (all interfaces); --metrics-address is Velero's own.
	if l, err := net.Listen("tcp", ":8080"); err != nil {
		r.t.Fatalf("port 8080 is busy (%v): the Velero server's controller-runtime metrics listener needs it "+
			"(not configurable in %s), so only one rig can run per machine", err, veleroVersion())
	} else {
		l.Close()
	}
	r.step("starting velero server (plugins: %s, upstream velero-plugin-for-aws; AWS_ENDPOINT_URL_EC2 and AWS_ENDPOINT_URL_STS=%s)", pluginBin, r.ec2URL)
	r.server = r.start(r.procName("velero-server"), r.serverEnv, nil, filepath.Join(r.binDir, "velero"), r.serverArgs...)
}

// relevantEnv returns the effective AWS_*, KUBECONFIG, VELERO_NAMESPACE and TMPDIR settings of
// env (the last value of a key wins, as in os/exec), sorted.
func relevantEnv(env []string) []string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") || k == "KUBECONFIG" || k == "VELERO_NAMESPACE" || k == "TMPDIR" {
			m[k] = v
		}
	}
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// restartVeleroServer stops the server (and its plugin processes) and starts it again.
func (r *rig) restartVeleroServer() {
	r.step("restarting velero server (SIGTERM to pid %d)", r.server.cmd.Process.Pid)
	r.stop(r.server)
	r.startVeleroServer()
}

func (r *rig) waitBSLAvailable() {
	ctx := context.Background()
	r.step("waiting for BackupStorageLocation default to become Available")
	start := time.Now()
	var last velerov1.BackupStorageLocationPhase
	waitFor(r.t, "BSL Available", 3*time.Minute, r.server, func() bool {
		var bsl velerov1.BackupStorageLocation
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: "default"}, &bsl); err != nil {
			return false
		}
		last = bsl.Status.Phase
		return last == velerov1.BackupStorageLocationPhaseAvailable
	})
	r.saw("BSL phase %s after %s (the server has no AWS credentials of its own: the upstream plugin signed its S3 requests with the key pair of %s, from its credentialsFile)",
		last, time.Since(start).Round(time.Second), bslSecret)
}

// phaseLog records every phase a Backup or Restore goes through, as seen by a watch.
type phaseLog struct {
	mu     sync.Mutex
	phases []string
	cancel context.CancelFunc
}

func (p *phaseLog) add(ph string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ph == "" {
		ph = "(new)"
	}
	if n := len(p.phases); n == 0 || p.phases[n-1] != ph {
		p.phases = append(p.phases, ph)
	}
}

func (p *phaseLog) get() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.phases...)
}

// watchPhases watches the named Backup (restore=false) or Restore and records its phases.
func (r *rig) watchPhases(name string, restore bool) *phaseLog {
	ctx, cancel := context.WithCancel(context.Background())
	pl := &phaseLog{cancel: cancel}
	go func() {
		for ctx.Err() == nil {
			var list client.ObjectList = &velerov1.BackupList{}
			if restore {
				list = &velerov1.RestoreList{}
			}
			w, err := r.c.Watch(ctx, list, client.InNamespace(veleroNS), client.MatchingFields{"metadata.name": name})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				switch o := ev.Object.(type) {
				case *velerov1.Backup:
					pl.add(string(o.Status.Phase))
				case *velerov1.Restore:
					pl.add(string(o.Status.Phase))
				}
			}
			w.Stop()
		}
	}()
	return pl
}

func (r *rig) getBackup(name string) (*velerov1.Backup, error) {
	var b velerov1.Backup
	err := r.c.Get(context.Background(), client.ObjectKey{Namespace: veleroNS, Name: name}, &b)
	return &b, err
}

// waitBackupDone waits for a terminal phase and returns the backup.
func (r *rig) waitBackupDone(name string, timeout time.Duration, during func(*velerov1.Backup)) *velerov1.Backup {
	r.t.Helper()
	var b *velerov1.Backup
	waitFor(r.t, "backup "+name+" to finish", timeout, nil, func() bool {
		var err error
		if b, err = r.getBackup(name); err != nil {
			return false
		}
		if during != nil {
			during(b)
		}
		switch b.Status.Phase {
		case velerov1.BackupPhaseCompleted, velerov1.BackupPhasePartiallyFailed, velerov1.BackupPhaseFailed,
			velerov1.BackupPhaseFailedValidation:
			return true
		}
		return false
	})
	return b
}

func (r *rig) waitRestoreDone(name string, timeout time.Duration) *velerov1.Restore {
	r.t.Helper()
	var rs velerov1.Restore
	waitFor(r.t, "restore "+name+" to finish", timeout, nil, func() bool {
		if err := r.c.Get(context.Background(), client.ObjectKey{Namespace: veleroNS, Name: name}, &rs); err != nil {
			return false
		}
		switch rs.Status.Phase {
		case velerov1.RestorePhaseCompleted, velerov1.RestorePhasePartiallyFailed, velerov1.RestorePhaseFailed,
			velerov1.RestorePhaseFailedValidation:
			return true
		}
		return false
	})
	return &rs
}

// pluginPIDs lists running processes of this plugin that are children of the velero server.
func (r *rig) pluginPIDs() []int {
	return process.Running(r.server.cmd.Process.Pid, filepath.Join(r.pluginDir, pluginBin))
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

func must(t interface {
	Helper()
	Fatal(...any)
}, err error) {
	t.Helper()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// restore runs `velero restore create NAME --from-backup BACKUP`, waits for it to end and checks
// what every restore of this plugin must show: the phases up to Completed, one operation of
// velero-async.io/aws-volume-restore per PV, in `velero restore describe --details`. It returns
// the restore and that describe output.
func (r *rig) restore(t *testing.T, name, backup string, pvs int) (*velerov1.Restore, string) {
	t.Helper()
	pl := r.watchPhases(name, true)
	defer pl.cancel()
	out := r.mustVelero("restore", "create", name, "--from-backup", backup)
	r.saw("%s", firstLine(out))
	rs := r.waitRestoreDone(name, 5*time.Minute)
	time.Sleep(500 * time.Millisecond)
	rphases := pl.get()
	r.saw("restore %s phases observed by watch: %v", name, rphases)
	// Velero asks each operation's progress once as the restore's items end, and goes straight
	// to Finalizing when all are done by then (a busy machine's slow restore, a volume EC2 made
	// at once): WaitingForPluginOperations is then skipped, and the operations' count below is
	// what shows they ran.
	if want := []string{"InProgress", "Finalizing", "Completed"}; !isSubsequence(want, rphases) {
		t.Errorf("restore phases %v do not contain %v in order", rphases, want)
	}
	if !slices.Contains(rphases, string(velerov1.RestorePhaseWaitingForPluginOperations)) {
		r.saw("restore %s: every operation had completed when Velero first asked; no WaitingForPluginOperations", name)
	}
	r.saw("restore %s ended %s: operations attempted %d, completed %d, failed %d; errors %d warnings %d",
		name, rs.Status.Phase, rs.Status.RestoreItemOperationsAttempted, rs.Status.RestoreItemOperationsCompleted,
		rs.Status.RestoreItemOperationsFailed, rs.Status.Errors, rs.Status.Warnings)
	d, _ := r.velero("restore", "describe", name, "--details", "--colorized=false")
	r.saveDescribe(name+"-final", d, true)
	if rs.Status.Phase == velerov1.RestorePhaseCompleted {
		r.addSample(readme.Restore, d)
	}
	logs, _ := r.velero("restore", "logs", name)
	r.saveLog(name+"-restore-logs", logs)
	if rs.Status.RestoreItemOperationsAttempted != pvs || rs.Status.RestoreItemOperationsCompleted != pvs {
		t.Errorf("restore item operations attempted/completed = %d/%d, want %d (one per PV, by velero-async.io/aws-volume-restore)",
			rs.Status.RestoreItemOperationsAttempted, rs.Status.RestoreItemOperationsCompleted, pvs)
	}
	if !strings.Contains(d, "velero-async.io/aws-volume-restore") {
		t.Errorf("`velero restore describe --details` shows no operation of velero-async.io/aws-volume-restore")
	}
	if rs.Status.Phase != velerov1.RestorePhaseCompleted {
		r.saveDescribe(name+"-restore-logs", logs, false)
		t.Errorf("restore %s ended %s, want Completed", name, rs.Status.Phase)
	}
	return rs, d
}

// pvVolumeID is the EBS volume ID a PV points at, in-tree (aws://ZONE/vol-…) or CSI.
func pvVolumeID(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.AWSElasticBlockStore != nil:
		id := pv.Spec.AWSElasticBlockStore.VolumeID
		return id[strings.LastIndex(id, "/")+1:]
	case pv.Spec.CSI != nil:
		return pv.Spec.CSI.VolumeHandle
	}
	return ""
}
