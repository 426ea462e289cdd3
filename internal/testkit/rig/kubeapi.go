package rig

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1api "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/kubeapi"
)

// A rig with Env.KubeAPI has a Kubernetes API of its own (kubeapi.Server) that its cores write
// to as Velero's server does and its plugin processes read, through a kubeconfig.
//
// Velero's plugin client starts plugin processes with this process's environment, read at each
// start, and every reconcile starts new ones; an environment variable set process-wide would
// have to stay set for the rig's whole life, and rigs of parallel tests would overwrite each
// other's. So the rig's environment does not go through this process's: the rig's plugin
// directory holds, in place of the plugin binary, a script that sets KUBECONFIG,
// VELERO_NAMESPACE and TMPDIR (the plugin writes the credential Secrets it reads under
// os.TempDir(), which a pod has to itself) and execs the shared binary under the script's name
// (Velero starts each plugin by the argv[0] the plugin reports). The process keeps the
// script's PID and runs the binary itself, so Plugin.PIDs and KillPlugins find it as before.

// Files of a rig's kubeapi directory (<LogDir>/<rig>-kubeapi).
const (
	kubeconfigFile = "kubeconfig"
	pluginsDir     = "plugins"
	credentialsDir = "credentials"
)

// startKubeAPI starts the rig's API server, writes its kubeconfig and the rig's plugin
// directory, and makes the rig's cores use them.
func (r *Rig) startKubeAPI(name string) error {
	api, err := kubeapi.Start()
	if err != nil {
		return fmt.Errorf("starting the Kubernetes API: %w", err)
	}
	r.KubeAPI = api
	dir := filepath.Join(r.env.LogDir, FileName(name)+"-kubeapi")
	r.Kubeconfig = filepath.Join(dir, kubeconfigFile)
	if err := api.WriteKubeconfig(r.Kubeconfig); err != nil {
		return err
	}
	r.credentialsDir = filepath.Join(dir, credentialsDir)
	if r.env.Plugin == nil {
		return nil // the cores' plugins are the caller's
	}
	// The plugin's TMPDIR holds go-plugin's Unix socket, whose path may not be longer than
	// sun_path (108 bytes): it is a short directory of the system's temp dir, not under dir.
	tmp, err := os.MkdirTemp("", "rig-tmp-")
	if err != nil {
		return err
	}
	r.pluginTmp = tmp
	plugins := filepath.Join(dir, pluginsDir)
	if err := os.MkdirAll(plugins, 0o700); err != nil {
		return err
	}
	// bash, for exec -a: the plugin names itself to Velero by its argv[0], which must stay
	// the script's for Velero to start the script for every plugin, not the binary.
	bash, err := exec.LookPath("bash")
	if err != nil {
		return fmt.Errorf("the rig's plugin script needs bash: %w", err)
	}
	script := "#!" + bash + "\n" +
		"# The plugin as a pod of this rig's cluster runs it: its kubeconfig, Velero's namespace, a /tmp of its own.\n" +
		exportLine("KUBECONFIG", r.Kubeconfig) +
		exportLine(location.NamespaceEnv, harness.Namespace) +
		exportLine("TMPDIR", tmp) +
		"exec -a \"$0\" " + shellQuote(r.env.Plugin.Binary) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(plugins, PluginBinaryName), []byte(script), 0o700); err != nil {
		return fmt.Errorf("writing the rig's plugin: %w", err)
	}
	r.pluginDir = plugins
	return nil
}

func exportLine(name, value string) string {
	return name + "=" + shellQuote(value) + "; export " + name + "\n"
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// PutSecret creates or replaces the Secret name in Velero's namespace of the rig's API, as
// kubectl would: the credential Secrets of VolumeSnapshotLocations. It fails unless the rig
// has one (Env.KubeAPI).
func (r *Rig) PutSecret(name string, data map[string][]byte) error {
	if r.KubeAPI == nil {
		return fmt.Errorf("rig has no Kubernetes API: set Env.KubeAPI")
	}
	r.KubeAPI.Put(&corev1api.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: harness.Namespace, Name: name},
		Type:       corev1api.SecretTypeOpaque,
		Data:       data,
	})
	return nil
}
