package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/version"
)

const (
	// pluginPackage is the plugin's main package (the module root).
	pluginPackage = "github.com/velero-async/velero-plugin-for-aws"
	// cpPluginPackage is the image's entrypoint, which copies the plugin into Velero's volume.
	cpPluginPackage = pluginPackage + "/internal/cmd/cp-plugin"
	// pluginPath and cpPluginPath are where the image holds the two binaries.
	pluginPath   = "/plugins/velero-plugin-for-aws-async"
	cpPluginPath = "/bin/cp-plugin"
	// targetDir is where Velero's init container mounts the plugins volume.
	targetDir = "/target"
	// imageUser is the user the image runs as (the Dockerfile's USER): not root, and not the
	// owner of the files, which are root's.
	imageUser = "65532:65532"
	// entryMode is the mode of the binaries and of their directories in the layer.
	entryMode = 0o755
	// linuxOS is the only OS Velero runs plugins on.
	linuxOS = "linux"
	// refNameAnnotation names an index in an OCI image layout (what `skopeo copy oci:DIR:NAME` picks).
	refNameAnnotation = "org.opencontainers.image.ref.name"
	// createdBy is the layer's history entry.
	createdBy = "go run ./internal/cmd/image: the plugin and cp-plugin"
)

// epoch is every timestamp in the image, so that the same sources give the same digests.
var epoch = time.Unix(0, 0).UTC()

// binaries are the image's files: the main package each is built from, by its path in the image.
var binaries = map[string]string{
	pluginPath:   pluginPackage,
	cpPluginPath: cpPluginPackage,
}

// entrypoint is the Dockerfile's ENTRYPOINT.
var entrypoint = []string{cpPluginPath, pluginPath, targetDir}

// compileFunc builds the main package pkg for platform into the file out.
type compileFunc func(ctx context.Context, platform v1.Platform, pkg, out string) error

// parsePlatforms parses a comma-separated list of linux/ARCH platforms, each named once.
func parsePlatforms(list string) ([]v1.Platform, error) {
	var platforms []v1.Platform
	for _, s := range strings.Split(list, ",") {
		p, err := v1.ParsePlatform(s)
		switch {
		case err != nil:
			return nil, fmt.Errorf("platform %q: %w", s, err)
		case p.OS != linuxOS || p.Architecture == "":
			return nil, fmt.Errorf("platform %q: want %s/ARCH, the OS Velero runs plugins on", s, linuxOS)
		case p.Variant != "" || p.OSVersion != "":
			return nil, fmt.Errorf("platform %q: variants and OS versions are not supported", s)
		case slices.ContainsFunc(platforms, p.Equals):
			return nil, fmt.Errorf("platform %q is listed twice", s)
		}
		platforms = append(platforms, *p)
	}
	return platforms, nil
}

// stamp is the version and commit the plugin is stamped with (internal/version); an empty
// value leaves the unstamped one.
type stamp struct{ version, commit string }

// gitStamp is the source's stamp as `make build` makes it: `git describe --tags --always
// --dirty` and the commit. Outside a git work tree (a source archive) the plugin stays unstamped.
func gitStamp(ctx context.Context) stamp {
	var s stamp
	if out, err := exec.CommandContext(ctx, "git", "describe", "--tags", "--always", "--dirty").Output(); err == nil {
		s.version = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
		s.commit = strings.TrimSpace(string(out))
	}
	return s
}

// goBuild returns the compileFunc that cross-compiles as the Dockerfile does: static
// (CGO_ENABLED=0), -trimpath and stripped, the plugin stamped with st.
func goBuild(st stamp) compileFunc {
	return func(ctx context.Context, platform v1.Platform, pkg, out string) error {
		ldflags := "-s -w"
		if f := version.LDFlags(st.version, st.commit); pkg == pluginPackage && f != "" {
			ldflags += " " + f
		}
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags="+ldflags, "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+platform.OS, "GOARCH="+platform.Architecture)
		if output, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s for %s: %w\n%s", pkg, platform, err, output)
		}
		return nil
	}
}

// buildIndex builds the image of each platform under work with compile and returns their OCI
// image index, in the order of platforms.
func buildIndex(ctx context.Context, work string, platforms []v1.Platform, compile compileFunc) (v1.ImageIndex, error) {
	adds := make([]mutate.IndexAddendum, 0, len(platforms))
	for _, p := range platforms {
		img, err := buildImage(ctx, filepath.Join(work, p.OS+"-"+p.Architecture), p, compile)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.AppendManifests(empty.Index, adds...), nil
}

// buildImage compiles the binaries for platform into dir/rootfs, packs them into dir/layer.tar
// and returns the platform's image of that one layer. The image reads the layer file when it is
// written, so dir must stay until then.
func buildImage(ctx context.Context, dir string, platform v1.Platform, compile compileFunc) (v1.Image, error) {
	rootfs := filepath.Join(dir, "rootfs")
	for _, imagePath := range slices.Sorted(maps.Keys(binaries)) {
		out := filepath.Join(rootfs, filepath.FromSlash(imagePath))
		if err := os.MkdirAll(filepath.Dir(out), entryMode); err != nil {
			return nil, err
		}
		if err := compile(ctx, platform, binaries[imagePath], out); err != nil {
			return nil, err
		}
	}
	layerFile := filepath.Join(dir, "layer.tar")
	if err := writeLayerFile(layerFile, rootfs); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	layer, err := tarball.LayerFromFile(layerFile, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	return platformImage(platform, layer)
}

// writeLayerFile writes the tar of the layer to file: the binaries from rootfs at their paths.
func writeLayerFile(file, rootfs string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := writeLayer(f, rootfs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeLayer writes the binaries from rootfs, each at its image path after its parent
// directories, as a tar owned by root with mode entryMode and the epoch as every time.
func writeLayer(w io.Writer, rootfs string) error {
	tw := tar.NewWriter(w)
	written := map[string]bool{}
	for _, imagePath := range slices.Sorted(maps.Keys(binaries)) {
		name := strings.TrimPrefix(imagePath, "/")
		for _, dir := range parents(name) {
			if !written[dir] {
				written[dir] = true
				if err := tw.WriteHeader(header(tar.TypeDir, dir+"/", 0)); err != nil {
					return err
				}
			}
		}
		if err := writeFile(tw, name, filepath.Join(rootfs, filepath.FromSlash(name))); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeFile writes the regular file src into tw as name.
func writeFile(tw *tar.Writer, name, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(header(tar.TypeReg, name, info.Size())); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// header is the tar header of a layer entry: owned by root, mode entryMode, at the epoch.
func header(typ byte, name string, size int64) *tar.Header {
	return &tar.Header{Typeflag: typ, Name: name, Size: size, Mode: entryMode, ModTime: epoch, Format: tar.FormatUSTAR}
}

// parents lists the directories above the slash-separated relative name, outermost first.
func parents(name string) []string {
	var dirs []string
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		dirs = append(dirs, dir)
	}
	slices.Reverse(dirs)
	return dirs
}

// platformImage returns the OCI image of platform with layer as its only layer and the
// Dockerfile's entrypoint and user; no base image, so no shell.
func platformImage(platform v1.Platform, layer v1.Layer) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		Created:      v1.Time{Time: epoch},
		OS:           platform.OS,
		Architecture: platform.Architecture,
		RootFS:       v1.RootFS{Type: "layers"},
		Config:       v1.Config{Entrypoint: slices.Clone(entrypoint), User: imageUser},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: createdBy}})
}

// writeLayout writes idx to the OCI image layout directory out, named tag when tag is set,
// replacing the layout out holds. A directory that is not a layout is left alone, and an error.
func writeLayout(out string, idx v1.ImageIndex, tag string) error {
	if err := removeLayout(out); err != nil {
		return err
	}
	lp, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if tag != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{refNameAnnotation: tag}))
	}
	return lp.AppendIndex(idx, opts...)
}

// removeLayout removes the OCI image layout at dir, if there is one; an empty directory or none
// is fine, anything else is an error.
func removeLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0):
		return nil
	case err != nil:
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s holds files but no oci-layout: not replacing it", dir)
	}
	return os.RemoveAll(dir)
}
