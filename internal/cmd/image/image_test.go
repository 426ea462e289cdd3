package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/sirupsen/logrus"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt/process"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework/common"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

const (
	// testTag names the index in the layouts the tests write.
	testTag = "test"
	// pluginName is the plugin's file name, in the image and in Velero's plugins volume.
	pluginName = "velero-plugin-for-aws-async"
	// othersReadExec are the mode bits that let a user who is neither the owner nor in the
	// group (65532, on root's files) read and run a file, or enter a directory.
	othersReadExec = 0o005
)

// elfMachines are the ELF machines of the architectures the image is built for.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestMain answers the call Velero's plugin registry makes to its own binary for the server's
// built-in plugins (this test binary plays the server), and leaves the plugins Velero starts
// only a server's arguments.
func TestMain(m *testing.M) {
	rig.ServeBuiltinPlugins()
	flag.Parse()
	rig.PluginArgs()
	os.Exit(m.Run())
}

// TestImageRunsAsVeleroInitContainer builds the image for the host as `make image` does,
// unpacks it as a container runtime would and runs its entrypoint as Velero's init container
// does, with /target an empty directory: the plugin must land there, executable, a static ELF
// of the host's architecture that Velero's own plugin registry discovers.
func TestImageRunsAsVeleroInitContainer(t *testing.T) {
	machine, ok := elfMachines[runtime.GOARCH]
	if runtime.GOOS != linuxOS || !ok {
		t.Skipf("the image is built for linux/amd64 and linux/arm64, not the host's %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	// No deadline but go test's own: a cold build takes minutes, more on a busy machine.
	ctx := t.Context()
	dir := t.TempDir()
	out := filepath.Join(dir, "layout")
	var printed strings.Builder
	start := time.Now()
	if err := run(ctx, out, linuxOS+"/"+runtime.GOARCH, testTag, testStamp, &printed); err != nil {
		t.Fatalf("building the image: %v", err)
	}
	t.Logf("built in %v:\n%s", time.Since(start).Round(time.Millisecond), printed.String())

	layout := ociLayout(out)
	c, err := layout.pull(testTag, ociPlatform{OS: linuxOS, Architecture: runtime.GOARCH}, mkdir(t, dir, "rootfs"))
	if err != nil {
		t.Fatalf("unpacking the image: %v", err)
	}
	checkPrinted(t, printed.String(), layout, c)
	checkConfig(t, c.Config, runtime.GOARCH)
	checkEntries(t, c.Headers)

	target := mkdir(t, dir, "target")
	cmd := c.command(ctx, map[string]string{targetDir: target})
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("running the entrypoint %v: %v\n%s", cmd.Args, err, output)
	}
	plugin := checkInstalled(t, target, filepath.Join(c.Rootfs, filepath.FromSlash(pluginPath)))
	checkELF(t, plugin, machine)
	checkDiscovery(t, target)
	checkStamp(t, plugin)
}

// testStamp is what the tests stamp the plugin with.
var testStamp = stamp{version: "v0.0.0-test-1-g0123abc-dirty", commit: "0123abc0123abc0123abc0123abc0123abc0123a"}

// checkStamp checks that the installed plugin's version command prints testStamp.
func checkStamp(t *testing.T, plugin string) {
	t.Helper()
	out, err := exec.Command(plugin, "version").CombinedOutput()
	want := "velero-plugin-for-aws-async " + testStamp.version + " (commit " + testStamp.commit + ")\n"
	if err != nil || string(out) != want {
		t.Errorf("%s version: %q (%v), want %q", plugin, out, err, want)
	}
}

// TestIndexListsEveryPlatform builds the index of every default platform and unpacks each
// platform's image: each is its own manifest, configured for its architecture, with cp-plugin
// built for that architecture. The plugin is a placeholder here: cross-compiling it takes
// minutes on a cold build cache, cp-plugin seconds, and both go through the same goBuild.
func TestIndexListsEveryPlatform(t *testing.T) {
	platforms, err := parsePlatforms(defaultPlatforms)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := buildIndex(t.Context(), t.TempDir(), platforms, cheapCompile)
	if err != nil {
		t.Fatalf("building the index: %v", err)
	}
	out := filepath.Join(t.TempDir(), "layout")
	if err := writeLayout(out, idx, testTag); err != nil {
		t.Fatalf("writing the layout: %v", err)
	}
	layout := ociLayout(out)
	index, err := layout.index(testTag)
	if err != nil {
		t.Fatal(err)
	}
	var listed []ociPlatform
	for _, d := range index.Manifests {
		if d.Platform != nil {
			listed = append(listed, *d.Platform)
		}
	}
	want := []ociPlatform{{OS: linuxOS, Architecture: "amd64"}, {OS: linuxOS, Architecture: "arm64"}}
	if !slices.Equal(listed, want) || len(index.Manifests) != len(want) {
		t.Fatalf("index lists %+v, want one manifest for each of %+v", index.Manifests, want)
	}
	for _, p := range want {
		c, err := layout.pull(testTag, p, t.TempDir())
		if err != nil {
			t.Fatalf("unpacking %s/%s: %v", p.OS, p.Architecture, err)
		}
		checkConfig(t, c.Config, p.Architecture)
		checkEntries(t, c.Headers)
		checkELF(t, filepath.Join(c.Rootfs, filepath.FromSlash(cpPluginPath)), elfMachines[p.Architecture])
	}
}

// cheapCompile builds cp-plugin for real and writes a placeholder for the plugin.
func cheapCompile(ctx context.Context, platform v1.Platform, pkg, out string) error {
	if pkg == pluginPackage {
		return os.WriteFile(out, []byte("placeholder for "+platform.String()), entryMode)
	}
	return goBuild(testStamp)(ctx, platform, pkg, out)
}

// checkPrinted checks that the command printed the digests of the platform's manifest and of
// the index the layout names.
func checkPrinted(t *testing.T, printed string, layout ociLayout, c *container) {
	t.Helper()
	top, err := layout.named(testTag)
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(printed), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			digests[f[0]] = f[1]
		}
	}
	platform := linuxOS + "/" + runtime.GOARCH
	if digests[platform] != c.Manifest || digests["index"] != top.Digest {
		t.Errorf("printed %q, want %s %s and index %s", printed, platform, c.Manifest, top.Digest)
	}
}

// checkConfig checks the config against the Dockerfile: its entrypoint and user, no command,
// the platform's OS and architecture.
func checkConfig(t *testing.T, cfg ociConfig, arch string) {
	t.Helper()
	wantEntrypoint := []string{"/bin/cp-plugin", "/plugins/velero-plugin-for-aws-async", "/target"}
	if !slices.Equal(cfg.Config.Entrypoint, wantEntrypoint) || len(cfg.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q and command %q, want %q and none", cfg.Config.Entrypoint, cfg.Config.Cmd, wantEntrypoint)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cfg.Config.User)
	}
	if cfg.OS != linuxOS || cfg.Architecture != arch || cfg.RootFS.Type != "layers" {
		t.Errorf("config for %s/%s with rootfs type %q, want %s/%s and layers", cfg.OS, cfg.Architecture, cfg.RootFS.Type, linuxOS, arch)
	}
}

// checkEntries checks that the layers hold the two binaries and their directories and nothing
// else (no shell), all root's with mode 0755: user 65532 can enter, read and run them.
func checkEntries(t *testing.T, headers map[string]*tar.Header) {
	t.Helper()
	want := map[string]byte{
		"bin":                                 tar.TypeDir,
		"bin/cp-plugin":                       tar.TypeReg,
		"plugins":                             tar.TypeDir,
		"plugins/velero-plugin-for-aws-async": tar.TypeReg,
	}
	if len(headers) != len(want) {
		t.Errorf("layers hold %v, want only %v", slices.Sorted(maps.Keys(headers)), slices.Sorted(maps.Keys(want)))
	}
	for name, typ := range want {
		h := headers[name]
		switch {
		case h == nil:
			t.Errorf("%s: not in the layers", name)
		case h.Typeflag != typ || h.Uid != 0 || h.Gid != 0 || h.Mode != 0o755 || h.Mode&othersReadExec != othersReadExec:
			t.Errorf("%s: type %q, owner %d:%d, mode %o; want type %q, root's, 0755", name, h.Typeflag, h.Uid, h.Gid, h.Mode, typ)
		}
	}
}

// checkInstalled checks that the target directory holds only the plugin, a full copy of src
// that anyone can read and run (Velero's registry skips files without an executable bit), and
// returns its path.
func checkInstalled(t *testing.T, target, src string) string {
	t.Helper()
	entries, err := os.ReadDir(target)
	if err != nil || len(entries) != 1 || entries[0].Name() != pluginName {
		t.Fatalf("target holds %v (%v), want only %s", entries, err, pluginName)
	}
	plugin := filepath.Join(target, pluginName)
	got, err := os.Stat(plugin)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Mode().IsRegular() || got.Mode().Perm() != 0o755 || got.Size() != want.Size() {
		t.Errorf("installed plugin is %v of %d bytes, want a regular file, mode 0755, of %d", got.Mode(), got.Size(), want.Size())
	}
	return plugin
}

// checkELF checks that file is a static ELF executable for machine: an image with no base has
// no dynamic loader.
func checkELF(t *testing.T, file string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	defer f.Close()
	interp := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	if f.Machine != machine || f.Type != elf.ET_EXEC || interp {
		t.Errorf("%s: %v %v, dynamic loader %v; want a static %v executable", file, f.Machine, f.Type, interp, machine)
	}
}

// checkDiscovery checks that Velero's plugin registry, pointed at dir as the server's
// --plugin-dir, discovers the plugin's volume snapshotter and item actions.
func checkDiscovery(t *testing.T, dir string) {
	t.Helper()
	log := logrus.New()
	registry := process.NewRegistry(dir, log, logrus.InfoLevel)
	if err := registry.DiscoverPlugins(); err != nil {
		t.Fatalf("Velero's plugin discovery in %s: %v", dir, err)
	}
	for _, p := range []struct {
		kind common.PluginKind
		name string
	}{
		{common.PluginKindVolumeSnapshotter, model.VolumeSnapshotterName},
		{common.PluginKindBackupItemActionV2, model.BackupItemActionName},
		{common.PluginKindRestoreItemActionV2, model.RestoreItemActionName},
	} {
		if _, err := registry.Get(p.kind, p.name); err != nil {
			t.Errorf("%s %s not discovered: %v", p.kind, p.name, err)
		}
	}
}

// TestParsePlatforms checks the -platforms lists that are accepted and those refused.
func TestParsePlatforms(t *testing.T) {
	for _, tc := range []struct {
		list    string
		want    []v1.Platform
		wantErr string
	}{
		{list: "linux/amd64,linux/arm64", want: []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}},
		{list: " linux/arm64 ", want: []v1.Platform{{OS: "linux", Architecture: "arm64"}}},
		{list: "", wantErr: `platform "": want linux/ARCH`},
		{list: "linux", wantErr: `platform "linux": want linux/ARCH`},
		{list: "windows/amd64", wantErr: `platform "windows/amd64": want linux/ARCH`},
		{list: "linux/arm/v7", wantErr: `platform "linux/arm/v7": variants`},
		{list: "linux/amd64,linux/amd64", wantErr: `platform "linux/amd64" is listed twice`},
		{list: "linux/a/b/c", wantErr: "too many slashes"},
	} {
		got, err := parsePlatforms(tc.list)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("parsePlatforms(%q) = %v, %v; want an error with %q", tc.list, got, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || !slices.EqualFunc(got, tc.want, v1.Platform.Equals)):
			t.Errorf("parsePlatforms(%q) = %v, %v; want %v", tc.list, got, err, tc.want)
		}
	}
}

// TestRunRejectsBadFlags checks that bad flags are refused, naming the flag, before anything is built.
func TestRunRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		platforms, tag, wantErr string
	}{
		{platforms: defaultPlatforms, tag: "v0.1 beta", wantErr: `-tag "v0.1 beta"`},
		{platforms: defaultPlatforms, tag: "-dev", wantErr: `-tag "-dev"`},
		{platforms: "linux/amd64,darwin/arm64", tag: testTag, wantErr: `platform "darwin/arm64"`},
	} {
		out := filepath.Join(t.TempDir(), "layout")
		err := run(context.Background(), out, tc.platforms, tc.tag, testStamp, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("run(-platforms %q -tag %q) = %v, want an error with %q", tc.platforms, tc.tag, err, tc.wantErr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("run(-platforms %q -tag %q) wrote %s", tc.platforms, tc.tag, out)
		}
	}
}

// smallIndex is an index of one empty image.
var smallIndex = mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: empty.Image})

// TestWriteLayoutReplacesOnlyALayout checks that the layout replaces an earlier one (index.json
// names one index, not one per run) and refuses a directory that holds something else.
func TestWriteLayoutReplacesOnlyALayout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(out string) error
		wantErr string
	}{
		{name: "absent", prepare: func(string) error { return nil }},
		{name: "empty directory", prepare: func(out string) error { return os.Mkdir(out, 0o755) }},
		{name: "earlier layout", prepare: func(out string) error { return writeLayout(out, smallIndex, "old") }},
		{name: "other files", wantErr: "no oci-layout", prepare: func(out string) error {
			return errors.Join(os.Mkdir(out, 0o755), os.WriteFile(filepath.Join(out, "notes"), nil, 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "layout")
			if err := tc.prepare(out); err != nil {
				t.Fatal(err)
			}
			err := writeLayout(out, smallIndex, testTag)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("writeLayout = %v, want an error with %q", err, tc.wantErr)
				}
				if _, err := os.Stat(filepath.Join(out, "notes")); err != nil {
					t.Errorf("the directory's own file is gone: %v", err)
				}
				return
			}
			var top ociIndex
			if err != nil || ociLayout(out).readJSON("index.json", &top) != nil || len(top.Manifests) != 1 ||
				top.Manifests[0].Annotations[refNameAnnotation] != testTag {
				t.Errorf("writeLayout = %v; index.json lists %+v, want only %q", err, top.Manifests, testTag)
			}
		})
	}
}

// TestApplyTarStaysInRoot checks the test runtime itself: entries and symlinks that lead out
// of the root are refused and write nothing outside it, a symlink inside it is followed.
func TestApplyTarStaysInRoot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		entries  []*tar.Header
		wantErr  bool
		wantFile string
	}{
		{name: "dot-dot name", wantErr: true, entries: []*tar.Header{reg("../escaped")}},
		{name: "relative symlink out", wantErr: true, entries: []*tar.Header{link("up", "../.."), reg("up/escaped")}},
		{name: "absolute symlink", wantErr: true, entries: []*tar.Header{link("abs", "/"), reg("abs/escaped")}},
		{name: "symlink inside", wantFile: "bin/ok", entries: []*tar.Header{dirEntry("bin"), link("b", "bin"), reg("b/ok")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outside := t.TempDir()
			rootfs := mkdir(t, outside, "rootfs")
			root, err := os.OpenRoot(rootfs)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			err = applyTar(root, tarOf(t, tc.entries), map[string]*tar.Header{})
			if (err != nil) != tc.wantErr {
				t.Errorf("applyTar = %v, want error %v", err, tc.wantErr)
			}
			if found, _ := filepath.Glob(filepath.Join(outside, "*escaped")); len(found) != 0 {
				t.Errorf("written outside the root: %v", found)
			}
			if _, err := os.Stat(filepath.Join(outside, "..", "escaped")); err == nil {
				t.Errorf("written above the root's parent")
			}
			if tc.wantFile != "" {
				if _, err := os.Stat(filepath.Join(rootfs, tc.wantFile)); err != nil {
					t.Errorf("%s not written: %v", tc.wantFile, err)
				}
			}
		})
	}
}

func reg(name string) *tar.Header { return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644} }
func dirEntry(name string) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755}
}
func link(name, target string) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target}
}

// tarOf is a tar of the entries, regular files empty.
func tarOf(t *testing.T, entries []*tar.Header) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// mkdir creates the directory name in parent and returns its path.
func mkdir(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
