package harness

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	biav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/backupitemaction/v2"
	riav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v2"
	vsv1 "github.com/vmware-tanzu/velero/pkg/plugin/velero/volumesnapshotter/v1"
	corev1api "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/kubeapi"
)

// fakePlugins is an in-process plugin set whose item actions look at the API as the plugin's
// do: what the Backup there says at every Progress call.
type fakePlugins struct {
	api *kubeapi.Server

	mu sync.Mutex
	// inits are the configs the volume snapshotter's Init got, with credentialsFile's content
	// in place of its path.
	inits []map[string]string
	// seen are "phase locations" of the Backup (or "phase backup" of the Restore) in the API
	// at each Progress call; "missing" when it is not there.
	seen []string
}

func (f *fakePlugins) GetVolumeSnapshotter(string) (vsv1.VolumeSnapshotter, error) {
	return fakeSnapshotter{f}, nil
}
func (f *fakePlugins) GetBackupItemActionsV2() ([]biav2.BackupItemAction, error) {
	return []biav2.BackupItemAction{fakeBIA{f}}, nil
}
func (f *fakePlugins) GetBackupItemActionV2(string) (biav2.BackupItemAction, error) {
	return fakeBIA{f}, nil
}
func (f *fakePlugins) GetRestoreItemActionsV2() ([]riav2.RestoreItemAction, error) {
	return []riav2.RestoreItemAction{fakeRIA{f}}, nil
}
func (f *fakePlugins) GetRestoreItemActionV2(string) (riav2.RestoreItemAction, error) {
	return fakeRIA{f}, nil
}
func (f *fakePlugins) CleanupClients() {}

func (f *fakePlugins) see(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, s)
}

type fakeSnapshotter struct{ f *fakePlugins }

func (s fakeSnapshotter) Init(config map[string]string) error {
	cfg := map[string]string{}
	for k, v := range config {
		cfg[k] = v
	}
	if p := cfg["credentialsFile"]; p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		cfg["credentialsFile"] = string(b)
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.inits = append(s.f.inits, cfg)
	return nil
}
func (fakeSnapshotter) CreateVolumeFromSnapshot(snapshotID, _, _ string, _ *int64) (string, error) {
	return "vol-from-" + snapshotID, nil
}
func (fakeSnapshotter) GetVolumeID(pv runtime.Unstructured) (string, error) {
	id, _, _ := unstructuredString(pv, "spec", "awsElasticBlockStore", "volumeID")
	return id[strings.LastIndex(id, "/")+1:], nil
}
func (fakeSnapshotter) SetVolumeID(pv runtime.Unstructured, _ string) (runtime.Unstructured, error) {
	return pv, nil
}
func (fakeSnapshotter) GetVolumeInfo(string, string) (string, *int64, error) { return "gp3", nil, nil }
func (fakeSnapshotter) CreateSnapshot(volumeID, _ string, _ map[string]string) (string, error) {
	return "snap-of-" + volumeID, nil
}
func (fakeSnapshotter) DeleteSnapshot(string) error { return nil }

func unstructuredString(u runtime.Unstructured, path ...string) (string, bool, error) {
	m := u.UnstructuredContent()
	for _, p := range path[:len(path)-1] {
		next, _ := m[p].(map[string]any)
		m = next
	}
	s, ok := m[path[len(path)-1]].(string)
	return s, ok, nil
}

// fakeBIA opens one operation per PV that completes at its second Progress call.
type fakeBIA struct{ f *fakePlugins }

func (fakeBIA) Name() string { return "fake/bia" }
func (fakeBIA) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"persistentvolumes"}}, nil
}
func (a fakeBIA) Execute(item runtime.Unstructured, backup *velerov1api.Backup) (runtime.Unstructured, []velero.ResourceIdentifier, string, []velero.ResourceIdentifier, error) {
	var b velerov1api.Backup
	if !a.f.api.Get(backup.Namespace, backup.Name, &b) {
		a.f.see("execute: missing")
	} else {
		a.f.see("execute: " + string(b.Status.Phase) + " " + strings.Join(b.Spec.VolumeSnapshotLocations, ","))
	}
	return item, nil, "op-1", nil, nil
}
func (a fakeBIA) Progress(_ string, backup *velerov1api.Backup) (velero.OperationProgress, error) {
	var b velerov1api.Backup
	if !a.f.api.Get(backup.Namespace, backup.Name, &b) {
		a.f.see("missing")
		return velero.OperationProgress{Completed: true, Err: "backup not in the API"}, nil
	}
	if b.UID != backup.UID {
		a.f.see("UID " + string(b.UID) + " differs from " + string(backup.UID))
	}
	a.f.see(string(b.Status.Phase) + " " + strings.Join(b.Spec.VolumeSnapshotLocations, ","))
	a.f.mu.Lock()
	n := len(a.f.seen)
	a.f.mu.Unlock()
	return velero.OperationProgress{Started: time.Now(), Completed: n > 2}, nil
}
func (fakeBIA) Cancel(string, *velerov1api.Backup) error { return nil }

// fakeRIA opens one operation per PV that completes at once.
type fakeRIA struct{ f *fakePlugins }

func (fakeRIA) Name() string { return "fake/ria" }
func (fakeRIA) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"persistentvolumes"}}, nil
}
func (fakeRIA) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	return &velero.RestoreItemActionExecuteOutput{UpdatedItem: in.Item, OperationID: "op-r"}, nil
}
func (a fakeRIA) Progress(_ string, restore *velerov1api.Restore) (velero.OperationProgress, error) {
	var r velerov1api.Restore
	if !a.f.api.Get(restore.Namespace, restore.Name, &r) {
		a.f.see("restore missing")
	} else {
		a.f.see(string(r.Status.Phase) + " of " + r.Spec.BackupName)
	}
	return velero.OperationProgress{Started: time.Now(), Completed: true}, nil
}
func (fakeRIA) Cancel(string, *velerov1api.Restore) error { return nil }
func (fakeRIA) AreAdditionalItemsReady([]velero.ResourceIdentifier, *velerov1api.Restore) (bool, error) {
	return true, nil
}

// TestCorePublishesToAPI runs a backup, a restore and a deletion with an API: the item actions
// find the Backup and Restore there as core moves them on, the location's credential Secret
// reaches the volume snapshotter as a credentialsFile, and the deleted Backup leaves the API.
func TestCorePublishesToAPI(t *testing.T) {
	api, err := kubeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	api.Put(&corev1api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "creds"}, Data: map[string][]byte{"cloud": []byte("[default]\nkey")}})
	plugins := &fakePlugins{api: api}
	core := &Core{Plugins: func() PluginManager { return plugins }, SyncPeriod: 50 * time.Millisecond, API: api, CredentialsDir: t.TempDir()}
	loc := NewLocation("primary", map[string]string{"region": "us-east-1", "credentialsFile": "/ignored"})
	loc.Spec.Credential = &corev1api.SecretKeySelector{LocalObjectReference: corev1api.LocalObjectReference{Name: "creds"}, Key: "cloud"}
	pv := fixture.Volume{PV: "pv-1", VolumeID: "vol-1", Zone: "us-east-1a", SizeGiB: 10}.PersistentVolume()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	b, err := core.Backup(ctx, BackupRequest{Name: "nightly", Location: loc, PVs: []*corev1api.PersistentVolume{pv}})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Succeeded() {
		t.Fatalf("backup %s: %v %v", b.Backup.Status.Phase, b.ItemErrors, b.OperationErrors)
	}
	want := []string{"execute: InProgress primary", "WaitingForPluginOperations primary", "WaitingForPluginOperations primary"}
	if strings.Join(plugins.seen, "|") != strings.Join(want, "|") {
		t.Errorf("the item action saw %q, want %q", plugins.seen, want)
	}
	var stored velerov1api.Backup
	if !api.Get(Namespace, "nightly", &stored) || stored.Status.Phase != velerov1api.BackupPhaseCompleted || stored.UID != b.Backup.UID ||
		stored.Status.BackupItemOperationsCompleted != 1 || stored.Status.CompletionTimestamp == nil {
		t.Errorf("Backup in the API: %+v", stored)
	}
	var storedLoc velerov1api.VolumeSnapshotLocation
	if !api.Get(Namespace, "primary", &storedLoc) || storedLoc.Spec.Credential == nil {
		t.Errorf("location in the API: %+v", storedLoc)
	}
	if len(plugins.inits) != 1 || plugins.inits[0]["credentialsFile"] != "[default]\nkey" || plugins.inits[0]["region"] != "us-east-1" {
		t.Errorf("Init got %v, want the Secret's key as credentialsFile", plugins.inits)
	}
	if _, ok := loc.Spec.Config["credentialsFile"]; !ok || loc.Spec.Config["credentialsFile"] != "/ignored" {
		t.Errorf("core changed the location's config: %v", loc.Spec.Config)
	}

	plugins.seen = nil
	r, err := core.Restore(ctx, RestoreRequest{Name: "again", Backup: b, Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Succeeded() || strings.Join(plugins.seen, "|") != "WaitingForPluginOperations of nightly" {
		t.Errorf("restore %s; the restore item action saw %q", r.Restore.Status.Phase, plugins.seen)
	}
	var storedRestore velerov1api.Restore
	if !api.Get(Namespace, "again", &storedRestore) || storedRestore.Status.Phase != velerov1api.RestorePhaseCompleted {
		t.Errorf("Restore in the API: %+v", storedRestore.Status)
	}

	if err := core.DeleteBackup(b, loc); err != nil {
		t.Fatal(err)
	}
	if api.Get(Namespace, "nightly", &stored) {
		t.Error("the deleted Backup is still in the API")
	}
	if b.Backup.Status.Phase != velerov1api.BackupPhaseCompleted {
		t.Errorf("DeleteBackup changed the result's phase to %s", b.Backup.Status.Phase)
	}
}

// TestCredentialWithoutSecret: a location's spec.credential needs an API holding the Secret.
func TestCredentialWithoutSecret(t *testing.T) {
	api, err := kubeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	loc := NewLocation("primary", map[string]string{"region": "us-east-1"})
	loc.Spec.Credential = &corev1api.SecretKeySelector{LocalObjectReference: corev1api.LocalObjectReference{Name: "creds"}, Key: "cloud"}
	tests := []struct {
		name string
		api  API
		want string
	}{
		{name: "no API", want: "no Kubernetes API"},
		{name: "no Secret", api: api, want: "Secret velero/creds not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core := &Core{API: tt.api, CredentialsDir: t.TempDir()}
			if _, err := core.snapshotterConfig(loc); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
	api.Put(&corev1api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "creds"}, Data: map[string][]byte{"other": nil}})
	core := &Core{API: api, CredentialsDir: t.TempDir()}
	if _, err := core.snapshotterConfig(loc); err == nil || !strings.Contains(err.Error(), `no key "cloud"`) {
		t.Errorf("error %v, want one saying the key is missing", err)
	}
}
