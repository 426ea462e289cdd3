package harness

import (
	corev1api "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The zone keys core reads a PV's zone from, as takePVSnapshot does.
const (
	zoneLabel           = "topology.kubernetes.io/zone"
	zoneLabelDeprecated = "failure-domain.beta.kubernetes.io/zone"
	ebsCSIZoneKey       = "topology.ebs.csi.aws.com/zone"
)

var pvResource = schema.GroupResource{Resource: "persistentvolumes"}

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
