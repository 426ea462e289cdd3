package check

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/pv"
)

// cluster is what the check read of the cluster besides the locations: the EBS volumes of its
// PersistentVolumes, Velero's settings, its Schedules and Backups, and the names of the
// provider's locations. Each part may be unreadable; the checks that need it then say why.
type cluster struct {
	// volumes are the EBS volumes of the cluster's PVs; pvs, when set, why they are not known.
	volumes  []pv.Volume
	pvs      *unreadable
	settings settings
	// schedules are Velero's Schedules; scheduleProblem, when set, why they are not known.
	schedules       []velerov1.Schedule
	scheduleProblem *unreadable
	// backups are Velero's Backups; backupProblem, when set, why they are not known.
	backups       []velerov1.Backup
	backupProblem *unreadable
	// locations are the names of every VolumeSnapshotLocation of the provider, sorted.
	locations []string
	// install is the install identity the plugin tags snapshots with; installProblem, when
	// set, why it is not known.
	install        string
	installProblem *unreadable
}

// readCluster reads, through kube, the PVs, Velero's Deployment, Schedules and Backups in
// namespace, and the install identity.
func readCluster(ctx context.Context, kube client.Reader, namespace string) cluster {
	var cl cluster
	var pvs corev1.PersistentVolumeList
	if err := kube.List(ctx, &pvs); err != nil {
		cl.pvs = newUnreadable("the cluster's PersistentVolumes are not readable", "list on persistentvolumes (a ClusterRole)", err)
	} else {
		for i := range pvs.Items {
			if v, ok := ebsVolume(&pvs.Items[i]); ok {
				cl.volumes = append(cl.volumes, v)
			}
		}
	}
	cl.settings = readSettings(ctx, kube, namespace)
	var schedules velerov1.ScheduleList
	if err := kube.List(ctx, &schedules, client.InNamespace(namespace)); err != nil {
		cl.scheduleProblem = newUnreadable("Velero's Schedules are not readable", "list on schedules.velero.io in namespace "+namespace, err)
	} else {
		cl.schedules = schedules.Items
	}
	var backups velerov1.BackupList
	if err := kube.List(ctx, &backups, client.InNamespace(namespace)); err != nil {
		cl.backupProblem = newUnreadable("Velero's Backups are not readable", "list on backups.velero.io in namespace "+namespace, err)
	} else {
		cl.backups = backups.Items
	}
	install, err := location.ReadInstall(ctx, kube, namespace)
	if err != nil {
		cl.installProblem = newUnreadable("the install identity is not readable", "get on namespace kube-system", err)
	}
	cl.install = install
	return cl
}

// ebsVolume parses a PV as the plugin does; ok is false for anything but an EBS volume.
func ebsVolume(p *corev1.PersistentVolume) (pv.Volume, bool) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return pv.Volume{}, false
	}
	v, kind, err := pv.Parse(&unstructured.Unstructured{Object: m})
	return v, err == nil && kind == pv.EBS
}

// volumesIn are the cluster's EBS volumes in region: those whose zone or region says so.
func (cl cluster) volumesIn(region string) []string {
	var ids []string
	for _, v := range cl.volumes {
		if v.Region == region {
			ids = append(ids, v.VolumeID)
		}
	}
	return ids
}
