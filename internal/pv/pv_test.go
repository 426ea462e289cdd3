package pv

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	vol8  = "vol-0123abcd"
	vol17 = "vol-0123456789abcdef0"
	volB  = "vol-0fedcba9876543210"
)

// obj builds an unstructured object from JSON so tests use the shapes a decoder produces.
func obj(t testing.TB, js string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", js, err)
	}
	return &unstructured.Unstructured{Object: m}
}

func inTree(volumeID, labels, affinity string) string {
	return pvJSON(labels, `"awsElasticBlockStore": {"volumeID": "`+volumeID+`", "fsType": "ext4"}`, affinity)
}

func csi(driver, handle, labels, affinity string) string {
	return pvJSON(labels, `"csi": {"driver": "`+driver+`", "volumeHandle": "`+handle+`", "fsType": "ext4"}`, affinity)
}

func pvJSON(labels, source, affinity string) string {
	if labels == "" {
		labels = "{}"
	}
	spec := `"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]`
	if source != "" {
		spec += ", " + source
	}
	if affinity != "" {
		spec += `, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [` + affinity + `]}]}}`
	}
	return `{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1", "labels": ` + labels + `}, "spec": {` + spec + `}}`
}

func expr(key, value string) string {
	return `{"key": "` + key + `", "operator": "In", "values": ["` + value + `"]}`
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		pv      string
		want    Volume
		notEBS  bool
		wantErr string // substring; the PV name is always checked too
	}{
		{
			name: "in-tree with AZ prefix",
			pv:   inTree("aws://us-east-1a/"+vol17, `{"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1"}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1a", Region: "us-east-1"},
		},
		{
			name: "in-tree AZ prefix wins over labels",
			pv:   inTree("aws://us-east-1b/"+vol17, `{"topology.kubernetes.io/zone": "us-east-1a"}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1b", Region: "us-east-1"},
		},
		{
			name: "in-tree bare ID, short form, zone label",
			pv:   inTree(vol8, `{"topology.kubernetes.io/zone": "eu-west-1c"}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol8, AvailabilityZone: "eu-west-1c", Region: "eu-west-1"},
		},
		{
			name: "in-tree empty AZ in prefix",
			pv:   inTree("aws:///"+vol17, "", ""),
			want: Volume{Name: "pv-1", VolumeID: vol17},
		},
		{
			name: "in-tree bare ID, no labels",
			pv:   inTree(vol17, "", ""),
			want: Volume{Name: "pv-1", VolumeID: vol17},
		},
		{
			name: "deprecated labels",
			pv:   inTree(vol17, `{"failure-domain.beta.kubernetes.io/zone": "us-west-2b", "failure-domain.beta.kubernetes.io/region": "us-west-2"}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-west-2b", Region: "us-west-2"},
		},
		{
			name: "GA labels win over deprecated",
			pv: inTree(vol17, `{"failure-domain.beta.kubernetes.io/zone": "us-west-2b", "failure-domain.beta.kubernetes.io/region": "us-west-2",
				"topology.kubernetes.io/zone": "us-east-2a", "topology.kubernetes.io/region": "us-east-2"}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-2a", Region: "us-east-2"},
		},
		{
			name: "region label wins over derived region",
			pv:   inTree("aws://us-east-1a/"+vol17, `{"topology.kubernetes.io/region": "us-west-2"}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1a", Region: "us-west-2"},
		},
		{
			name: "malformed region label ignored",
			pv:   inTree("aws://us-east-1a/"+vol17, `{"topology.kubernetes.io/region": "not a region"}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1a", Region: "us-east-1"},
		},
		{
			name: "multi-zone label ignored",
			pv:   inTree(vol17, `{"topology.kubernetes.io/zone": "us-east-1a__us-east-1b"}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol17},
		},
		{
			name: "non-string label values ignored",
			pv:   inTree(vol17, `{"topology.kubernetes.io/zone": 7, "topology.kubernetes.io/region": null}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol17},
		},
		{
			name: "CSI with node affinity on the driver key",
			pv:   csi(CSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-east-1c")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1c", Region: "us-east-1", CSI: true},
		},
		{
			name: "CSI with node affinity on topology.kubernetes.io/zone",
			pv:   csi(CSIDriver, vol17, "", expr("topology.kubernetes.io/zone", "ap-southeast-1b")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "ap-southeast-1b", Region: "ap-southeast-1", CSI: true},
		},
		{
			name: "CSI with node affinity on the deprecated zone key",
			pv:   csi(CSIDriver, vol17, "", expr("failure-domain.beta.kubernetes.io/zone", "cn-north-1a")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "cn-north-1a", Region: "cn-north-1", CSI: true},
		},
		{
			name: "CSI affinity: region key does not set the zone, other keys ignored",
			pv: csi(CSIDriver, vol17, "", expr("topology.kubernetes.io/region", "us-east-1")+`, `+expr("kubernetes.io/hostname", "node-1")+
				`, {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["us-east-1a"]}`),
			want: Volume{Name: "pv-1", VolumeID: vol17, CSI: true},
		},
		{
			name: "CSI affinity with several zones is ambiguous",
			pv:   csi(CSIDriver, vol17, "", `{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a", "us-east-1b"]}`),
			want: Volume{Name: "pv-1", VolumeID: vol17, CSI: true},
		},
		{
			name: "CSI labels win over affinity",
			pv:   csi(CSIDriver, vol17, `{"topology.kubernetes.io/zone": "us-east-1a"}`, expr("topology.ebs.csi.aws.com/zone", "us-east-1c")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1a", Region: "us-east-1", CSI: true},
		},
		{
			name: "CSI without zone information",
			pv:   csi(CSIDriver, vol8, "", ""),
			want: Volume{Name: "pv-1", VolumeID: vol8, CSI: true},
		},
		{
			name: "Local Zone",
			pv:   csi(CSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-west-2-lax-1a")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-west-2-lax-1a", Region: "us-west-2", CSI: true},
		},
		{
			name: "Wavelength Zone",
			pv:   inTree("aws://us-east-1-wl1-bos-wlz-1/"+vol17, "", ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1-wl1-bos-wlz-1", Region: "us-east-1"},
		},
		{
			name: "GovCloud",
			pv:   inTree("aws://us-gov-west-1a/"+vol17, "", ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-gov-west-1a", Region: "us-gov-west-1"},
		},
		{
			name: "China",
			pv:   inTree(vol17, `{"topology.kubernetes.io/zone": "cn-northwest-1b", "topology.kubernetes.io/region": "cn-northwest-1"}`, ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "cn-northwest-1b", Region: "cn-northwest-1"},
		},
		{
			name: "unrecognised zone kept, no region",
			pv:   inTree("aws://zone-x/"+vol17, "", ""),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "zone-x"},
		},
		{name: "other CSI driver", pv: csi("efs.csi.aws.com", "fs-12345678", "", ""), notEBS: true},
		{name: "CSI without driver", pv: pvJSON("", `"csi": {"volumeHandle": "`+vol17+`"}`, ""), notEBS: true},
		{name: "NFS", pv: pvJSON("", `"nfs": {"server": "nfs.example.com", "path": "/exports"}`, ""), notEBS: true},
		{name: "hostPath", pv: pvJSON("", `"hostPath": {"path": "/data"}`, ""), notEBS: true},
		{name: "no source", pv: pvJSON("", "", ""), notEBS: true},
		{name: "no spec", pv: `{"metadata": {"name": "pv-1"}}`, notEBS: true},
		{name: "empty object", pv: `{}`, notEBS: true},
		{name: "null awsElasticBlockStore", pv: pvJSON("", `"awsElasticBlockStore": null`, ""), notEBS: true},
		{name: "spec of the wrong type", pv: `{"metadata": {"name": "pv-1"}, "spec": "x"}`, notEBS: true},
		{name: "in-tree AZ without ID", pv: inTree("aws://us-east-1a/", "", ""), wantErr: `"aws://us-east-1a/"`},
		{name: "in-tree uppercase hex", pv: inTree("vol-XYZ", "", ""), wantErr: `"vol-XYZ"`},
		{name: "in-tree vol- only", pv: inTree("vol-", "", ""), wantErr: `"vol-"`},
		{name: "in-tree wrong length", pv: inTree("vol-0123456789", "", ""), wantErr: `"vol-0123456789"`},
		{name: "in-tree snapshot ID", pv: inTree("snap-0123456789abcdef0", "", ""), wantErr: `"snap-0123456789abcdef0"`},
		{name: "in-tree prefix without slash", pv: inTree("aws://"+vol17, "", ""), wantErr: `"aws://` + vol17 + `"`},
		{name: "in-tree extra path", pv: inTree("aws://us-east-1a/x/"+vol17, "", ""), wantErr: `"aws://us-east-1a/x/` + vol17 + `"`},
		{name: "in-tree bad AZ", pv: inTree("aws://US EAST/"+vol17, "", ""), wantErr: `"aws://US EAST/` + vol17 + `"`},
		{name: "in-tree empty ID", pv: inTree("", "", ""), wantErr: "missing"},
		{name: "in-tree no volumeID", pv: pvJSON("", `"awsElasticBlockStore": {"fsType": "ext4"}`, ""), wantErr: "missing"},
		{name: "in-tree numeric volumeID", pv: pvJSON("", `"awsElasticBlockStore": {"volumeID": 12}`, ""), wantErr: "12"},
		{name: "in-tree source not an object", pv: pvJSON("", `"awsElasticBlockStore": "vol-0123abcd"`, ""), wantErr: "awsElasticBlockStore"},
		{name: "CSI malformed handle", pv: csi(CSIDriver, "vol-XYZ", "", ""), wantErr: `"vol-XYZ"`},
		{name: "CSI empty handle", pv: csi(CSIDriver, "", "", ""), wantErr: "missing"},
		{name: "CSI handle of the wrong type", pv: pvJSON("", `"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": ["x"]}`, ""), wantErr: "volumeHandle"},
		{
			name:    "both in-tree and CSI",
			pv:      pvJSON("", `"awsElasticBlockStore": {"volumeID": "`+vol17+`"}, "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol17+`"}`, ""),
			wantErr: "both",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Parse(obj(t, tc.pv))
			switch {
			case tc.wantErr != "":
				if err == nil {
					t.Fatalf("Parse = %+v, %v, nil; want an error containing %s", got, ok, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"pv-1"`) {
					t.Errorf("error %q should name the PV and contain %s", err, tc.wantErr)
				}
				if ok {
					t.Error("ok = true with an error")
				}
			case err != nil:
				t.Fatalf("Parse: %v", err)
			case tc.notEBS:
				if ok || got != (Volume{}) {
					t.Errorf("Parse = %+v, %v; want not EBS", got, ok)
				}
			default:
				if !ok || got != tc.want {
					t.Errorf("Parse = %+v, %v; want %+v, true", got, ok, tc.want)
				}
			}
		})
	}
}

func TestParseOddInputs(t *testing.T) {
	var nilPtr *unstructured.Unstructured
	for name, pv := range map[string]runtime.Unstructured{
		"nil interface":  nil,
		"nil pointer":    nilPtr,
		"nil object":     &unstructured.Unstructured{},
		"typed maps":     &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]string{"topology.kubernetes.io/zone": "us-east-1a"}}, "spec": map[string]interface{}{"csi": map[string]interface{}{"driver": CSIDriver, "volumeHandle": vol8}}}},
		"odd affinity":   obj(t, pvJSON("", `"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}`, `null, 3, {"key": 4}, {"key": "topology.kubernetes.io/zone", "operator": "In", "values": "us-east-1a"}, {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [1]}`)),
		"nil affinity":   obj(t, `{"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}, "nodeAffinity": null}}`),
		"nil required":   obj(t, `{"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}, "nodeAffinity": {"required": null}}}`),
		"terms not list": obj(t, `{"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}, "nodeAffinity": {"required": {"nodeSelectorTerms": {}}}}}`),
		"metadata wrong": obj(t, `{"metadata": [], "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}}}`),
	} {
		t.Run(name, func(t *testing.T) {
			v, ok, err := Parse(pv)
			t.Logf("Parse = %+v, %v, %v", v, ok, err)
			if ok {
				if _, err := SetVolume(pv, volB, "us-west-2a"); err != nil {
					t.Logf("SetVolume: %v", err)
				}
			}
		})
	}
	v, ok, err := Parse(&unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]string{"topology.kubernetes.io/zone": "us-east-1a"}}, "spec": map[string]interface{}{"csi": map[string]interface{}{"driver": CSIDriver, "volumeHandle": vol8}}}})
	if err != nil || !ok || v.AvailabilityZone != "us-east-1a" || v.Region != "us-east-1" {
		t.Errorf("typed label map: Parse = %+v, %v, %v", v, ok, err)
	}
	if _, _, err := Parse(nil); err == nil {
		t.Error("Parse(nil) should fail")
	}
}

// TestParseTyped checks Parse on PVs converted from the typed API, as Velero hands them over.
func TestParseTyped(t *testing.T) {
	typed := &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-123"},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: CSIDriver, VolumeHandle: vol17}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.ebs.csi.aws.com/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-central-1b"}}},
			}}}},
		},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	got, ok, err := Parse(u)
	want := Volume{Name: "pvc-123", VolumeID: vol17, AvailabilityZone: "eu-central-1b", Region: "eu-central-1", CSI: true}
	if err != nil || !ok || got != want {
		t.Fatalf("Parse = %+v, %v, %v; want %+v", got, ok, err, want)
	}

	out, err := SetVolume(u, volB, "eu-west-1a")
	if err != nil {
		t.Fatal(err)
	}
	var back corev1.PersistentVolume
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out.UnstructuredContent(), &back); err != nil {
		t.Fatalf("result does not convert back: %v", err)
	}
	if back.Spec.CSI.VolumeHandle != volB ||
		!reflect.DeepEqual(back.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values, []string{"eu-west-1a"}) ||
		back.Labels["topology.kubernetes.io/zone"] != "eu-west-1a" || back.Labels["topology.kubernetes.io/region"] != "eu-west-1" {
		t.Errorf("converted result: %+v", back)
	}
}

func TestSetVolume(t *testing.T) {
	tests := []struct {
		name    string
		pv      string
		id, az  string
		want    string // the whole expected PV
		wantErr string
	}{
		{
			name: "in-tree same AZ changes only the ID",
			pv:   inTree("aws://us-east-1a/"+vol17, `{"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1"}`, ""),
			id:   volB, az: "us-east-1a",
			want: inTree("aws://us-east-1a/"+volB, `{"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1"}`, ""),
		},
		{
			name: "in-tree bare ID, same AZ stays bare",
			pv:   inTree(vol17, `{"failure-domain.beta.kubernetes.io/zone": "us-east-1a"}`, ""),
			id:   vol8, az: "us-east-1a",
			want: inTree(vol8, `{"failure-domain.beta.kubernetes.io/zone": "us-east-1a"}`, ""),
		},
		{
			name: "in-tree bare ID, empty AZ keeps everything",
			pv:   inTree(vol17, `{"topology.kubernetes.io/zone": "us-east-1a"}`, ""),
			id:   volB, az: "",
			want: inTree(volB, `{"topology.kubernetes.io/zone": "us-east-1a"}`, ""),
		},
		{
			name: "in-tree prefixed ID, empty AZ keeps the prefix",
			pv:   inTree("aws://us-east-1a/"+vol17, "", ""),
			id:   volB, az: "",
			want: inTree("aws://us-east-1a/"+volB, "", ""),
		},
		{
			name: "in-tree bare ID, new AZ gets a prefix and labels",
			pv:   inTree(vol17, "", ""),
			id:   volB, az: "us-east-1b",
			want: inTree("aws://us-east-1b/"+volB, `{"topology.kubernetes.io/zone": "us-east-1b", "topology.kubernetes.io/region": "us-east-1"}`, ""),
		},
		{
			name: "in-tree empty AZ prefix, same (unknown) AZ keeps the form",
			pv:   inTree("aws:///"+vol17, "", ""),
			id:   volB, az: "",
			want: inTree("aws:///"+volB, "", ""),
		},
		{
			name: "in-tree other AZ in the same region",
			pv:   inTree("aws://us-east-1a/"+vol17, `{"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1", "app": "db"}`, ""),
			id:   volB, az: "us-east-1c",
			want: inTree("aws://us-east-1c/"+volB, `{"topology.kubernetes.io/zone": "us-east-1c", "topology.kubernetes.io/region": "us-east-1", "app": "db"}`, ""),
		},
		{
			name: "in-tree cross-region with deprecated labels and affinity",
			pv: inTree("aws://us-east-1a/"+vol17,
				`{"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1",
				  "failure-domain.beta.kubernetes.io/zone": "us-east-1a", "failure-domain.beta.kubernetes.io/region": "us-east-1"}`,
				expr("failure-domain.beta.kubernetes.io/zone", "us-east-1a")+", "+expr("failure-domain.beta.kubernetes.io/region", "us-east-1")),
			id: volB, az: "eu-west-1b",
			want: inTree("aws://eu-west-1b/"+volB,
				`{"topology.kubernetes.io/zone": "eu-west-1b", "topology.kubernetes.io/region": "eu-west-1",
				  "failure-domain.beta.kubernetes.io/zone": "eu-west-1b", "failure-domain.beta.kubernetes.io/region": "eu-west-1"}`,
				expr("failure-domain.beta.kubernetes.io/zone", "eu-west-1b")+", "+expr("failure-domain.beta.kubernetes.io/region", "eu-west-1")),
		},
		{
			name: "deprecated labels are never added",
			pv:   inTree("aws://us-east-1a/"+vol17, `{"failure-domain.beta.kubernetes.io/zone": "us-east-1a"}`, ""),
			id:   volB, az: "us-west-2a",
			want: inTree("aws://us-west-2a/"+volB, `{"failure-domain.beta.kubernetes.io/zone": "us-west-2a", "topology.kubernetes.io/zone": "us-west-2a", "topology.kubernetes.io/region": "us-west-2"}`, ""),
		},
		{
			name: "CSI same AZ changes only the handle",
			pv:   csi(CSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-east-1a")),
			id:   volB, az: "us-east-1a",
			want: csi(CSIDriver, volB, "", expr("topology.ebs.csi.aws.com/zone", "us-east-1a")),
		},
		{
			name: "CSI cross-region rewrites every zone and region key",
			pv: csi(CSIDriver, vol17, `{"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1"}`,
				expr("topology.ebs.csi.aws.com/zone", "us-east-1a")+", "+expr("topology.kubernetes.io/zone", "us-east-1a")+", "+
					expr("topology.kubernetes.io/region", "us-east-1")+", "+expr("kubernetes.io/hostname", "node-1")+", "+
					`{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["us-east-1d"]}`),
			id: volB, az: "us-gov-east-1b",
			want: csi(CSIDriver, volB, `{"topology.kubernetes.io/zone": "us-gov-east-1b", "topology.kubernetes.io/region": "us-gov-east-1"}`,
				expr("topology.ebs.csi.aws.com/zone", "us-gov-east-1b")+", "+expr("topology.kubernetes.io/zone", "us-gov-east-1b")+", "+
					expr("topology.kubernetes.io/region", "us-gov-east-1")+", "+expr("kubernetes.io/hostname", "node-1")+", "+
					`{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["us-east-1d"]}`),
		},
		{
			name: "CSI multi-zone affinity collapses to the new AZ",
			pv:   csi(CSIDriver, vol17, "", `{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a", "us-east-1b"]}`),
			id:   volB, az: "cn-north-1a",
			want: csi(CSIDriver, volB, `{"topology.kubernetes.io/zone": "cn-north-1a", "topology.kubernetes.io/region": "cn-north-1"}`, expr("topology.kubernetes.io/zone", "cn-north-1a")),
		},
		{
			name: "CSI to a Local Zone",
			pv:   csi(CSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-west-2a")),
			id:   volB, az: "us-west-2-lax-1a",
			want: csi(CSIDriver, volB, `{"topology.kubernetes.io/zone": "us-west-2-lax-1a", "topology.kubernetes.io/region": "us-west-2"}`, expr("topology.ebs.csi.aws.com/zone", "us-west-2-lax-1a")),
		},
		{
			name: "CSI to a Wavelength Zone",
			pv:   csi(CSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-east-1a")),
			id:   volB, az: "us-east-1-wl1-bos-wlz-1",
			want: csi(CSIDriver, volB, `{"topology.kubernetes.io/zone": "us-east-1-wl1-bos-wlz-1", "topology.kubernetes.io/region": "us-east-1"}`, expr("topology.ebs.csi.aws.com/zone", "us-east-1-wl1-bos-wlz-1")),
		},
		{
			name: "same AZ but stale region label is corrected",
			pv:   inTree("aws://us-east-1a/"+vol17, `{"topology.kubernetes.io/region": "us-west-2"}`, ""),
			id:   volB, az: "us-east-1a",
			want: inTree("aws://us-east-1a/"+volB, `{"topology.kubernetes.io/region": "us-east-1"}`, ""),
		},
		{
			name: "unknown fields preserved",
			pv: `{"apiVersion": "v1", "kind": "PersistentVolume", "x-top": {"a": [1, 2.5, true, null]},
				"metadata": {"name": "pv-1", "annotations": {"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}, "labels": {"topology.kubernetes.io/zone": "us-east-1a"}},
				"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "` + vol17 + `", "x-src": "keep", "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": "1"}},
				         "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["us-east-1a"], "x-expr": 1}], "x-term": {}}]}},
				         "x-spec": "keep"},
				"status": {"phase": "Bound", "x-status": 3}}`,
			id: volB, az: "us-west-1b",
			want: `{"apiVersion": "v1", "kind": "PersistentVolume", "x-top": {"a": [1, 2.5, true, null]},
				"metadata": {"name": "pv-1", "annotations": {"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}, "labels": {"topology.kubernetes.io/zone": "us-west-1b", "topology.kubernetes.io/region": "us-west-1"}},
				"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "` + volB + `", "x-src": "keep", "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": "1"}},
				         "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["us-west-1b"], "x-expr": 1}], "x-term": {}}]}},
				         "x-spec": "keep"},
				"status": {"phase": "Bound", "x-status": 3}}`,
		},
		{
			name: "no metadata at all",
			pv:   `{"spec": {"awsElasticBlockStore": {"volumeID": "` + vol17 + `"}}}`,
			id:   volB, az: "us-east-1a",
			want: `{"metadata": {"labels": {"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1"}}, "spec": {"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/` + volB + `"}}}`,
		},
		{name: "NFS", pv: pvJSON("", `"nfs": {"server": "s", "path": "/"}`, ""), id: volB, az: "us-east-1a", wantErr: "not an EBS volume"},
		{name: "other CSI driver", pv: csi("efs.csi.aws.com", "fs-1", "", ""), id: volB, az: "us-east-1a", wantErr: "not an EBS volume"},
		{name: "malformed existing ID", pv: inTree("vol-", "", ""), id: volB, az: "us-east-1a", wantErr: `"vol-"`},
		{name: "malformed new ID", pv: inTree(vol17, "", ""), id: "vol-XYZ", az: "us-east-1a", wantErr: `"vol-XYZ"`},
		{name: "empty new ID", pv: csi(CSIDriver, vol17, "", ""), id: "", az: "us-east-1a", wantErr: `""`},
		{name: "unrecognised new AZ", pv: inTree(vol17, "", ""), id: volB, az: "use1-az1", wantErr: `"use1-az1"`},
		{name: "labels of the wrong type", pv: `{"metadata": {"name": "pv-1", "labels": "x"}, "spec": {"awsElasticBlockStore": {"volumeID": "` + vol17 + `"}}}`, id: volB, az: "us-east-1a", wantErr: "labels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := obj(t, tc.pv)
			before := in.DeepCopy()
			out, err := SetVolume(in, tc.id, tc.az)
			if !reflect.DeepEqual(in, before) {
				t.Errorf("SetVolume modified its input:\n got %v\nwant %v", in.Object, before.Object)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("SetVolume error = %v; want one containing %s", err, tc.wantErr)
				}
				if out != nil {
					t.Errorf("SetVolume returned %v with an error", out)
				}
				return
			}
			if err != nil {
				t.Fatalf("SetVolume: %v", err)
			}
			want := obj(t, tc.want).Object
			if !reflect.DeepEqual(out.UnstructuredContent(), want) {
				g, _ := json.Marshal(out.UnstructuredContent())
				w, _ := json.Marshal(want)
				t.Errorf("SetVolume:\n got %s\nwant %s", g, w)
			}
			v, ok, err := Parse(out)
			if err != nil || !ok || v.VolumeID != tc.id {
				t.Errorf("Parse(SetVolume(...)) = %+v, %v, %v", v, ok, err)
			}
			if tc.az != "" && v.AvailabilityZone != tc.az {
				t.Errorf("Parse(SetVolume(...)).AvailabilityZone = %q; want %q", v.AvailabilityZone, tc.az)
			}
		})
	}
}

func TestSetVolumeTypedMaps(t *testing.T) {
	// Hand-built objects may hold map[string]string labels and []string values.
	in := &unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": "pv-1", "labels": map[string]string{"failure-domain.beta.kubernetes.io/region": "us-east-1"}},
		"spec": map[string]interface{}{
			"csi": map[string]interface{}{"driver": CSIDriver, "volumeHandle": vol17},
			"nodeAffinity": map[string]interface{}{"required": map[string]interface{}{"nodeSelectorTerms": []interface{}{
				map[string]interface{}{"matchExpressions": []interface{}{
					map[string]interface{}{"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": []string{"us-east-1a"}},
				}},
			}}},
		},
	}}
	out, err := SetVolume(in, volB, "eu-north-1a")
	if err != nil {
		t.Fatal(err)
	}
	if in.Object["metadata"].(map[string]interface{})["labels"].(map[string]string)["failure-domain.beta.kubernetes.io/region"] != "us-east-1" {
		t.Error("input labels modified")
	}
	labels := out.UnstructuredContent()["metadata"].(map[string]interface{})["labels"].(map[string]string)
	want := map[string]string{"failure-domain.beta.kubernetes.io/region": "eu-north-1", "topology.kubernetes.io/zone": "eu-north-1a", "topology.kubernetes.io/region": "eu-north-1"}
	if !reflect.DeepEqual(labels, want) {
		t.Errorf("labels = %v; want %v", labels, want)
	}
	v, _, _ := Parse(out)
	if v.AvailabilityZone != "eu-north-1a" || v.VolumeID != volB {
		t.Errorf("Parse(out) = %+v", v)
	}
}

func TestRegionOfZone(t *testing.T) {
	tests := []struct{ az, region string }{
		{"us-east-1a", "us-east-1"},
		{"us-east-1f", "us-east-1"},
		{"ap-southeast-1b", "ap-southeast-1"},
		{"eu-central-2c", "eu-central-2"},
		{"il-central-1a", "il-central-1"},
		{"us-west-2-lax-1a", "us-west-2"},
		{"us-west-2-lax-1b", "us-west-2"},
		{"us-east-1-bos-1a", "us-east-1"},
		{"us-east-1-wl1-bos-wlz-1", "us-east-1"},
		{"ap-northeast-1-wl1-nrt-wlz-1", "ap-northeast-1"},
		{"us-gov-west-1a", "us-gov-west-1"},
		{"us-gov-east-1c", "us-gov-east-1"},
		{"cn-north-1a", "cn-north-1"},
		{"cn-northwest-1b", "cn-northwest-1"},
		{"us-isob-east-1a", "us-isob-east-1"},
		{"", ""},
		{"us-east-1", ""},
		{"us-east-1ab", ""},
		{"us-east-1A", ""},
		{"US-EAST-1a", ""},
		{"use1-az1", ""},
		{"us-east-a", ""},
		{"east-1a", ""},
		{"us-east-1-", ""},
		{"us-east-1-lax", ""},
		{"us-east-1-lax-1", ""},
		{"us-east-1-wl1-bos-wlz", ""},
		{" us-east-1a", ""},
		{"us-east-1a\n", ""},
		{"aws://us-east-1a", ""},
	}
	for _, tc := range tests {
		got, ok := RegionOfZone(tc.az)
		if got != tc.region || ok != (tc.region != "") {
			t.Errorf("RegionOfZone(%q) = %q, %v; want %q, %v", tc.az, got, ok, tc.region, tc.region != "")
		}
	}
}

func TestValidRegion(t *testing.T) {
	for _, s := range []string{"us-east-1", "eu-central-2", "us-gov-west-1", "cn-northwest-1", "us-isob-east-1", "us-iso-east-1", "ap-southeast-7", "mx-central-1", "sa-east-1", "me-south-1"} {
		if !ValidRegion(s) {
			t.Errorf("ValidRegion(%q) = false", s)
		}
	}
	for _, s := range []string{"", "us-east-1a", "us-east", "us-east-0", "us-east-01", "US-EAST-1", "us_east_1", "east-1", "us-east-1 ", "us--east-1", "aws-global", "use1-az1"} {
		if ValidRegion(s) {
			t.Errorf("ValidRegion(%q) = true", s)
		}
	}
}

func TestValidVolumeID(t *testing.T) {
	for _, s := range []string{vol8, vol17, "vol-00000000", "vol-ffffffffffffffff0"} {
		if !ValidVolumeID(s) {
			t.Errorf("ValidVolumeID(%q) = false", s)
		}
	}
	for _, s := range []string{"", "vol-", "vol-XYZ", "vol-0123ABCD", "vol-0123abc", "vol-0123abcde", "vol-0123456789abcdef", "vol-0123456789abcdef01",
		"snap-0123abcd", "aws://us-east-1a/" + vol17, " " + vol8, vol8 + "\n", "VOL-0123abcd", "vol-0123abcg"} {
		if ValidVolumeID(s) {
			t.Errorf("ValidVolumeID(%q) = true", s)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		inTree("aws://us-east-1a/"+vol17, `{"topology.kubernetes.io/zone": "us-east-1a", "failure-domain.beta.kubernetes.io/region": "us-east-1"}`, ""),
		inTree(vol8, "", ""),
		csi(CSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-west-2-lax-1a")+", "+expr("topology.kubernetes.io/region", "us-west-2")),
		csi("efs.csi.aws.com", "fs-1", "", ""),
		`{"spec": {"awsElasticBlockStore": {"volumeID": 1}, "nodeAffinity": {"required": {"nodeSelectorTerms": [null]}}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, js string) {
		m := map[string]interface{}{}
		if json.Unmarshal([]byte(js), &m) != nil {
			return
		}
		in := &unstructured.Unstructured{Object: m}
		v, ok, err := Parse(in)
		if err != nil && ok {
			t.Fatal("ok with an error")
		}
		if !ok {
			return
		}
		if !ValidVolumeID(v.VolumeID) {
			t.Fatalf("Parse returned volume ID %q", v.VolumeID)
		}
		before, _ := json.Marshal(m)
		for _, az := range []string{"", v.AvailabilityZone, "eu-west-1b"} {
			out, err := SetVolume(in, volB, az)
			if after, _ := json.Marshal(m); string(after) != string(before) {
				t.Fatalf("SetVolume modified its input:\n%s\n%s", before, after)
			}
			if err != nil {
				continue
			}
			w, _, err := Parse(out)
			if err != nil || w.VolumeID != volB || w.CSI != v.CSI {
				t.Fatalf("Parse(SetVolume(%q)) = %+v, %v (was %+v)", az, w, err, v)
			}
			if az == "eu-west-1b" && (w.AvailabilityZone != az || w.Region != "eu-west-1") {
				t.Fatalf("Parse(SetVolume(%q)) = %+v", az, w)
			}
			if az == "" && (w.AvailabilityZone != v.AvailabilityZone || w.Region != v.Region) {
				t.Fatalf("Parse(SetVolume(\"\")) = %+v; was %+v", w, v)
			}
		}
	})
}

func FuzzRegionOfZone(f *testing.F) {
	for _, s := range []string{"us-east-1a", "us-west-2-lax-1a", "us-east-1-wl1-bos-wlz-1", "us-gov-west-1a", "cn-north-1a", "", "use1-az1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, az string) {
		r, ok := RegionOfZone(az)
		if !ok {
			if r != "" {
				t.Fatalf("RegionOfZone(%q) = %q, false", az, r)
			}
			return
		}
		if !ValidRegion(r) || !strings.HasPrefix(az, r) || len(az) <= len(r) {
			t.Fatalf("RegionOfZone(%q) = %q", az, r)
		}
	})
}
