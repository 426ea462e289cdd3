package kubeapi

import (
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiGroups are the discovery entries of the named (non-core) groups of Resources, in order.
func apiGroups() []metav1.APIGroup {
	var out []metav1.APIGroup
	seen := map[string]bool{}
	for _, r := range Resources {
		gv := r.GVK.GroupVersion()
		if gv.Group == "" || seen[gv.Group] {
			continue
		}
		seen[gv.Group] = true
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		out = append(out, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

// groupDiscovery answers /apis/GROUP and /apis/GROUP/VERSION of the served groups; ok is false
// for any other path.
func groupDiscovery(path string) (int, any, bool) {
	rest, ok := strings.CutPrefix(path, "/apis/")
	if !ok {
		return 0, nil, false
	}
	group, version, versioned := strings.Cut(rest, "/")
	for _, g := range apiGroups() {
		switch {
		case g.Name != group:
		case !versioned:
			g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
			return http.StatusOK, &g, true
		case version == g.PreferredVersion.Version:
			return http.StatusOK, resourceList(schema.GroupVersion{Group: group, Version: version}), true
		}
	}
	return 0, nil, false
}
