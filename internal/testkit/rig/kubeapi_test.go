package rig

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1api "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
)

// The rig's plugin script runs the binary with the rig's environment on top of this process's,
// under the script's own name, with its arguments as given; PutSecret reaches the rig's API.
func TestKubeAPIPluginScript(t *testing.T) {
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env command")
	}
	t.Setenv("RIG_TEST_INHERITED", "kept")
	r := &Rig{env: &Env{Plugin: &Plugin{Binary: env}, LogDir: filepath.Join(t.TempDir(), "it's logs")}}
	if err := r.startKubeAPI("Test/Script"); err != nil {
		t.Fatal(err)
	}
	defer r.KubeAPI.Close()
	script := filepath.Join(r.pluginDir, PluginBinaryName)
	out, err := exec.Command(script, "RIG_TEST_ARG=a b").Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, want := range []string{
		"KUBECONFIG=" + r.Kubeconfig,
		"VELERO_NAMESPACE=" + harness.Namespace,
		"TMPDIR=" + r.pluginTmp,
		"RIG_TEST_INHERITED=kept",
		"RIG_TEST_ARG=a b",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("the plugin's environment lacks %q:\n%s", want, out)
		}
	}
	if err := r.PutSecret("creds", map[string][]byte{"cloud": []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var s corev1api.Secret
	if !r.KubeAPI.Get(harness.Namespace, "creds", &s) || string(s.Data["cloud"]) != "x" {
		t.Errorf("PutSecret stored %+v", s)
	}
	if err := (&Rig{}).PutSecret("creds", nil); err == nil {
		t.Error("PutSecret without an API succeeded")
	}
}
