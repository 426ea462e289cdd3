package check

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

// The install identity line: the UID of kube-system when readable; a warning naming the
// ClusterRole to bind when the Kubernetes API refuses it, which leaves the exit status 0.
func TestInstallIdentityLine(t *testing.T) {
	srv := startSim(t)
	kubeSystem := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "3f0c-kube-system-uid"}}
	good := vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1"}, "")
	tests := []struct {
		name    string
		objs    []client.Object
		refused bool
		inPod   bool
		status  Status
		says    string
		fix     string
	}{
		{"readable: the identity snapshots carry", []client.Object{good, deployment(), kubeSystem}, false, true, Pass, "3f0c-kube-system-uid/velero", ""},
		{"refused to Velero's pod: snapshots go untagged, bind the ClusterRole", []client.Object{good, deployment(), kubeSystem}, true, true, Warn,
			"the plugin tags no snapshot with this install", "bind the ClusterRole velero-async-aws (get on namespace kube-system"},
		{"refused off the pod: bind it to Velero and to whoever runs the check", []client.Object{good, deployment(), kubeSystem}, true, false, Warn,
			"not readable to whoever runs the check", "and to whoever runs the check"},
		{"no kube-system namespace: not checked", []client.Object{good, deployment()}, false, true, NotChecked, "not found", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := checker(t, srv.URL, tt.objs...)
			if tt.refused {
				c.Kube = refusing{c.Kube, []string{"Namespace"}}
			}
			c.Shell = Shell{InPod: tt.inPod}
			rep, err := c.Run(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			f := findingOf(t, rep, "install identity")
			if f.Status != tt.status || !strings.Contains(f.Detail, tt.says) || !strings.Contains(f.Fix, tt.fix) {
				t.Errorf("install identity: %s %q, fix %q; want %s saying %q, fix with %q", f.Status, f.Detail, f.Fix, tt.status, tt.says, tt.fix)
			}
			if rep.ExitCode() != ExitOK {
				t.Errorf("exit status %d, want %d: the install identity is never a failure", rep.ExitCode(), ExitOK)
			}
		})
	}
}
