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

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
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

// Node-affinity keys of EKS Auto Mode: its driver's zone key, and the compute type its
// StorageClasses' allowedTopologies select.
const (
	autoModeZoneKey    = "topology.ebs.csi.eks.amazonaws.com/zone"
	autoModeComputeKey = "eks.amazonaws.com/compute-type"
	volAuto            = "vol-05938b7ff13ef8ebf"
)

// autoModePV is a PV as EKS Auto Mode provisions it (kubectl get pv -o json of a PV bound to a
// PVC of an auto-ebs-sc StorageClass): no labels, the driver's provisioner identity among the
// volume attributes, and the zone in node affinity.
func autoModePV(handle, affinity string) string {
	return `{"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": {"name": "pvc-c5c4dec1-0ce5-4a00-982d-233c7d5bfdbb",
		             "annotations": {"pv.kubernetes.io/provisioned-by": "ebs.csi.eks.amazonaws.com", "volume.kubernetes.io/provisioner-deletion-secret-name": "", "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""},
		             "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer", "kubernetes.io/pv-protection", "external-attacher/ebs-csi-eks-amazonaws-com"]},
		"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "30Gi"},
		         "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": "data-catalog-mysql-0", "namespace": "default"},
		         "csi": {"driver": "ebs.csi.eks.amazonaws.com", "fsType": "ext4", "volumeHandle": "` + handle + `",
		                 "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": "1735365022188-8218-ebs.csi.eks.amazonaws.com"}},
		         "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [` + affinity + `]}]}},
		         "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "auto-ebs-sc", "volumeMode": "Filesystem"},
		"status": {"phase": "Bound"}}`
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
			pv:   csi(EBSCSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-east-1c")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1c", Region: "us-east-1", Driver: EBSCSIDriver},
		},
		{
			name: "CSI with node affinity on topology.kubernetes.io/zone",
			pv:   csi(EBSCSIDriver, vol17, "", expr("topology.kubernetes.io/zone", "ap-southeast-1b")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "ap-southeast-1b", Region: "ap-southeast-1", Driver: EBSCSIDriver},
		},
		{
			name: "CSI with node affinity on the deprecated zone key",
			pv:   csi(EBSCSIDriver, vol17, "", expr("failure-domain.beta.kubernetes.io/zone", "cn-north-1a")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "cn-north-1a", Region: "cn-north-1", Driver: EBSCSIDriver},
		},
		{
			name: "CSI affinity: region key does not set the zone, other keys ignored",
			pv: csi(EBSCSIDriver, vol17, "", expr("topology.kubernetes.io/region", "us-east-1")+`, `+expr("kubernetes.io/hostname", "node-1")+
				`, {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["us-east-1a"]}`),
			want: Volume{Name: "pv-1", VolumeID: vol17, Driver: EBSCSIDriver},
		},
		{
			name: "CSI affinity with several zones is ambiguous",
			pv:   csi(EBSCSIDriver, vol17, "", `{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a", "us-east-1b"]}`),
			want: Volume{Name: "pv-1", VolumeID: vol17, Driver: EBSCSIDriver},
		},
		{
			name: "CSI labels win over affinity",
			pv:   csi(EBSCSIDriver, vol17, `{"topology.kubernetes.io/zone": "us-east-1a"}`, expr("topology.ebs.csi.aws.com/zone", "us-east-1c")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1a", Region: "us-east-1", Driver: EBSCSIDriver},
		},
		{
			name: "CSI without zone information",
			pv:   csi(EBSCSIDriver, vol8, "", ""),
			want: Volume{Name: "pv-1", VolumeID: vol8, Driver: EBSCSIDriver},
		},
		{
			name: "EKS Auto Mode as provisioned: zone from topology.kubernetes.io/zone",
			pv:   autoModePV(volAuto, expr("topology.kubernetes.io/zone", "us-west-2a")),
			want: Volume{Name: "pvc-c5c4dec1-0ce5-4a00-982d-233c7d5bfdbb", VolumeID: volAuto, AvailabilityZone: "us-west-2a", Region: "us-west-2", Driver: EKSAutoModeDriver},
		},
		{
			name: "EKS Auto Mode: zone from its driver's key, compute type ignored",
			pv:   autoModePV(volAuto, expr(autoModeComputeKey, "auto")+", "+expr(autoModeZoneKey, "eu-west-2c")),
			want: Volume{Name: "pvc-c5c4dec1-0ce5-4a00-982d-233c7d5bfdbb", VolumeID: volAuto, AvailabilityZone: "eu-west-2c", Region: "eu-west-2", Driver: EKSAutoModeDriver},
		},
		{
			name: "EKS Auto Mode: labels win over affinity",
			pv:   csi(EKSAutoModeDriver, vol17, `{"topology.kubernetes.io/zone": "us-east-1f"}`, expr(autoModeZoneKey, "us-east-1a")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-east-1f", Region: "us-east-1", Driver: EKSAutoModeDriver},
		},
		{
			name: "EKS Auto Mode without zone information",
			pv:   csi(EKSAutoModeDriver, vol8, "", expr(autoModeComputeKey, "auto")),
			want: Volume{Name: "pv-1", VolumeID: vol8, Driver: EKSAutoModeDriver},
		},
		{
			name: "either driver's zone key names the zone",
			pv:   csi(EBSCSIDriver, vol17, "", expr(autoModeZoneKey, "ap-south-1b")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "ap-south-1b", Region: "ap-south-1", Driver: EBSCSIDriver},
		},
		{
			name: "Local Zone",
			pv:   csi(EBSCSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-west-2-lax-1a")),
			want: Volume{Name: "pv-1", VolumeID: vol17, AvailabilityZone: "us-west-2-lax-1a", Region: "us-west-2", Driver: EBSCSIDriver},
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
		{name: "CSI malformed handle", pv: csi(EBSCSIDriver, "vol-XYZ", "", ""), wantErr: `"vol-XYZ"`},
		{name: "CSI empty handle", pv: csi(EBSCSIDriver, "", "", ""), wantErr: "missing"},
		{name: "CSI handle of the wrong type", pv: pvJSON("", `"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": ["x"]}`, ""), wantErr: "volumeHandle"},
		{name: "EKS Auto Mode malformed handle", pv: csi(EKSAutoModeDriver, "vol-XYZ", "", ""), wantErr: `"vol-XYZ"`},
		{name: "EKS Auto Mode without handle", pv: pvJSON("", `"csi": {"driver": "ebs.csi.eks.amazonaws.com"}`, ""), wantErr: "spec.csi.volumeHandle is missing"},
		{
			name:    "both in-tree and EKS Auto Mode",
			pv:      pvJSON("", `"awsElasticBlockStore": {"volumeID": "`+vol17+`"}, "csi": {"driver": "ebs.csi.eks.amazonaws.com", "volumeHandle": "`+vol17+`"}`, ""),
			wantErr: "both an awsElasticBlockStore and an ebs.csi.eks.amazonaws.com CSI source",
		},
		{
			name:    "both in-tree and CSI",
			pv:      pvJSON("", `"awsElasticBlockStore": {"volumeID": "`+vol17+`"}, "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol17+`"}`, ""),
			wantErr: "both",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, kind, err := Parse(obj(t, tc.pv))
			switch {
			case tc.wantErr != "":
				if err == nil {
					t.Fatalf("Parse = %+v, %v, nil; want an error containing %s", got, kind, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"pv-1"`) {
					t.Errorf("error %q should name the PV and contain %s", err, tc.wantErr)
				}
				if kind != NotEBS {
					t.Errorf("kind %v with an error", kind)
				}
			case err != nil:
				t.Fatalf("Parse: %v", err)
			case tc.notEBS:
				if kind != NotEBS || got != (Volume{}) {
					t.Errorf("Parse = %+v, %v; want not EBS", got, kind)
				}
			default:
				if kind != EBS || got != tc.want {
					t.Errorf("Parse = %+v, %v; want %+v, EBS", got, kind, tc.want)
				}
			}
		})
	}
}

// A CSI driver this package does not know is never read as EBS; with an EBS volume ID as its
// handle it is reported as such, so the plugin can warn about it.
func TestParseUnknownCSIDriver(t *testing.T) {
	tests := []struct {
		name string
		pv   string
		kind Kind
		want Volume
	}{
		{name: "EBS handle", pv: csi("example.com/ebs", vol17, `{"topology.kubernetes.io/zone": "us-east-1a"}`, ""), kind: UnknownCSIDriver,
			want: Volume{Name: "pv-1", VolumeID: vol17, Driver: "example.com/ebs"}},
		{name: "short EBS handle", pv: csi("ebs.csi.example.org", vol8, "", ""), kind: UnknownCSIDriver, want: Volume{Name: "pv-1", VolumeID: vol8, Driver: "ebs.csi.example.org"}},
		{name: "driver names are case-sensitive", pv: csi("EBS.CSI.AWS.COM", vol17, "", ""), kind: UnknownCSIDriver, want: Volume{Name: "pv-1", VolumeID: vol17, Driver: "EBS.CSI.AWS.COM"}},
		{name: "EFS handle", pv: csi("efs.csi.aws.com", "fs-12345678", "", "")},
		{name: "handle almost a volume ID", pv: csi("example.com/ebs", "vol-XYZ", "", "")},
		{name: "in-tree form of an ID", pv: csi("example.com/ebs", "aws://us-east-1a/"+vol17, "", "")},
		{name: "no driver", pv: pvJSON("", `"csi": {"volumeHandle": "`+vol17+`"}`, "")},
		{name: "driver not a string", pv: pvJSON("", `"csi": {"driver": 7, "volumeHandle": "`+vol17+`"}`, "")},
		{name: "handle not a string", pv: pvJSON("", `"csi": {"driver": "example.com/ebs", "volumeHandle": 7}`, "")},
		{name: "csi not an object", pv: pvJSON("", `"csi": "`+vol17+`"`, "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, kind, err := Parse(obj(t, tc.pv))
			if err != nil || kind != tc.kind || got != tc.want {
				t.Errorf("Parse = %+v, %v, %v; want %+v, %v, nil", got, kind, err, tc.want, tc.kind)
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
		"typed maps":     &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]string{"topology.kubernetes.io/zone": "us-east-1a"}}, "spec": map[string]interface{}{"csi": map[string]interface{}{"driver": EBSCSIDriver, "volumeHandle": vol8}}}},
		"odd affinity":   obj(t, pvJSON("", `"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}`, `null, 3, {"key": 4}, {"key": "topology.kubernetes.io/zone", "operator": "In", "values": "us-east-1a"}, {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [1]}`)),
		"nil affinity":   obj(t, `{"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}, "nodeAffinity": null}}`),
		"nil required":   obj(t, `{"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}, "nodeAffinity": {"required": null}}}`),
		"terms not list": obj(t, `{"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}, "nodeAffinity": {"required": {"nodeSelectorTerms": {}}}}}`),
		"metadata wrong": obj(t, `{"metadata": [], "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "`+vol8+`"}}}`),
	} {
		t.Run(name, func(t *testing.T) {
			v, kind, err := Parse(pv)
			t.Logf("Parse = %+v, %v, %v", v, kind, err)
			if kind == EBS {
				if _, err := SetVolume(pv, volB, "us-west-2a"); err != nil {
					t.Logf("SetVolume: %v", err)
				}
			}
		})
	}
	v, kind, err := Parse(&unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]string{"topology.kubernetes.io/zone": "us-east-1a"}}, "spec": map[string]interface{}{"csi": map[string]interface{}{"driver": EBSCSIDriver, "volumeHandle": vol8}}}})
	if err != nil || kind != EBS || v.AvailabilityZone != "us-east-1a" || v.Region != "us-east-1" {
		t.Errorf("typed label map: Parse = %+v, %v, %v", v, kind, err)
	}
	if _, _, err := Parse(nil); err == nil {
		t.Error("Parse(nil) should fail")
	}
}

// TestParseTyped checks Parse on PVs converted from the typed API, as Velero hands them over,
// for each EBS CSI driver with the zone key it puts in node affinity.
func TestParseTyped(t *testing.T) {
	for _, tc := range []struct{ driver, zoneKey string }{
		{EBSCSIDriver, "topology.ebs.csi.aws.com/zone"},
		{EKSAutoModeDriver, "topology.kubernetes.io/zone"},
		{EKSAutoModeDriver, autoModeZoneKey},
	} {
		t.Run(tc.driver+" "+tc.zoneKey, func(t *testing.T) {
			typed := &corev1.PersistentVolume{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
				ObjectMeta: metav1.ObjectMeta{Name: "pvc-123"},
				Spec: corev1.PersistentVolumeSpec{
					PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: tc.driver, VolumeHandle: vol17}},
					NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: tc.zoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-central-1b"}}},
					}}}},
				},
			}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: m}
			got, kind, err := Parse(u)
			want := Volume{Name: "pvc-123", VolumeID: vol17, AvailabilityZone: "eu-central-1b", Region: "eu-central-1", Driver: tc.driver}
			if err != nil || kind != EBS || got != want {
				t.Fatalf("Parse = %+v, %v, %v; want %+v", got, kind, err, want)
			}

			out, err := SetVolume(u, volB, "eu-west-1a")
			if err != nil {
				t.Fatal(err)
			}
			var back corev1.PersistentVolume
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out.UnstructuredContent(), &back); err != nil {
				t.Fatalf("result does not convert back: %v", err)
			}
			if back.Spec.CSI.VolumeHandle != volB || back.Spec.CSI.Driver != tc.driver ||
				!reflect.DeepEqual(back.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values, []string{"eu-west-1a"}) ||
				back.Labels["topology.kubernetes.io/zone"] != "eu-west-1a" || back.Labels["topology.kubernetes.io/region"] != "eu-west-1" {
				t.Errorf("converted result: %+v", back)
			}
		})
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
			pv:   csi(EBSCSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-east-1a")),
			id:   volB, az: "us-east-1a",
			want: csi(EBSCSIDriver, volB, "", expr("topology.ebs.csi.aws.com/zone", "us-east-1a")),
		},
		{
			name: "CSI cross-region rewrites every zone and region key",
			pv: csi(EBSCSIDriver, vol17, `{"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1"}`,
				expr("topology.ebs.csi.aws.com/zone", "us-east-1a")+", "+expr("topology.kubernetes.io/zone", "us-east-1a")+", "+
					expr("topology.kubernetes.io/region", "us-east-1")+", "+expr("kubernetes.io/hostname", "node-1")+", "+
					`{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["us-east-1d"]}`),
			id: volB, az: "us-gov-east-1b",
			want: csi(EBSCSIDriver, volB, `{"topology.kubernetes.io/zone": "us-gov-east-1b", "topology.kubernetes.io/region": "us-gov-east-1"}`,
				expr("topology.ebs.csi.aws.com/zone", "us-gov-east-1b")+", "+expr("topology.kubernetes.io/zone", "us-gov-east-1b")+", "+
					expr("topology.kubernetes.io/region", "us-gov-east-1")+", "+expr("kubernetes.io/hostname", "node-1")+", "+
					`{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["us-east-1d"]}`),
		},
		{
			name: "CSI multi-zone affinity collapses to the new AZ",
			pv:   csi(EBSCSIDriver, vol17, "", `{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a", "us-east-1b"]}`),
			id:   volB, az: "cn-north-1a",
			want: csi(EBSCSIDriver, volB, `{"topology.kubernetes.io/zone": "cn-north-1a", "topology.kubernetes.io/region": "cn-north-1"}`, expr("topology.kubernetes.io/zone", "cn-north-1a")),
		},
		{
			name: "CSI to a Local Zone",
			pv:   csi(EBSCSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-west-2a")),
			id:   volB, az: "us-west-2-lax-1a",
			want: csi(EBSCSIDriver, volB, `{"topology.kubernetes.io/zone": "us-west-2-lax-1a", "topology.kubernetes.io/region": "us-west-2"}`, expr("topology.ebs.csi.aws.com/zone", "us-west-2-lax-1a")),
		},
		{
			name: "CSI to a Wavelength Zone",
			pv:   csi(EBSCSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-east-1a")),
			id:   volB, az: "us-east-1-wl1-bos-wlz-1",
			want: csi(EBSCSIDriver, volB, `{"topology.kubernetes.io/zone": "us-east-1-wl1-bos-wlz-1", "topology.kubernetes.io/region": "us-east-1"}`, expr("topology.ebs.csi.aws.com/zone", "us-east-1-wl1-bos-wlz-1")),
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
		{
			name: "EKS Auto Mode same AZ changes only the handle",
			pv:   autoModePV(volAuto, expr("topology.kubernetes.io/zone", "us-west-2a")),
			id:   volB, az: "us-west-2a",
			want: autoModePV(volB, expr("topology.kubernetes.io/zone", "us-west-2a")),
		},
		{
			name: "EKS Auto Mode cross-region keeps the driver and the compute type",
			pv:   autoModePV(volAuto, expr(autoModeComputeKey, "auto")+", "+expr(autoModeZoneKey, "us-west-2a")+", "+expr("topology.kubernetes.io/zone", "us-west-2a")),
			id:   volB, az: "us-east-1c",
			want: strings.Replace(autoModePV(volB, expr(autoModeComputeKey, "auto")+", "+expr(autoModeZoneKey, "us-east-1c")+", "+expr("topology.kubernetes.io/zone", "us-east-1c")),
				`"metadata": {`, `"metadata": {"labels": {"topology.kubernetes.io/zone": "us-east-1c", "topology.kubernetes.io/region": "us-east-1"}, `, 1),
		},
		{
			name: "EKS Auto Mode with labels to another AZ",
			pv:   csi(EKSAutoModeDriver, vol17, `{"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1"}`, expr(autoModeZoneKey, "us-east-1a")),
			id:   volB, az: "us-east-1b",
			want: csi(EKSAutoModeDriver, volB, `{"topology.kubernetes.io/zone": "us-east-1b", "topology.kubernetes.io/region": "us-east-1"}`, expr(autoModeZoneKey, "us-east-1b")),
		},
		{name: "NFS", pv: pvJSON("", `"nfs": {"server": "s", "path": "/"}`, ""), id: volB, az: "us-east-1a", wantErr: "not an EBS volume"},
		{name: "unknown CSI driver with an EBS handle", pv: csi("example.com/ebs", vol17, "", ""), id: volB, az: "us-east-1a", wantErr: `"pv-1" uses CSI driver "example.com/ebs"`},
		{name: "other CSI driver", pv: csi("efs.csi.aws.com", "fs-1", "", ""), id: volB, az: "us-east-1a", wantErr: `"pv-1" is not an EBS volume`},
		{name: "malformed existing ID", pv: inTree("vol-", "", ""), id: volB, az: "us-east-1a", wantErr: `"vol-"`},
		{name: "malformed new ID", pv: inTree(vol17, "", ""), id: "vol-XYZ", az: "us-east-1a", wantErr: `"vol-XYZ"`},
		{name: "empty new ID", pv: csi(EBSCSIDriver, vol17, "", ""), id: "", az: "us-east-1a", wantErr: `""`},
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
			v, kind, err := Parse(out)
			if err != nil || kind != EBS || v.VolumeID != tc.id {
				t.Errorf("Parse(SetVolume(...)) = %+v, %v, %v", v, kind, err)
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
			"csi": map[string]interface{}{"driver": EBSCSIDriver, "volumeHandle": vol17},
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

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		inTree("aws://us-east-1a/"+vol17, `{"topology.kubernetes.io/zone": "us-east-1a", "failure-domain.beta.kubernetes.io/region": "us-east-1"}`, ""),
		inTree(vol8, "", ""),
		csi(EBSCSIDriver, vol17, "", expr("topology.ebs.csi.aws.com/zone", "us-west-2-lax-1a")+", "+expr("topology.kubernetes.io/region", "us-west-2")),
		csi("efs.csi.aws.com", "fs-1", "", ""),
		csi("example.com/ebs", vol17, "", ""),
		autoModePV(volAuto, expr(autoModeComputeKey, "auto")+", "+expr("topology.kubernetes.io/zone", "us-west-2a")),
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
		v, kind, err := Parse(in)
		if err != nil && kind != NotEBS {
			t.Fatalf("kind %v with an error", kind)
		}
		if kind == UnknownCSIDriver && (v.Driver == "" || !awsid.IsVolumeID(v.VolumeID) || isEBSDriver(v.Driver)) {
			t.Fatalf("unknown CSI driver: Parse = %+v", v)
		}
		if kind != EBS {
			return
		}
		if !awsid.IsVolumeID(v.VolumeID) {
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
			if err != nil || w.VolumeID != volB || w.Driver != v.Driver {
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
