package check

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

// PersistentVolumes of each kind the check meets.

func inTreePV(name, volumeID string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: volumeID}}}}
}

// csiPV is a volume of driver whose zone is in its node affinity under key (none when key is "").
func csiPV(name, driver, key, zone string) *corev1.PersistentVolume {
	p := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-0123456789abcdef0"}}}}
	if key != "" {
		p.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}
	}
	return p
}

// labelledPV is an EBS CSI volume whose zone is only in its label key.
func labelledPV(name, key, zone string) *corev1.PersistentVolume {
	p := csiPV(name, "ebs.csi.aws.com", "", "")
	p.Labels = map[string]string{key: zone}
	return p
}

func nfsPV(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/export"}}}}
}

func schedule(name string, locations ...string) *velerov1.Schedule {
	s := &velerov1.Schedule{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: name}}
	s.Spec.Template.VolumeSnapshotLocations = locations
	return s
}

// refusing is a cluster whose API refuses, as RBAC does, every read into the Go types named
// ("PersistentVolumeList", "Deployment").
type refusing struct {
	client.Reader
	types []string
}

func (r refusing) refused(obj any) error {
	name := reflect.TypeOf(obj).Elem().Name()
	if slices.Contains(r.types, name) {
		return apierrors.NewForbidden(schema.GroupResource{Resource: strings.ToLower(strings.TrimSuffix(name, "List")) + "s"}, "",
			errors.New("the check's user is not granted this"))
	}
	return nil
}

func (r refusing) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.refused(obj); err != nil {
		return err
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r refusing) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.refused(list); err != nil {
		return err
	}
	return r.Reader.List(ctx, list, opts...)
}

// The location's region against the cluster's EBS volumes: every way a PV says its zone, the
// PVs that are not EBS, and the locations that only restore.
func TestEBSVolumesInTheLocationsRegion(t *testing.T) {
	srv := startSim(t)
	const (
		vsl1  = "ebs"
		other = "ebs-west"
	)
	at := func(region string) *velerov1.VolumeSnapshotLocation {
		return vsl(vsl1, location.DefaultProvider, map[string]string{"region": region}, "")
	}
	otherLoc := vsl(other, location.DefaultProvider, map[string]string{"region": "us-west-2"}, "")
	tests := []struct {
		name   string
		region string
		objs   []client.Object
		status Status
		// detail and fix are texts the line must hold.
		detail, fix []string
	}{
		{"in-tree volumes in another region: fails, naming them and the region to set", "us-east-2",
			[]client.Object{inTreePV("pv-a", "aws://us-east-1a/vol-0123456789abcdef0"), inTreePV("pv-b", "aws://us-east-1b/vol-0123456789abcdef1")},
			Fail, []string{"none of the cluster's 2 EBS PersistentVolumes is in us-east-2", "pv-a in us-east-1a, pv-b in us-east-1b", "it is the only location of velero-async.io/aws"},
			[]string{"set region: us-east-1", `kubectl -n velero patch volumesnapshotlocation ebs --type merge -p '{"spec":{"config":{"region":"us-east-1"}}}'`}},
		{"EBS CSI volumes (topology.ebs.csi.aws.com/zone) in another region: fails", "us-east-2",
			[]client.Object{csiPV("pv-csi", "ebs.csi.aws.com", "topology.ebs.csi.aws.com/zone", "eu-west-1c")},
			Fail, []string{"pv-csi in eu-west-1c"}, []string{"set region: eu-west-1"}},
		{"EKS Auto Mode volumes (topology.ebs.csi.eks.amazonaws.com/zone) in another region: fails", "us-east-2",
			[]client.Object{csiPV("pv-auto", "ebs.csi.eks.amazonaws.com", "topology.ebs.csi.eks.amazonaws.com/zone", "us-east-1d")},
			Fail, []string{"pv-auto in us-east-1d"}, []string{"set region: us-east-1"}},
		{"a zone in node affinity on topology.kubernetes.io/zone: fails", "us-east-2",
			[]client.Object{csiPV("pv-topo", "ebs.csi.aws.com", "topology.kubernetes.io/zone", "us-east-1a")},
			Fail, []string{"pv-topo in us-east-1a"}, []string{"set region: us-east-1"}},
		{"a zone in the label topology.kubernetes.io/zone: fails", "us-east-2",
			[]client.Object{labelledPV("pv-label", "topology.kubernetes.io/zone", "us-east-1a")},
			Fail, []string{"pv-label in us-east-1a"}, []string{"set region: us-east-1"}},
		{"a zone in the label failure-domain.beta.kubernetes.io/zone: fails", "us-east-2",
			[]client.Object{labelledPV("pv-beta", "failure-domain.beta.kubernetes.io/zone", "us-east-1a")},
			Fail, []string{"pv-beta in us-east-1a"}, []string{"set region: us-east-1"}},
		{"a Local Zone volume (us-west-2-lax-1a) is in us-west-2: passes", "us-west-2",
			[]client.Object{inTreePV("pv-lax", "aws://us-west-2-lax-1a/vol-0123456789abcdef0")},
			Pass, []string{"1 of the cluster's 1 EBS PersistentVolume"}, nil},
		{"a Local Zone volume elsewhere: fails, naming its parent region", "us-east-2",
			[]client.Object{inTreePV("pv-lax", "aws://us-west-2-lax-1a/vol-0123456789abcdef0")},
			Fail, []string{"pv-lax in us-west-2-lax-1a"}, []string{"set region: us-west-2"}},
		{"a Wavelength Zone volume (us-east-1-wl1-bos-wlz-1) is in us-east-1: passes", "us-east-1",
			[]client.Object{inTreePV("pv-wl", "aws://us-east-1-wl1-bos-wlz-1/vol-0123456789abcdef0")},
			Pass, []string{"1 of the cluster's 1 EBS PersistentVolume"}, nil},
		{"an Outpost volume carries its parent region's zone: passes", "us-west-2",
			[]client.Object{csiPV("pv-outpost", "ebs.csi.aws.com", "topology.ebs.csi.aws.com/zone", "us-west-2a")},
			Pass, []string{"1 of the cluster's 1 EBS PersistentVolume"}, nil},
		{"one volume in the region among others: passes, naming the others", "us-east-2",
			[]client.Object{inTreePV("pv-a", "aws://us-east-1a/vol-0123456789abcdef0"), inTreePV("pv-b", "aws://us-east-2a/vol-0123456789abcdef1")},
			Pass, []string{"1 of the cluster's 2 EBS PersistentVolumes; elsewhere: pv-a in us-east-1a"}, nil},
		{"volumes in the region and one with no zone: passes, naming the PV whose zone it could not read", "us-east-2",
			[]client.Object{inTreePV("pv-b", "aws://us-east-2a/vol-0123456789abcdef1"), csiPV("pv-nozone", "ebs.csi.aws.com", "", "")},
			Pass, []string{"1 of the cluster's 2 EBS PersistentVolumes; 1 with no zone the check can read", "pv-nozone"}, nil},
		{"only volumes of other provisioners (NFS, another CSI driver): passes, nothing to back up", "us-east-2",
			[]client.Object{nfsPV("pv-nfs"), csiPV("pv-efs", "efs.csi.aws.com", "topology.kubernetes.io/zone", "us-east-1a")},
			Pass, []string{"the cluster has no EBS PersistentVolume"}, nil},
		{"no PersistentVolume at all: passes", "us-east-2", nil, Pass, []string{"the cluster has no EBS PersistentVolume"}, nil},
		{"EBS volumes with no zone the check can read: not checked", "us-east-2",
			[]client.Object{csiPV("pv-nozone", "ebs.csi.aws.com", "", "")},
			NotChecked, []string{"none of the cluster's 1 EBS PersistentVolume has a zone the check can read", "pv-nozone"}, nil},
		{"some volumes elsewhere and some with no zone: a warning", "us-east-2",
			[]client.Object{inTreePV("pv-a", "aws://us-east-1a/vol-0123456789abcdef0"), csiPV("pv-nozone", "ebs.csi.aws.com", "", "")},
			Warn, []string{"pv-a in us-east-1a", "1 with no zone the check can read: pv-nozone"}, []string{"set region: us-east-1"}},
		{"a recovery cluster's location (not the default, no Schedule names it): a warning", "us-east-2",
			[]client.Object{otherLoc, deployment("--default-volume-snapshot-locations=velero-async.io/aws:" + other), inTreePV("pv-a", "aws://us-east-1a/vol-0123456789abcdef0")},
			Warn, []string{"pv-a in us-east-1a", "it is not Velero's default for velero-async.io/aws and no Schedule names it"}, []string{"if backups are to go through it, set region: us-east-1"}},
		{"several locations and Velero's Deployment not found: a warning that says so", "us-east-2",
			[]client.Object{otherLoc, inTreePV("pv-a", "aws://us-east-1a/vol-0123456789abcdef0")},
			Warn, []string{"whether it is Velero's default for velero-async.io/aws is not known"}, []string{"if backups are to go through it, set region: us-east-1"}},
		{"Velero's default location among several: fails", "us-east-2",
			[]client.Object{otherLoc, deployment("--default-volume-snapshot-locations=velero-async.io/aws:" + vsl1), inTreePV("pv-a", "aws://us-east-1a/vol-0123456789abcdef0")},
			Fail, []string{"it is Velero's default for velero-async.io/aws"}, []string{"set region: us-east-1"}},
		{"a location a Schedule names among several: fails", "us-east-2",
			[]client.Object{otherLoc, schedule("nightly", vsl1), inTreePV("pv-a", "aws://us-east-1a/vol-0123456789abcdef0")},
			Fail, []string{"Schedule nightly names it"}, []string{"set region: us-east-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]client.Object{at(tt.region)}, tt.objs...)
			rep, err := checker(t, srv.URL, objs...).Run(t.Context(), vsl1)
			if err != nil {
				t.Fatal(err)
			}
			f := findingOf(t, rep, "EBS volumes in "+tt.region)
			if f.Status != tt.status {
				t.Errorf("%s: %s (%s), want %s", f.Check, f.Status, f.Detail, tt.status)
			}
			holds(t, f, tt.detail, tt.fix)
		})
	}
}

// A location among several, with Velero's Schedules unreadable: the region check says it does
// not know whether a Schedule names the location, never that none does.
func TestEBSVolumesWithSchedulesUnreadable(t *testing.T) {
	srv := startSim(t)
	objs := []client.Object{
		vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-2"}, ""),
		vsl("ebs-west", location.DefaultProvider, map[string]string{"region": "us-west-2"}, ""),
		deployment(), inTreePV("pv-a", "aws://us-east-1a/vol-0123456789abcdef0"),
	}
	c := checker(t, srv.URL, objs...)
	c.Kube = refusing{c.Kube, []string{"ScheduleList"}}
	rep, err := c.Run(t.Context(), "ebs")
	if err != nil {
		t.Fatal(err)
	}
	f := findingOf(t, rep, "EBS volumes in us-east-2")
	holds(t, f, []string{"whether a Schedule names it is not known", "forbidden"}, []string{"set region: us-east-1"})
	if strings.Contains(f.Detail, "no Schedule names it") {
		t.Errorf("detail %q claims what was not read", f.Detail)
	}
}

// holds checks that the finding's detail holds each of detail, and its fix each of fix.
func holds(t *testing.T, f Finding, detail, fix []string) {
	t.Helper()
	for _, d := range detail {
		if !strings.Contains(f.Detail, d) {
			t.Errorf("detail %q, want it to hold %q", f.Detail, d)
		}
	}
	for _, x := range fix {
		if !strings.Contains(f.Fix, x) {
			t.Errorf("fix %q, want it to hold %q", f.Fix, x)
		}
	}
}

// findingOf is the report's one finding named check.
func findingOf(t *testing.T, rep Report, check string) Finding {
	t.Helper()
	var found []Finding
	for _, s := range rep.Sections {
		for _, f := range s.Findings {
			if f.Check == check {
				found = append(found, f)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d findings %q, want one: %+v", len(found), check, rep.Sections)
	}
	return found[0]
}
