package check

import (
	"strings"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

// Locations of the upstream AWS plugin beside this plugin's: Velero adds a provider's only
// location (or its default) to every backup, and the upstream plugin then snapshots the in-tree
// and EBS CSI volumes in about every other backup, without copies (those to come, when the
// cluster has none yet); with several and no default, Velero fails the backups instead. Each row is one rule; every failing line names
// the locations and gives the move and the deletion, or the Helm values' change for a
// location Helm made.
func TestUpstreamLocationsBesideThisPlugins(t *testing.T) {
	const ours = location.DefaultProvider
	loc := func(name, provider string) *velerov1.VolumeSnapshotLocation {
		return &velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: name},
			Spec: velerov1.VolumeSnapshotLocationSpec{Provider: provider, Config: map[string]string{"region": "us-east-1"}}}
	}
	helmMade := loc("default", "aws")
	helmMade.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	ebsCSI := csiPV("pv-csi", "ebs.csi.aws.com", "topology.ebs.csi.aws.com/zone", "us-east-1a")
	inTree := inTreePV("pv-tree", "aws://us-east-1a/vol-0123456789abcdef1")
	autoMode := csiPV("pv-auto", "ebs.csi.eks.amazonaws.com", "topology.kubernetes.io/zone", "us-east-1a")
	moveDefault := `kubectl -n velero patch volumesnapshotlocation default --type merge -p '{"spec":{"provider":"velero-async.io/aws"}}'`
	type line struct {
		check  string
		status Status
		// detail and fix are texts the line must hold.
		detail, fix []string
	}
	tests := []struct {
		name  string
		objs  []client.Object
		kube  func(t *testing.T, objs ...client.Object) client.Reader
		lines []line
	}{
		{"no other provider's location: passes", []client.Object{deployment(), ebsCSI}, fakeKube,
			[]line{{"upstream AWS plugin", Pass, []string{"none of provider aws or velero.io/aws"}, nil}}},
		{"another cloud's location (velero.io/gcp): passes, naming it", []client.Object{deployment(), loc("gcp", "velero.io/gcp"), ebsCSI}, fakeKube,
			[]line{{"upstream AWS plugin", Pass, []string{"of other providers: gcp (velero.io/gcp)"}, nil}}},
		{"the upstream location velero install makes (provider aws): fails, naming it, the volumes it takes and the move", []client.Object{deployment(), loc("default", "aws"), ebsCSI, inTree, autoMode}, fakeKube,
			[]line{{"VolumeSnapshotLocation velero/default (provider aws)", Fail,
				[]string{"Velero adds it to every backup, whatever the backup names", "in about every other backup", "(2 of the cluster's 3 EBS PersistentVolumes)",
					"their operations fail after 12m when the location asks for copies", "naming this plugin's location on the backup does not help"},
				[]string{moveDefault, "kubectl -n velero delete volumesnapshotlocation default", "README, An existing Velero install"}}}},
		{"provider velero.io/aws, the same plugin: fails", []client.Object{deployment(), loc("snapshots", "velero.io/aws"), ebsCSI}, fakeKube,
			[]line{{"VolumeSnapshotLocation velero/snapshots (provider velero.io/aws)", Fail, []string{"Velero adds it to every backup"},
				[]string{"patch volumesnapshotlocation snapshots"}}}},
		{"one of aws and one of velero.io/aws: Velero adds each, two lines", []client.Object{deployment(), loc("default", "aws"), loc("snapshots", "velero.io/aws"), ebsCSI}, fakeKube,
			[]line{{"VolumeSnapshotLocation velero/default (provider aws)", Fail, []string{"Velero adds it to every backup"}, nil},
				{"VolumeSnapshotLocation velero/snapshots (provider velero.io/aws)", Fail, []string{"Velero adds it to every backup"}, nil}}},
		{"a location Helm made: the fix is the release's values", []client.Object{deployment(), helmMade, ebsCSI}, fakeKube,
			[]line{{"VolumeSnapshotLocation velero/default (provider aws)", Fail, []string{"Velero adds it to every backup"},
				[]string{"set provider: velero-async.io/aws on its entry in configuration.volumeSnapshotLocation", "keep snapshotsEnabled: true", "helm upgrade"}}}},
		{"the cluster has only EKS Auto Mode volumes, which the upstream plugin refuses: fails for those to come", []client.Object{deployment(), loc("default", "aws"), autoMode}, fakeKube,
			[]line{{"VolumeSnapshotLocation velero/default (provider aws)", Fail, []string{"(none of the cluster's 1 EBS PersistentVolume, all EKS Auto Mode's, but every one to come)"}, []string{moveDefault}}}},
		{"the cluster has no EBS volume yet: fails for those to come", []client.Object{deployment(), loc("default", "aws")}, fakeKube,
			[]line{{"VolumeSnapshotLocation velero/default (provider aws)", Fail, []string{"(the cluster has no EBS PersistentVolume yet, but every one to come)"}, []string{moveDefault}}}},
		{"the PersistentVolumes unreadable: fails all the same", []client.Object{deployment(), loc("default", "aws"), ebsCSI},
			func(t *testing.T, objs ...client.Object) client.Reader {
				return refusing{fakeKube(t, objs...), []string{"PersistentVolumeList"}}
			},
			[]line{{"VolumeSnapshotLocation velero/default (provider aws)", Fail, []string{"snapshots the in-tree and ebs.csi.aws.com volumes itself, without"}, []string{moveDefault}}}},
		{"several upstream locations and none the server's default: Velero fails the backups naming none", []client.Object{deployment(), loc("default", "aws"), loc("west", "aws"), ebsCSI}, fakeKube,
			[]line{{"VolumeSnapshotLocations velero/default, velero/west (provider aws)", Fail,
				[]string{"none is the server's default for aws", "provider aws has more than one possible volume snapshot location", "a backup that names one gets it beside this plugin's location"},
				[]string{moveDefault, "patch volumesnapshotlocation west", "delete volumesnapshotlocation default west", "taken through them"}}}},
		{"several upstream locations, one the server's default: Velero adds it to every backup", []client.Object{deployment("--default-volume-snapshot-locations=aws:west,velero-async.io/aws:ebs"), loc("default", "aws"), loc("west", "aws"), ebsCSI}, fakeKube,
			[]line{{"VolumeSnapshotLocations velero/default, velero/west (provider aws)", Fail, []string{"Velero adds west, the server's default for aws, to every backup that names none of them"}, nil}}},
		{"several upstream locations, the server's default none of them: Velero fails the backups naming none", []client.Object{deployment("--default-volume-snapshot-locations=aws:gone"), loc("default", "aws"), loc("west", "aws"), ebsCSI}, fakeKube,
			[]line{{"VolumeSnapshotLocations velero/default, velero/west (provider aws)", Fail, []string{"the server's default for aws is gone, which is not a VolumeSnapshotLocation in velero"}, nil}}},
		{"several upstream locations and the Deployment refused: fails, either way", []client.Object{deployment(), loc("default", "aws"), loc("west", "aws"), ebsCSI},
			func(t *testing.T, objs ...client.Object) client.Reader {
				return refusing{fakeKube(t, objs...), []string{"Deployment"}}
			},
			[]line{{"VolumeSnapshotLocations velero/default, velero/west (provider aws)", Fail, []string{"whether one is the server's default for aws is not known"}, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]client.Object{loc("ebs", ours)}, tt.objs...)
			c := &Checker{Kube: tt.kube(t, objs...), Namespace: "velero", Provider: ours, Resolver: location.New(location.WithReader(fakeKube(t)))}
			rep, err := c.Run(t.Context(), "none") // no location of the plugin checked: the cluster's lines only
			if err != nil {
				t.Fatal(err)
			}
			var sec *Section
			for i := range rep.Sections {
				if strings.HasPrefix(rep.Sections[i].Title, "Other providers' VolumeSnapshotLocations") {
					sec = &rep.Sections[i]
				}
			}
			if sec == nil || len(sec.Findings) != len(tt.lines) {
				t.Fatalf("other providers' section %+v, want %d lines", sec, len(tt.lines))
			}
			for i, want := range tt.lines {
				f := sec.Findings[i]
				if f.Check != want.check || f.Status != want.status {
					t.Errorf("%s: %s (%s), want %s: %s", f.Check, f.Status, f.Detail, want.check, want.status)
				}
				holds(t, f, want.detail, want.fix)
			}
		})
	}
}
