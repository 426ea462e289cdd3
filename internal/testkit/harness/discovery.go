package harness

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// coreDiscovery is a discovery.Helper that knows the core API group's volume resources, enough
// for Velero's action resolvers to resolve what actions apply to.
type coreDiscovery struct{}

var coreResources = []metav1.APIResource{
	{Name: "persistentvolumes", SingularName: "persistentvolume", ShortNames: []string{"pv"}, Kind: "PersistentVolume", Version: "v1"},
	{Name: "persistentvolumeclaims", SingularName: "persistentvolumeclaim", ShortNames: []string{"pvc"}, Namespaced: true, Kind: "PersistentVolumeClaim", Version: "v1"},
}

func (coreDiscovery) Resources() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: coreResources}}
}

func (coreDiscovery) ResourceFor(in schema.GroupVersionResource) (schema.GroupVersionResource, metav1.APIResource, error) {
	for _, r := range coreResources {
		if in.Group != "" {
			break
		}
		if in.Resource == r.Name || in.Resource == r.SingularName || in.Resource == r.ShortNames[0] {
			return schema.GroupVersionResource{Version: "v1", Resource: r.Name}, r, nil
		}
	}
	return schema.GroupVersionResource{}, metav1.APIResource{}, fmt.Errorf("resource %s not found", in)
}

func (coreDiscovery) KindFor(in schema.GroupVersionKind) (schema.GroupVersionResource, metav1.APIResource, error) {
	for _, r := range coreResources {
		if in.Group == "" && in.Kind == r.Kind {
			return schema.GroupVersionResource{Version: "v1", Resource: r.Name}, r, nil
		}
	}
	return schema.GroupVersionResource{}, metav1.APIResource{}, fmt.Errorf("kind %s not found", in)
}

func (coreDiscovery) Refresh() error               { return nil }
func (coreDiscovery) APIGroups() []metav1.APIGroup { return nil }
func (coreDiscovery) ServerVersion() *version.Info { return &version.Info{Major: "1", Minor: "33"} }
