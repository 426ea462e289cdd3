package harness

import (
	"strings"

	corev1api "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Labels and topology keys as Kubernetes and the EBS CSI driver set them on EKS.
const (
	zoneLabel           = "topology.kubernetes.io/zone"
	zoneLabelDeprecated = "failure-domain.beta.kubernetes.io/zone"
	regionLabel         = "topology.kubernetes.io/region"
	ebsCSIZoneKey       = "topology.ebs.csi.aws.com/zone"
	// EBSCSIDriver is the EBS CSI driver's name.
	EBSCSIDriver = "ebs.csi.aws.com"
)

var pvResource = schema.GroupResource{Resource: "persistentvolumes"}

// Volume describes an EBS-backed PersistentVolume to build.
type Volume struct {
	// PV is the PersistentVolume's name.
	PV string
	// VolumeID is the EBS volume ID (vol-…).
	VolumeID string
	// Zone is the volume's availability zone, e.g. us-east-1a.
	Zone string
	// SizeGiB is the volume size.
	SizeGiB int32
	// CSI makes a PV provisioned by the EBS CSI driver; otherwise an in-tree awsElasticBlockStore PV.
	CSI bool
}

// PersistentVolume builds the PV as EKS shows it: in-tree volumes carry the zone and region
// labels and an aws:// volume ID; CSI volumes carry the volume handle and a node affinity on
// the driver's zone key.
func (v Volume) PersistentVolume() *corev1api.PersistentVolume {
	pv := &corev1api.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: v.PV, Labels: map[string]string{}},
		Spec: corev1api.PersistentVolumeSpec{
			Capacity:                      corev1api.ResourceList{corev1api.ResourceStorage: *resource.NewQuantity(int64(v.SizeGiB)<<30, resource.BinarySI)},
			AccessModes:                   []corev1api.PersistentVolumeAccessMode{corev1api.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1api.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1api.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "app", Name: "data-" + v.PV},
		},
		Status: corev1api.PersistentVolumeStatus{Phase: corev1api.VolumeBound},
	}
	if !v.CSI {
		pv.Labels[zoneLabel] = v.Zone
		pv.Labels[regionLabel] = regionOf(v.Zone)
		pv.Spec.AWSElasticBlockStore = &corev1api.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://" + v.Zone + "/" + v.VolumeID, FSType: "ext4"}
		return pv
	}
	pv.Spec.CSI = &corev1api.CSIPersistentVolumeSource{Driver: EBSCSIDriver, VolumeHandle: v.VolumeID, FSType: "ext4"}
	pv.Spec.NodeAffinity = &corev1api.VolumeNodeAffinity{Required: &corev1api.NodeSelector{
		NodeSelectorTerms: []corev1api.NodeSelectorTerm{{MatchExpressions: []corev1api.NodeSelectorRequirement{
			{Key: ebsCSIZoneKey, Operator: corev1api.NodeSelectorOpIn, Values: []string{v.Zone}},
		}}},
	}}
	return pv
}

// VolumeIDOf returns the EBS volume ID of an in-tree or EBS CSI PV, "" for other PVs.
func VolumeIDOf(pv *corev1api.PersistentVolume) string {
	switch {
	case pv.Spec.AWSElasticBlockStore != nil:
		id := pv.Spec.AWSElasticBlockStore.VolumeID
		return id[strings.LastIndex(id, "/")+1:]
	case pv.Spec.CSI != nil && pv.Spec.CSI.Driver == EBSCSIDriver:
		return pv.Spec.CSI.VolumeHandle
	}
	return ""
}

// regionOf strips the zone letter: us-east-1a → us-east-1.
func regionOf(zone string) string {
	if zone == "" {
		return ""
	}
	return zone[:len(zone)-1]
}

// pvZone finds a PV's zone as takePVSnapshot does: the zone label, the deprecated zone label,
// then the node affinity's zone keys.
func pvZone(pv *corev1api.PersistentVolume) string {
	if z, ok := pv.Labels[zoneLabel]; ok {
		return z
	}
	if z, ok := pv.Labels[zoneLabelDeprecated]; ok {
		return z
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, exp := range term.MatchExpressions {
			if (exp.Key == ebsCSIZoneKey || exp.Key == zoneLabel || exp.Key == zoneLabelDeprecated) &&
				exp.Operator == corev1api.NodeSelectorOpIn && len(exp.Values) > 0 {
				return exp.Values[0]
			}
		}
	}
	return ""
}

func toUnstructured(pv *corev1api.PersistentVolume) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pv)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func fromUnstructured(obj runtime.Unstructured) (*corev1api.PersistentVolume, error) {
	pv := new(corev1api.PersistentVolume)
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.UnstructuredContent(), pv)
	return pv, err
}
