package plugin_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt/process"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/version"
)

// TestPluginBinaryServesItsPlugins drives the built plugin binary through Velero's own plugin
// client, as the Velero server does: discovery over a plugin directory, then the plugins by
// name over gRPC.
func TestPluginBinaryServesItsPlugins(t *testing.T) {
	log := logrus.New()
	registry := process.NewRegistry(built.Dir, log, logrus.InfoLevel)
	if err := registry.DiscoverPlugins(); err != nil {
		t.Fatalf("discovering plugins: %v", err)
	}
	if _, err := registry.Get(common.PluginKindVolumeSnapshotter, model.VolumeSnapshotterName); err != nil {
		t.Errorf("volume snapshotter not registered: %v", err)
	}
	if _, err := registry.Get(common.PluginKindBackupItemActionV2, model.BackupItemActionName); err != nil {
		t.Errorf("backup item action v2 not registered: %v", err)
	}
	if _, err := registry.Get(common.PluginKindRestoreItemActionV2, model.RestoreItemActionName); err != nil {
		t.Errorf("restore item action v2 not registered: %v", err)
	}
	m := clientmgmt.NewManager(log, logrus.InfoLevel, registry)
	defer m.CleanupClients()

	vs, err := m.GetVolumeSnapshotter(model.VolumeSnapshotterName)
	if err != nil {
		t.Fatalf("getting the volume snapshotter: %v", err)
	}
	err = vs.Init(map[string]string{"region": "us-east-1", "copyToRegoin": "us-west-2"})
	if err == nil || !strings.Contains(err.Error(), `"copyToRegoin"`) {
		t.Errorf("Init with a misspelt key: got %v, want an error naming the key", err)
	}
	if vs, err = m.GetVolumeSnapshotter(model.VolumeSnapshotterName); err != nil {
		t.Fatalf("getting the volume snapshotter again: %v", err)
	}
	if err := vs.Init(map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2"}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	pv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": "pv-1", "labels": map[string]any{"topology.kubernetes.io/zone": "us-east-1b"}},
		"spec":     map[string]any{"awsElasticBlockStore": map[string]any{"volumeID": "aws://us-east-1b/vol-0123456789abcdef0"}},
	}}
	id, err := vs.GetVolumeID(pv)
	if err != nil || id != "vol-0123456789abcdef0" {
		t.Errorf("GetVolumeID = %q, %v", id, err)
	}

	bia, err := m.GetBackupItemActionV2(model.BackupItemActionName)
	if err != nil {
		t.Fatalf("getting the backup item action: %v", err)
	}
	backup := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "velero"}}
	_, _, opID, _, err := bia.Execute(pv, backup)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	op, err := model.ParseOperationID(opID)
	if err != nil || op.Region != "us-east-1" || op.VolumeID != "vol-0123456789abcdef0" {
		t.Errorf("Execute returned operation %q (%+v, %v), want one for vol-0123456789abcdef0 in us-east-1", opID, op, err)
	}
	if _, err := bia.Progress("not-an-operation", backup); err == nil || !strings.Contains(err.Error(), "not-an-operation") {
		t.Errorf("Progress of a malformed operation ID: got %v, want an error naming it", err)
	}
}

// The built binary answers a person: --help lists its commands first, version prints the
// version and commit (an unstamped build's here).
func TestPluginBinaryAnswersAPerson(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"--help lists check and version, then what it serves", []string{"--help"},
			[]string{"Commands:\n  check ", "\n  version ", "With no command, the binary serves Velero its plugins"}},
		{"version", []string{"version"}, []string{"velero-plugin-for-aws-async " + version.String() + "\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(built.Binary, tt.args...).Output()
			if err != nil {
				t.Fatalf("%s %v: %v", built.Binary, tt.args, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("%v printed %q, want it to hold %q", tt.args, out, w)
				}
			}
		})
	}
}
