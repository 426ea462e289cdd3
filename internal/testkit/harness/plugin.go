// Package harness plays Velero core's part around the plugin binary: it starts the plugin
// through Velero's own plugin client (pkg/plugin/clientmgmt), backs up PersistentVolumes as
// pkg/backup/item_backupper.go does, waits for item operations as
// pkg/controller/backup_operations_controller.go does, restores as pkg/restore/pv_restorer.go
// does and deletes snapshots as the backup deletion controller does.
package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
)

// PluginBinaryName is the file name of the built plugin in its plugin directory.
const PluginBinaryName = "velero-plugin-for-aws-async"

// pluginPackage is the import path of the plugin's main package (the module root).
const pluginPackage = "github.com/velero-async/velero-plugin-for-aws"

// Plugin is a built plugin binary in a directory of its own, ready for Velero's plugin registry.
type Plugin struct {
	// Dir is the plugin directory (Velero's --plugin-dir).
	Dir string
	// Binary is the absolute path of the plugin executable.
	Binary string
}

// BuildPlugin compiles the plugin from the module root into a new temporary directory.
// Call Remove when done.
func BuildPlugin(ctx context.Context) (*Plugin, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "velero-plugins-")
	if err != nil {
		return nil, err
	}
	p := &Plugin{Dir: dir, Binary: filepath.Join(dir, PluginBinaryName)}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", p.Binary, pluginPackage)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		p.Remove()
		return nil, fmt.Errorf("building the plugin: %w\n%s", err, out)
	}
	return p, nil
}

// Remove deletes the plugin directory.
func (p *Plugin) Remove() { _ = os.RemoveAll(p.Dir) }

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the module %s", pluginPackage)
	}
	return filepath.Dir(gomod), nil
}

// UseEndpoint points plugin processes started from now on (they inherit this process's
// environment) at the EC2 endpoint url, with fake credentials and no instance metadata.
func UseEndpoint(url string) {
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_EC2":      url,
		"AWS_ACCESS_KEY_ID":         "AKIAHARNESS",
		"AWS_SECRET_ACCESS_KEY":     "harness-secret",
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		_ = os.Setenv(k, v)
	}
}

// PluginArgs makes this process look like `velero server` to Velero's plugin client, which
// passes os.Args[2:] on to every plugin process: call it after parsing this process's own
// flags, which are not for the plugin.
func PluginArgs() {
	os.Args = []string{os.Args[0], "server"}
}

// ServeBuiltinPlugins answers the call Velero's plugin registry makes to its own binary
// (os.Args[0] run-plugins) to list the plugins built into the server. This process plays the
// server and has none: it serves an empty plugin set and exits when the registry is done.
// Call it first thing in main and TestMain of every program that uses ProcessPlugins;
// without it the registry would start this whole program again, recursively.
func ServeBuiltinPlugins() {
	if len(os.Args) > 1 && os.Args[1] == "run-plugins" {
		framework.NewServer().Serve()
		os.Exit(0)
	}
}

// Provider is the VolumeSnapshotLocation provider the harness uses by default.
const Provider = ebs.VolumeSnapshotterName
