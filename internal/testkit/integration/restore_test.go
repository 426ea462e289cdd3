package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
	corev1api "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// drLocation is the recovery cluster's location: the same name as the backed-up cluster's,
// in the copy region.
func drLocation() *velerov1api.VolumeSnapshotLocation {
	return harness.NewLocation("default", map[string]string{model.ConfigRegion: copyRegion})
}

// A recovery cluster in the copy region restores every volume from its copy there, in an AZ of
// that region, with the PV's zone, region and node affinity moved along and the volume's type,
// IOPS and throughput kept; the restore waits until the volumes are available.
func TestRestoreInCopyRegionUsesCopies(t *testing.T) {
	r := newRig(t, rig.FastConfig(1), 8)
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.PVs))
	restore, err := r.Core.Restore(t.Context(), harness.RestoreRequest{Name: "restore-dr", Backup: res, Location: drLocation()})
	if err != nil {
		t.Fatal(err)
	}
	if !restore.Succeeded() {
		t.Fatalf("restore phase %s; errors %v %v", restore.Restore.Status.Phase, restore.ItemErrors, restore.OperationErrors)
	}
	if len(restore.Volumes) != len(r.PVs) || len(restore.Operations) != len(r.PVs) {
		t.Fatalf("%d volumes restored with %d operations, want %d each", len(restore.Volumes), len(restore.Operations), len(r.PVs))
	}
	copies := map[string]string{}
	for _, s := range r.Sim.Snapshots(copyRegion) {
		copies[s.ID] = s.SourceSnapshotID
	}
	backedUp := volumesByID(r.Sim.Volumes(sourceRegion))
	restored := volumesByID(r.Sim.Volumes(copyRegion))
	items := map[string]*corev1api.PersistentVolume{}
	for _, u := range restore.Items {
		pv := &corev1api.PersistentVolume{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pv); err != nil {
			t.Fatal(err)
		}
		items[pv.Name] = pv
	}
	for i, rv := range restore.Volumes {
		v, ok := restored[rv.VolumeID]
		if !ok {
			t.Errorf("%s: restored volume %s not in %s", rv.PV, rv.VolumeID, copyRegion)
			continue
		}
		if copies[v.SnapshotID] != rv.SnapshotID {
			t.Errorf("%s: volume %s made from %s, want the copy of %s", rv.PV, v.ID, v.SnapshotID, rv.SnapshotID)
		}
		if v.State != "available" {
			t.Errorf("%s: volume %s is %s after the restore completed", rv.PV, v.ID, v.State)
		}
		orig := backedUp[fixture.VolumeIDOf(r.PVs[i])]
		if v.Type != orig.Type || v.IOPS != orig.IOPS || v.Throughput != orig.Throughput || v.SizeGiB != orig.SizeGiB {
			t.Errorf("%s: restored %s %d GiB %d IOPS %d MiB/s, backed up %s %d GiB %d IOPS %d MiB/s", rv.PV,
				v.Type, v.SizeGiB, v.IOPS, v.Throughput, orig.Type, orig.SizeGiB, orig.IOPS, orig.Throughput)
		}
		if want := orig.AvailabilityZone[len(orig.AvailabilityZone)-1:]; v.AvailabilityZone != copyRegion+want {
			t.Errorf("%s: restored in %s, want the AZ of the same letter %s%s", rv.PV, v.AvailabilityZone, copyRegion, want)
		}
		requireScheduledIn(t, items[rv.PV], v)
	}
}

// smallVolumeGiB is the size of volumes that initialize in about 3 s at 300 MiB/s.
const smallVolumeGiB = 1

// A recovery cluster whose location asks for a provisioned initialization rate and waits for
// initialization keeps each volume's restore operation in progress until EC2 reports the
// volume 100% initialized: no operation completes earlier, and the progress Velero shows went
// through an initializing phase at the provisioned rate. The item action reads the location
// through the Kubernetes API, as in a cluster.
func TestRestoreInCopyRegionWaitsForInitialization(t *testing.T) {
	r := newAPIRig(t, rig.FastConfig(1), 0)
	r.PVs = fixture.Fleet{Region: sourceRegion, Count: 2, SizeGiB: smallVolumeGiB}.Seed(r.Sim)
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.PVs))
	dr := drLocation()
	dr.Spec.Config[model.ConfigVolumeInitializationRate] = "300"
	dr.Spec.Config[model.ConfigWaitForVolumeInitialization] = "true"
	watch := &initializationWatch{t: t, ec2: r.EC2(copyRegion), seen: map[string]bool{}}
	r.Core.Observer = watch
	restore, err := r.Core.Restore(t.Context(), harness.RestoreRequest{Name: "restore-initialized", Backup: res, Location: dr})
	if err != nil {
		t.Fatal(err)
	}
	if !restore.Succeeded() || len(restore.Operations) != len(r.PVs) {
		t.Fatalf("restore phase %s with %d operations; errors %v %v", restore.Restore.Status.Phase, len(restore.Operations), restore.ItemErrors, restore.OperationErrors)
	}
	if len(watch.seen) != len(r.PVs) {
		t.Errorf("%d operations seen completing, want %d", len(watch.seen), len(r.PVs))
	}
	for _, op := range restore.Operations {
		initializing := false
		for _, p := range op.History {
			if strings.Contains(p.Description, "initializing at 300 MiB/s (provisioned)") && !p.Completed && p.NCompleted < p.NTotal {
				initializing = true
			}
		}
		last := op.History[len(op.History)-1]
		if !initializing || !last.Completed || last.NCompleted != last.NTotal || !strings.Contains(last.Description, "fully initialized") {
			t.Errorf("operation %s: progress %+v, want an initializing phase at 300 MiB/s, then fully initialized", op.ID, op.History)
		}
	}
}

// initializationWatch checks, after every reconcile of a restore, that each operation that
// completed has a volume EC2 reports 100% initialized.
type initializationWatch struct {
	t    *testing.T
	ec2  *ec2.Client
	seen map[string]bool // operations seen completed
}

// Observe implements harness.Observer.
func (w *initializationWatch) Observe(s harness.Status) {
	if s.Kind != "Restore" {
		return
	}
	for _, op := range s.Operations {
		if op.Status.Phase != itemoperation.OperationPhaseCompleted || w.seen[op.ID] {
			continue
		}
		w.seen[op.ID] = true
		vop, err := model.ParseVolumeOperationID(op.ID)
		if err != nil {
			w.t.Errorf("operation %s: %v", op.ID, err)
			continue
		}
		out, err := w.ec2.DescribeVolumeStatus(context.Background(), &ec2.DescribeVolumeStatusInput{VolumeIds: []string{vop.VolumeID}})
		if err != nil || len(out.VolumeStatuses) != 1 || out.VolumeStatuses[0].InitializationStatusDetails == nil {
			w.t.Errorf("volume %s: status %+v, %v", vop.VolumeID, out, err)
			continue
		}
		if pct := aws.ToInt64(out.VolumeStatuses[0].InitializationStatusDetails.Progress); pct != 100 {
			w.t.Errorf("restore operation of volume %s completed at reconcile %d while EC2 reports it %d%% initialized", vop.VolumeID, s.Reconciles, pct)
		}
	}
}

// requireScheduledIn fails unless every zone and region on the PV (labels, node affinity, the
// in-tree volume ID) names the restored volume's AZ and region.
func requireScheduledIn(t *testing.T, pv *corev1api.PersistentVolume, v ec2sim.Volume) {
	t.Helper()
	if pv == nil {
		t.Errorf("volume %s: no restored PV", v.ID)
		return
	}
	want := map[string]string{
		"topology.kubernetes.io/zone":   v.AvailabilityZone,
		"topology.ebs.csi.aws.com/zone": v.AvailabilityZone,
		"topology.kubernetes.io/region": copyRegion,
	}
	for k, val := range pv.Labels {
		if w, ok := want[k]; ok && val != w {
			t.Errorf("%s: label %s=%s, want %s", pv.Name, k, val, w)
		}
	}
	if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
		for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if w, ok := want[e.Key]; ok && (len(e.Values) != 1 || e.Values[0] != w) {
					t.Errorf("%s: node affinity %s in %v, want %s", pv.Name, e.Key, e.Values, w)
				}
			}
		}
	}
	switch {
	case pv.Spec.AWSElasticBlockStore != nil:
		if id := pv.Spec.AWSElasticBlockStore.VolumeID; id != "aws://"+v.AvailabilityZone+"/"+v.ID {
			t.Errorf("%s: in-tree volume ID %s, want aws://%s/%s", pv.Name, id, v.AvailabilityZone, v.ID)
		}
	case pv.Spec.CSI != nil:
		if pv.Spec.CSI.VolumeHandle != v.ID {
			t.Errorf("%s: CSI volume handle %s, want %s", pv.Name, pv.Spec.CSI.VolumeHandle, v.ID)
		}
	}
}

func volumesByID(vols []ec2sim.Volume) map[string]ec2sim.Volume {
	out := map[string]ec2sim.Volume{}
	for _, v := range vols {
		out[v.ID] = v
	}
	return out
}

// A backup whose copies timed out (Velero's item-operation timeout) is PartiallyFailed and can
// be restored; in the copy region each volume's restore fails with an error naming the
// snapshot, the region and the copy that is still pending.
func TestRestoreBeforeCopyCompletedFailsClearly(t *testing.T) {
	cfg := rig.FastConfig(1)
	cfg.SnapshotDuration = ec2sim.Fixed(300 * time.Millisecond)
	cfg.CopyDuration = ec2sim.Fixed(time.Minute)
	r := newRig(t, cfg, 2)
	res := r.backup(location(copyRegion), 2*time.Second)
	if res.Backup.Status.Phase != velerov1api.BackupPhasePartiallyFailed {
		t.Fatalf("backup phase %s, want PartiallyFailed on the timeout", res.Backup.Status.Phase)
	}
	restore, err := r.Core.Restore(t.Context(), harness.RestoreRequest{Name: "restore-early", Backup: res, Location: drLocation()})
	if err != nil {
		t.Fatal(err)
	}
	if restore.Succeeded() || len(restore.ItemErrors) != len(r.PVs) {
		t.Fatalf("restore phase %s with item errors %v, want one error per PV", restore.Restore.Status.Phase, restore.ItemErrors)
	}
	errs := strings.Join(restore.ItemErrors, "\n")
	for _, snap := range res.Snapshots {
		for _, want := range []string{"snapshot " + snap.SnapshotID + " is not in " + copyRegion, "no completed copy", "is pending at"} {
			if !strings.Contains(errs, want) {
				t.Errorf("restore errors %q do not say %q", errs, want)
			}
		}
	}
	if n := len(r.Sim.Volumes(copyRegion)); n != 0 {
		t.Errorf("%d volumes created in %s by a failed restore", n, copyRegion)
	}
}

// A restore during which EC2 makes every volume and loses every CreateVolume answer restores
// every PV, each from its own volume, and leaves no volume it did not return.
func TestRestoreWithCreateVolumeAnswersLostLeaksNoVolume(t *testing.T) {
	r := newRig(t, rig.FastConfig(1), 4)
	res := r.backup(location(""), 0)
	requireCompleted(t, res, len(r.PVs))
	r.Sim.SetFaults(ec2sim.Faults{DropAfterEffectRate: 1, DropActions: []string{"CreateVolume"}})
	restore, err := r.Core.Restore(t.Context(), harness.RestoreRequest{Name: "restore-lost-answers", Backup: res, Location: location("")})
	if err != nil {
		t.Fatal(err)
	}
	if !restore.Succeeded() || len(restore.Volumes) != len(r.PVs) {
		t.Fatalf("restore phase %s with %d of %d PVs restored; errors %v %v", restore.Restore.Status.Phase,
			len(restore.Volumes), len(r.PVs), restore.ItemErrors, restore.OperationErrors)
	}
	returned := map[string]string{}
	for _, rv := range restore.Volumes {
		returned[rv.VolumeID] = rv.PV
	}
	made := 0
	for _, v := range r.Sim.Volumes(sourceRegion) {
		if v.SnapshotID == "" {
			continue // a backed-up volume
		}
		made++
		if _, ok := returned[v.ID]; !ok {
			t.Errorf("volume %s made from %s was returned for no PV", v.ID, v.SnapshotID)
		}
	}
	if made != len(r.PVs) || len(returned) != len(r.PVs) {
		t.Errorf("%d volumes made and %d distinct volumes returned, want %d each", made, len(returned), len(r.PVs))
	}
	creates := r.Sim.Stats().Calls[sourceRegion]["CreateVolume"]
	if creates["ok"] != 0 || creates[errInternal]+creates["ConnectionClosed"] < len(r.PVs) {
		t.Errorf("CreateVolume outcomes %v, want every answer lost", creates)
	}
}

// errInternal is the code of EC2's answer 500.
const errInternal = "InternalError"
