package check

import (
	"context"
	"slices"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
}

// unreadable is something the check could not read from the Kubernetes API.
type unreadable struct {
	// problem says what and why, as a clause: "the cluster's PersistentVolumes are not
	// readable (…)".
	problem string
	// grant is the permission that would let the check read it; refused, whether the API
	// refused the read for want of it (the check is then incomplete, not just unable).
	grant   string
	refused bool
}

// newUnreadable records that what could not be read (err) and what grant would let it.
func newUnreadable(what, grant string, err error) *unreadable {
	return &unreadable{problem: what + " (" + err.Error() + ")", grant: grant,
		refused: apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)}
}

// finding is the line of a check that needed what was unreadable: incomplete, with the grant
// as its fix, when the API refused the read; else not checked. detail, when set, says what
// the check could still tell.
func (u *unreadable) finding(check, detail string) Finding {
	why := u.problem
	if detail != "" {
		why = detail + "; " + why
	}
	if u.refused {
		return incomplete(check, why, "grant "+u.grant+" to whoever runs the check (README, Before the first backup)")
	}
	return notChecked(check, why)
}

// String is the problem, for details that mention it.
func (u *unreadable) String() string { return u.problem }

// readCluster reads the PVs, Velero's Deployment, the Schedules and the Backups.
func (c *Checker) readCluster(ctx context.Context) cluster {
	var cl cluster
	var pvs corev1.PersistentVolumeList
	if err := c.Kube.List(ctx, &pvs); err != nil {
		cl.pvs = newUnreadable("the cluster's PersistentVolumes are not readable", "list on persistentvolumes (a ClusterRole)", err)
	} else {
		for i := range pvs.Items {
			if v, ok := ebsVolume(&pvs.Items[i]); ok {
				cl.volumes = append(cl.volumes, v)
			}
		}
	}
	cl.settings = c.readSettings(ctx)
	var schedules velerov1.ScheduleList
	if err := c.Kube.List(ctx, &schedules, client.InNamespace(c.Namespace)); err != nil {
		cl.scheduleProblem = newUnreadable("Velero's Schedules are not readable", "list on schedules.velero.io in namespace "+c.Namespace, err)
	} else {
		cl.schedules = schedules.Items
	}
	var backups velerov1.BackupList
	if err := c.Kube.List(ctx, &backups, client.InNamespace(c.Namespace)); err != nil {
		cl.backupProblem = newUnreadable("Velero's Backups are not readable", "list on backups.velero.io in namespace "+c.Namespace, err)
	} else {
		cl.backups = backups.Items
	}
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

// joinUnreadable is the several things unreadable as one; nil when none is.
func joinUnreadable(us ...*unreadable) *unreadable {
	var out *unreadable
	for _, u := range us {
		switch {
		case u == nil:
		case out == nil:
			cp := *u
			out = &cp
		default:
			out.problem += "; " + u.problem
			out.grant = strings.Join(slices.DeleteFunc([]string{out.grant, u.grant}, func(g string) bool { return g == "" }), " and ")
			out.refused = out.refused || u.refused
		}
	}
	return out
}
