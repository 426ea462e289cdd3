package plugin

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/features"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

var now = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.Out = io.Discard
	return l
}

// persistentVolume builds a PV: in-tree when volumeID starts with aws://, CSI with driver otherwise.
func persistentVolume(volumeID, driver string, labels map[string]any) *unstructured.Unstructured {
	spec := map[string]any{"csi": map[string]any{"driver": driver, "volumeHandle": volumeID}}
	if driver == "" {
		spec = map[string]any{"awsElasticBlockStore": map[string]any{"volumeID": volumeID}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": "pv-1", "labels": labels},
		"spec":     spec,
	}}
}

func TestSnapshotProgressActionExecute(t *testing.T) {
	const vol = "vol-0123456789abcdef0"
	zoneB := map[string]any{"topology.kubernetes.io/zone": "us-west-2-lax-1b"}
	no := false
	unknownDriver := "persistent volume pv-1 uses CSI driver example.com/ebs, which this plugin does not know; its volume " + vol + " is not snapshotted by this plugin"
	tests := []struct {
		name     string
		pv       *unstructured.Unstructured
		backup   velerov1.Backup
		csi      bool   // Velero runs with EnableCSI
		env      string // AWS_REGION
		wantOp   string // "" = no operation
		wantWarn string // the one warning logged, case-insensitive; "" = none
	}{
		{name: "in-tree with AZ", pv: persistentVolume("aws://us-east-1a/"+vol, "", nil), wantOp: "us-east-1"},
		{name: "CSI, region from a Local Zone label", pv: persistentVolume(vol, "ebs.csi.aws.com", zoneB), wantOp: "us-west-2"},
		{name: "CSI with EnableCSI goes the CSI way", pv: persistentVolume(vol, "ebs.csi.aws.com", zoneB), csi: true},
		{name: "EKS Auto Mode", pv: persistentVolume(vol, "ebs.csi.eks.amazonaws.com", zoneB), wantOp: "us-west-2"},
		{name: "EKS Auto Mode with EnableCSI goes the CSI way", pv: persistentVolume(vol, "ebs.csi.eks.amazonaws.com", zoneB), csi: true},
		{name: "unknown CSI driver with an EBS volume ID", pv: persistentVolume(vol, "example.com/ebs", zoneB), wantWarn: unknownDriver},
		{name: "unknown CSI driver with EnableCSI goes the CSI way", pv: persistentVolume(vol, "example.com/ebs", zoneB), csi: true},
		{name: "unknown CSI driver, backup without volume snapshots", pv: persistentVolume(vol, "example.com/ebs", zoneB), backup: velerov1.Backup{Spec: velerov1.BackupSpec{SnapshotVolumes: &no}}},
		{name: "unknown CSI driver, finalizing backup", pv: persistentVolume(vol, "example.com/ebs", zoneB), backup: velerov1.Backup{Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseFinalizing}}},
		{name: "in-tree with EnableCSI is still native", pv: persistentVolume("aws://us-east-1a/"+vol, "", nil), csi: true, wantOp: "us-east-1"},
		{name: "no zone anywhere: AWS_REGION", pv: persistentVolume(vol, "", nil), env: "eu-central-1", wantOp: "eu-central-1"},
		{name: "no zone, no AWS_REGION", pv: persistentVolume(vol, "", nil), wantWarn: "persistent volume pv-1 names no zone or region"},
		{name: "other CSI driver", pv: persistentVolume("fs-1", "efs.csi.aws.com", nil)},
		{name: "malformed EBS volume ID", pv: persistentVolume("aws://us-east-1a/vol-XYZ", "", nil), wantWarn: "malformed EBS persistent volume"},
		{name: "backup without volume snapshots", pv: persistentVolume("aws://us-east-1a/"+vol, "", nil), backup: velerov1.Backup{Spec: velerov1.BackupSpec{SnapshotVolumes: &no}}},
		{name: "finalizing backup", pv: persistentVolume("aws://us-east-1a/"+vol, "", nil), backup: velerov1.Backup{Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseFinalizing}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", tt.env)
			t.Setenv("AWS_DEFAULT_REGION", "")
			if tt.csi {
				features.Enable(velerov1.CSIFeatureFlag)
				defer features.Disable(velerov1.CSIFeatureFlag)
			}
			log, hook := logtest.NewNullLogger()
			log.SetLevel(logrus.DebugLevel)
			a := NewSnapshotProgressAction(nil, ebs.NewHandoff(clocktesting.NewFakeClock(now)), clocktesting.NewFakeClock(now), log)
			item, extra, opID, post, err := a.Execute(tt.pv, &tt.backup)
			if err != nil || item != tt.pv || extra != nil || post != nil {
				t.Fatalf("Execute = %v, %v, %q, %v, %v; want the PV unchanged and no error", item, extra, opID, post, err)
			}
			checkWarning(t, hook, tt.wantWarn)
			if tt.wantOp == "" {
				if opID != "" {
					t.Errorf("operation %q, want none", opID)
				}
				return
			}
			want := model.Operation{Region: tt.wantOp, VolumeID: vol, Issued: now, PV: "pv-1"}.String()
			if opID != want {
				t.Errorf("operation %q, want %q", opID, want)
			}
		})
	}
}

// checkWarning checks that the log holds exactly one warning, containing want (case-insensitive), or none when want is "".
func checkWarning(t *testing.T, hook *logtest.Hook, want string) {
	t.Helper()
	var warnings []string
	for _, e := range hook.AllEntries() {
		if e.Level <= logrus.WarnLevel {
			warnings = append(warnings, e.Message)
		}
	}
	switch {
	case want == "" && len(warnings) > 0:
		t.Errorf("warnings %q, want none", warnings)
	case want != "" && (len(warnings) != 1 || !strings.Contains(strings.ToLower(warnings[0]), strings.ToLower(want))):
		t.Errorf("warnings %q, want one containing %q", warnings, want)
	}
}

func TestVolumeRestoreActionExecute(t *testing.T) {
	const oldVol, newVol = "vol-0123456789abcdef0", "vol-0fedcba9876543210"
	west := map[string]any{"topology.kubernetes.io/zone": "us-west-2a", "topology.kubernetes.io/region": "us-west-2"}
	tests := []struct {
		name           string
		item, fromBack *unstructured.Unstructured
		wantOp         string
	}{
		{name: "restored into a new volume", item: persistentVolume("aws://us-west-2a/"+newVol, "", west), fromBack: persistentVolume("aws://us-east-1a/"+oldVol, "", nil), wantOp: "us-west-2"},
		{name: "CSI restored into a new volume", item: persistentVolume(newVol, "ebs.csi.aws.com", west), fromBack: persistentVolume(oldVol, "ebs.csi.aws.com", nil), wantOp: "us-west-2"},
		{name: "EKS Auto Mode restored into a new volume", item: persistentVolume(newVol, "ebs.csi.eks.amazonaws.com", west), fromBack: persistentVolume(oldVol, "ebs.csi.eks.amazonaws.com", nil), wantOp: "us-west-2"},
		{name: "unknown CSI driver", item: persistentVolume(newVol, "example.com/ebs", west), fromBack: persistentVolume(oldVol, "example.com/ebs", nil)},
		{name: "same volume: not restored from a snapshot", item: persistentVolume("aws://us-east-1a/"+oldVol, "", nil), fromBack: persistentVolume("aws://us-east-1a/"+oldVol, "", nil)},
		{name: "not EBS", item: persistentVolume("fs-1", "efs.csi.aws.com", nil), fromBack: persistentVolume("fs-1", "efs.csi.aws.com", nil)},
		{name: "no zone or region", item: persistentVolume(newVol, "", nil), fromBack: persistentVolume(oldVol, "", nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewVolumeRestoreAction(nil, clocktesting.NewFakeClock(now), quietLog())
			out, err := a.Execute(&velero.RestoreItemActionExecuteInput{Item: tt.item, ItemFromBackup: tt.fromBack, Restore: &velerov1.Restore{}})
			if err != nil || out.UpdatedItem != tt.item || out.SkipRestore {
				t.Fatalf("Execute = %+v, %v; want the PV unchanged", out, err)
			}
			want := ""
			if tt.wantOp != "" {
				want = model.VolumeOperation{Operation: model.Operation{Region: tt.wantOp, VolumeID: newVol, Issued: now}}.String()
			}
			if out.OperationID != want {
				t.Errorf("operation %q, want %q", out.OperationID, want)
			}
		})
	}
}

func TestVolumeSnapshotterGetVolumeID(t *testing.T) {
	const vol = "vol-0123456789abcdef0"
	tests := []struct {
		name    string
		pv      *unstructured.Unstructured
		want    string
		wantErr bool
	}{
		{name: "in-tree", pv: persistentVolume("aws://us-east-1a/"+vol, "", nil), want: vol},
		{name: "EBS CSI driver", pv: persistentVolume(vol, "ebs.csi.aws.com", nil), want: vol},
		{name: "EKS Auto Mode", pv: persistentVolume(vol, "ebs.csi.eks.amazonaws.com", nil), want: vol},
		{name: "unknown CSI driver with an EBS volume ID", pv: persistentVolume(vol, "example.com/ebs", nil)},
		{name: "other CSI driver", pv: persistentVolume("fs-1", "efs.csi.aws.com", nil)},
		{name: "malformed EBS volume ID", pv: persistentVolume("vol-XYZ", "ebs.csi.eks.amazonaws.com", nil), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewVolumeSnapshotter(nil, nil, nil, quietLog()).GetVolumeID(tt.pv)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("GetVolumeID = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
