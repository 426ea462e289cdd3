// Package rig is the one rig of every suite: the EC2 simulator, the plugin binary built once per
// `go test` run, Velero core (internal/testkit/harness) reaching the plugin through Velero's own
// plugin client, and the checks on EC2 state (duplicates, leaks, the copies of a source).
package rig

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vmware-tanzu/velero/pkg/plugin/framework"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
)

const (
	// PluginBinaryName is the file name of the built plugin in its plugin directory.
	PluginBinaryName = "velero-plugin-for-aws-async"
	// pluginPackage is the import path of the plugin's main package (the module root).
	pluginPackage = "github.com/velero-async/velero-plugin-for-aws"
)

// Plugin is a built plugin binary in a directory of its own, ready for Velero's plugin registry.
type Plugin struct {
	// Dir is the plugin directory (Velero's --plugin-dir).
	Dir string
	// Binary is the absolute path of the plugin executable.
	Binary string
	// shared marks a build other test binaries of the same go test run use too.
	shared bool
}

// BuildPlugin compiles the plugin from the module root into a new temporary directory.
// Call Remove when done.
func BuildPlugin(ctx context.Context) (*Plugin, error) {
	dir, err := os.MkdirTemp("", "velero-plugins-")
	if err != nil {
		return nil, err
	}
	p := &Plugin{Dir: dir, Binary: filepath.Join(dir, PluginBinaryName)}
	if err := build(ctx, p.Binary); err != nil {
		p.Remove()
		return nil, err
	}
	return p, nil
}

// SharedPlugin is the plugin built once for every test binary that one `go test` run starts:
// the first to ask builds it into a directory named after the go command's process, the others
// wait for that build (a file lock) and use it. Directories of go test runs that have ended are
// removed on the way. A test binary not started by the go command gets a build of its own.
func SharedPlugin(ctx context.Context) (*Plugin, error) {
	if !startedByGo() {
		return BuildPlugin(ctx)
	}
	base := filepath.Join(os.TempDir(), "velero-async-plugin")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(base, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	removeEndedRuns(base)
	dir := filepath.Join(base, strconv.Itoa(os.Getppid()))
	p := &Plugin{Dir: dir, Binary: filepath.Join(dir, PluginBinaryName), shared: true}
	if _, err := os.Stat(p.Binary); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := build(ctx, p.Binary+".tmp"); err != nil {
		return nil, err
	}
	return p, os.Rename(p.Binary+".tmp", p.Binary)
}

// startedByGo reports whether this process's parent is the go command.
func startedByGo() bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", os.Getppid()))
	return err == nil && filepath.Base(exe) == "go"
}

// removeEndedRuns removes the builds of go test runs whose process is gone.
func removeEndedRuns(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

func build(ctx context.Context, binary string) error {
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, pluginPackage)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the plugin: %w\n%s", err, out)
	}
	return nil
}

// Remove deletes the plugin directory, unless other test binaries share it.
func (p *Plugin) Remove() {
	if !p.shared {
		_ = os.RemoveAll(p.Dir)
	}
}

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

// PIDs lists the plugin processes this process has running.
func (p *Plugin) PIDs() []int { return process.Running(os.Getpid(), p.Binary) }

// Running counts the plugin processes this process has running.
func (p *Plugin) Running() int { return len(p.PIDs()) }

// KillPlugins kills every running plugin process started by this process and waits until they
// are reaped, so that Velero's restartable process notices and starts a new one on its next
// call. It returns how many it killed.
func (p *Plugin) KillPlugins() int {
	pids := p.PIDs()
	process.Kill(pids)
	return len(pids)
}

// SampleMemory starts sampling the peak resident memory of this process's plugin processes.
func (p *Plugin) SampleMemory(interval time.Duration) *process.MemorySampler {
	return process.SampleMemory(os.Getpid(), p.Binary, interval)
}

// harnessKey is the access key of plugin processes' environment.
var harnessKey = ec2sim.AccessKey{AccessKeyID: "AKIAHARNESS", SecretAccessKey: "harness-secret"}

// UseEndpoint points plugin processes started from now on (they inherit this process's
// environment) at the EC2 and STS endpoint url, with fake credentials and no instance metadata.
func UseEndpoint(url string) {
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_EC2":      url,
		"AWS_ENDPOINT_URL_STS":      url,
		"AWS_ACCESS_KEY_ID":         harnessKey.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY":     harnessKey.SecretAccessKey,
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
// Call it first thing in main and TestMain of every program that uses harness.ProcessPlugins;
// without it the registry would start this whole program again, recursively.
func ServeBuiltinPlugins() {
	if len(os.Args) > 1 && os.Args[1] == "run-plugins" {
		framework.NewServer().Serve()
		os.Exit(0)
	}
}
