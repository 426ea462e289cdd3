package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1api "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/kubeapi"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Tests of the credentials of VolumeSnapshotLocations, which the plugin's item actions read
// through the Kubernetes API: rigs with Env.KubeAPI.

// The accounts of the location tests: the plugin processes' own credentials are account A's,
// the location's Secret holds account B's, and B owns the seeded volumes.
const (
	accountA  = "111111111111"
	accountB  = "333333333333"
	secret    = "cloud-credentials-b"
	secretKey = "cloud"
	locationB = "account-b"
)

var (
	keyOfA = ec2sim.AccessKey{AccessKeyID: "AKIAENVIRONMENT00001", SecretAccessKey: "environment-secret"}
	keyOfB = ec2sim.AccessKey{AccessKeyID: "AKIALOCATIONSECRET01", SecretAccessKey: "location-secret"}
)

// newAccountBRig starts an API rig of volumes in account B (simulator seed seed), its plugin
// processes holding account A's credentials file, the Secret of B's credentials in the API and
// the location account-b naming it, which it returns. before, when set, runs on the rig first.
func newAccountBRig(t *testing.T, seed int64, volumes int, before func(*suite)) (*suite, *velerov1api.VolumeSnapshotLocation) {
	t.Helper()
	cfg := rig.FastConfig(seed)
	// B first: the default account, which the seeded volumes belong to.
	cfg.Accounts = []ec2sim.Account{
		{ID: accountB, AccessKeys: []ec2sim.AccessKey{keyOfB}},
		{ID: accountA, AccessKeys: []ec2sim.AccessKey{keyOfA}},
	}
	r := newAPIRig(t, cfg, volumes)
	if before != nil {
		before(r)
	}
	// The plugin processes start with this environment (StartSimulator set the endpoint):
	// account A's credentials file, no static keys.
	serverCredentials(t, keyOfA)
	if err := r.PutSecret(secret, map[string][]byte{secretKey: keyOfB.CredentialsFile()}); err != nil {
		t.Fatal(err)
	}
	loc := harness.NewLocation(locationB, map[string]string{model.ConfigRegion: sourceRegion, model.ConfigCopyToRegion: copyRegion})
	loc.Spec.Credential = &corev1api.SecretKeySelector{LocalObjectReference: corev1api.LocalObjectReference{Name: secret}, Key: secretKey}
	return r, loc
}

// newAPIRig is newRig with a Kubernetes API the rig's cores publish to and its plugin
// processes read.
func newAPIRig(t *testing.T, cfg ec2sim.Config, volumes int) *suite {
	t.Helper()
	return newRigIn(t, &rig.Env{Plugin: plugin, LogDir: t.TempDir(), SyncPeriod: syncPeriod, KubeAPI: true}, cfg, volumes)
}

// The plugin processes' own credentials (AWS_SHARED_CREDENTIALS_FILE, as Velero's install
// mounts its cloud-credentials Secret) are of account A; the VolumeSnapshotLocation's
// spec.credential names a Secret holding account B's, whose volumes are backed up. Velero core
// hands that Secret to the volume snapshotter as a credentialsFile; the item actions see only
// the Backup and must read the location and the Secret through the API. The backup completes
// with every snapshot and copy in account B and not one EC2 call as account A, and a restore
// (whose action reads the Backup from the API to find its location) creates its volumes in B.
func TestLocationCredentialFromAPI(t *testing.T) {
	r, loc := newAccountBRig(t, 11, 4, nil)
	// Another location of the provider in the region, with the environment's credentials: the
	// item actions must take the one the Backup names.
	r.KubeAPI.Put(harness.NewLocation("account-a", map[string]string{model.ConfigRegion: sourceRegion, model.ConfigCopyToRegion: copyRegion}))

	ctx, cancel := context.WithTimeout(t.Context(), backupTimeout)
	defer cancel()
	// Item actions that looked in the wrong account would wait for the snapshots until the
	// operations time out: a minute, where the backup takes seconds.
	res, err := r.Core.Backup(ctx, harness.BackupRequest{
		Name: "nightly-b", Labels: map[string]string{"app": "integration"}, Location: loc, PVs: r.PVs, ItemOperationTimeout: time.Minute,
	})
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	requireCompleted(t, res, len(r.PVs))
	requireOneEach(t, r, res, copyRegion) // the simulator's default account is B

	inB := byID(r.Sim.SnapshotsIn(accountB, sourceRegion))
	for _, s := range res.Snapshots {
		if _, ok := inB[s.SnapshotID]; !ok {
			t.Errorf("%s: snapshot %s is not in account B", s.PV, s.SnapshotID)
		}
	}
	for _, region := range []string{sourceRegion, copyRegion} {
		if n := len(r.Sim.SnapshotsIn(accountA, region)); n != 0 {
			t.Errorf("%d snapshots in account A in %s, want none", n, region)
		}
	}
	st := r.Sim.Stats()
	if n := st.Accounts[accountB].Total("CopySnapshot", "ok"); n != len(r.PVs) {
		t.Errorf("%d copies made in account B, want %d: the item actions, which copy, did not use the location's Secret", n, len(r.PVs))
	}
	if n := st.Accounts[accountA].Total("", ""); n != 0 {
		t.Errorf("%d EC2 calls as account A (the environment's credentials), want none", n)
	}
	if n := st.Total("", "AuthFailure"); n != 0 {
		t.Errorf("EC2 answered AuthFailure %d times", n)
	}
	secretPath := kubeapi.ObjectPath(corev1api.SchemeGroupVersion.WithKind("Secret"), harness.Namespace, secret)
	if n := pluginReads(r.KubeAPI, secretPath); n == 0 {
		t.Errorf("no plugin process read %s from the API", secretPath)
	}
	var published velerov1api.Backup
	if !r.KubeAPI.Get(harness.Namespace, res.Backup.Name, &published) || published.UID != res.Backup.UID ||
		published.Status.Phase != velerov1api.BackupPhaseCompleted || strings.Join(published.Spec.VolumeSnapshotLocations, ",") != loc.Name {
		t.Errorf("Backup in the API: UID %s, phase %s, locations %v; want %s, Completed, %s", published.UID, published.Status.Phase,
			published.Spec.VolumeSnapshotLocations, res.Backup.UID, loc.Name)
	}

	restore, err := r.Core.Restore(ctx, harness.RestoreRequest{Name: "restore-b", Backup: res, Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	if !restore.Succeeded() || len(restore.Volumes) != len(r.PVs) || len(restore.Operations) != len(r.PVs) {
		t.Fatalf("restore %s with %d volumes and %d operations, want Completed with %d each; errors %v %v", restore.Restore.Status.Phase,
			len(restore.Volumes), len(restore.Operations), len(r.PVs), restore.ItemErrors, restore.OperationErrors)
	}
	volsB := map[string]bool{}
	for _, v := range r.Sim.VolumesIn(accountB, sourceRegion) {
		volsB[v.ID] = true
	}
	for _, v := range restore.Volumes {
		if !volsB[v.VolumeID] {
			t.Errorf("%s: restored volume %s is not in account B", v.PV, v.VolumeID)
		}
	}
	backupPath := kubeapi.ObjectPath(velerov1api.SchemeGroupVersion.WithKind("Backup"), harness.Namespace, res.Backup.Name)
	if n := pluginReads(r.KubeAPI, backupPath); n == 0 {
		t.Errorf("the restore item action never read %s from the API", backupPath)
	}
	if n := r.Sim.Stats().Accounts[accountA].Total("", ""); n != 0 {
		t.Errorf("%d EC2 calls as account A after the restore, want none", n)
	}
}

// pluginReads counts the successful reads of path by plugin processes (the resolver's user
// agent).
func pluginReads(api *kubeapi.Server, path string) int {
	n := 0
	for _, q := range api.Requests() {
		if q.Path == path && q.Code == 200 && strings.HasPrefix(q.UserAgent, "velero-plugin-for-aws-async") {
			n++
		}
	}
	return n
}
