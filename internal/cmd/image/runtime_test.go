package main

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// This file is a minimal container runtime for the tests: it reads an OCI image layout with
// nothing but the OCI image spec (not the library that wrote it), checks every blob against its
// digest, applies the layers into a root filesystem and runs the entrypoint there. It refuses
// what the image must not need: whiteouts, devices, and any path or symlink that leads out of
// the root (os.Root), absolute symlinks included.

// OCI media types a runtime accepts for this image.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayerGz  = "application/vnd.oci.image.layer.v1.tar+gzip"
	// layoutVersion is the imageLayoutVersion of the oci-layout file.
	layoutVersion = "1.0.0"
	// sha256Prefix starts every digest this image uses.
	sha256Prefix = "sha256:"
)

// ociPlatform, ociDescriptor, ociIndex, ociManifest and ociConfig are the fields of the OCI
// image spec a runtime reads to start this image.
type ociPlatform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *ociPlatform      `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ociIndex struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Manifests     []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Config        ociDescriptor   `json:"config"`
	Layers        []ociDescriptor `json:"layers"`
}

type ociConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		Entrypoint []string `json:"Entrypoint"`
		Cmd        []string `json:"Cmd"`
		Env        []string `json:"Env"`
		User       string   `json:"User"`
		WorkingDir string   `json:"WorkingDir"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// ociLayout is an OCI image layout directory.
type ociLayout string

// container is an image unpacked for one platform.
type container struct {
	// Manifest is the platform's manifest digest.
	Manifest string
	// Config is the image's configuration.
	Config ociConfig
	// Rootfs is the directory the layers were applied to.
	Rootfs string
	// Headers are the layers' tar headers by cleaned path, the last layer's winning.
	Headers map[string]*tar.Header
}

// named reads the layout's index.json and returns its entry named ref.
func (l ociLayout) named(ref string) (ociDescriptor, error) {
	var marker struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := l.readJSON("oci-layout", &marker); err != nil || marker.Version != layoutVersion {
		return ociDescriptor{}, fmt.Errorf("oci-layout: version %q, %v; want %s", marker.Version, err, layoutVersion)
	}
	var top ociIndex
	if err := l.readJSON("index.json", &top); err != nil {
		return ociDescriptor{}, err
	}
	i := slices.IndexFunc(top.Manifests, func(d ociDescriptor) bool { return d.Annotations[refNameAnnotation] == ref })
	if i < 0 {
		return ociDescriptor{}, fmt.Errorf("index.json names no %q in %+v", ref, top.Manifests)
	}
	return top.Manifests[i], nil
}

// index reads the image index the layout's entry named ref points to.
func (l ociLayout) index(ref string) (ociIndex, error) {
	d, err := l.named(ref)
	if err != nil {
		return ociIndex{}, err
	}
	var idx ociIndex
	if err := l.blobJSON(d, mediaTypeIndex, &idx); err != nil {
		return ociIndex{}, err
	}
	return idx, nil
}

// pull unpacks the image of platform from the index named ref into rootfs, as a runtime does:
// the platform's manifest, its config, then each layer in order, each checked against its
// digest and the config's diff IDs.
func (l ociLayout) pull(ref string, platform ociPlatform, rootfs string) (*container, error) {
	idx, err := l.index(ref)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(idx.Manifests, func(d ociDescriptor) bool { return d.Platform != nil && *d.Platform == platform })
	if i < 0 {
		return nil, fmt.Errorf("the index has no manifest for %+v: %+v", platform, idx.Manifests)
	}
	var m ociManifest
	if err := l.blobJSON(idx.Manifests[i], mediaTypeManifest, &m); err != nil {
		return nil, err
	}
	c := &container{Manifest: idx.Manifests[i].Digest, Rootfs: rootfs, Headers: map[string]*tar.Header{}}
	if err := l.blobJSON(m.Config, mediaTypeConfig, &c.Config); err != nil {
		return nil, err
	}
	if len(c.Config.RootFS.DiffIDs) != len(m.Layers) {
		return nil, fmt.Errorf("config lists %d diff IDs for %d layers", len(c.Config.RootFS.DiffIDs), len(m.Layers))
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for i, d := range m.Layers {
		if err := l.applyLayer(root, d, c.Config.RootFS.DiffIDs[i], c.Headers); err != nil {
			return nil, fmt.Errorf("layer %d (%s): %w", i, d.Digest, err)
		}
	}
	return c, nil
}

// readJSON decodes the layout's file name into v.
func (l ociLayout) readJSON(name string, v any) error {
	data, err := os.ReadFile(filepath.Join(string(l), name))
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// blobPath is the file of the blob with digest d.
func (l ociLayout) blobPath(d string) (string, error) {
	hexDigest, ok := strings.CutPrefix(d, sha256Prefix)
	if _, err := hex.DecodeString(hexDigest); !ok || err != nil || len(hexDigest) != 2*sha256.Size {
		return "", fmt.Errorf("digest %q is not a sha256 digest", d)
	}
	return filepath.Join(string(l), "blobs", "sha256", hexDigest), nil
}

// blobJSON reads the blob d describes, checks its media type, size and digest, and decodes it
// into v.
func (l ociLayout) blobJSON(d ociDescriptor, mediaType string, v any) error {
	if d.MediaType != mediaType {
		return fmt.Errorf("blob %s is a %q, want %q", d.Digest, d.MediaType, mediaType)
	}
	file, err := l.blobPath(d.Digest)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := checkDigest(d, int64(len(data)), sha256.Sum256(data)); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// checkDigest reports whether a blob of size bytes with sum matches its descriptor.
func checkDigest(d ociDescriptor, size int64, sum [sha256.Size]byte) error {
	if got := sha256Prefix + hex.EncodeToString(sum[:]); size != d.Size || got != d.Digest {
		return fmt.Errorf("blob is %s of %d bytes, its descriptor says %s of %d", got, size, d.Digest, d.Size)
	}
	return nil
}

// applyLayer unpacks the gzip-compressed tar layer d into root, then checks the compressed
// bytes against d and the uncompressed ones against diffID.
func (l ociLayout) applyLayer(root *os.Root, d ociDescriptor, diffID string, headers map[string]*tar.Header) error {
	if d.MediaType != mediaTypeLayerGz {
		return fmt.Errorf("layer media type %q, want %q", d.MediaType, mediaTypeLayerGz)
	}
	file, err := l.blobPath(d.Digest)
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	compressed, uncompressed := sha256.New(), sha256.New()
	counted := &countingReader{r: io.TeeReader(f, compressed)}
	zr, err := gzip.NewReader(counted)
	if err != nil {
		return err
	}
	if err := applyTar(root, io.TeeReader(zr, uncompressed), headers); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, counted); err != nil { // the gzip trailer and any padding
		return err
	}
	if err := checkDigest(d, counted.n, [sha256.Size]byte(compressed.Sum(nil))); err != nil {
		return err
	}
	if got := sha256Prefix + hex.EncodeToString(uncompressed.Sum(nil)); got != diffID {
		return fmt.Errorf("uncompressed layer is %s, the config's diff ID %s", got, diffID)
	}
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// applyTar writes the entries of the tar r into root with their modes, recording each header
// by cleaned path. Every name is resolved inside root: a name or symlink leading out of it is an
// error, and nothing is written outside.
func applyTar(root *os.Root, r io.Reader, headers map[string]*tar.Header) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			_, err = io.Copy(io.Discard, r) // the tar's end padding, so the diff ID covers it all
			return err
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		if err := applyEntry(root, name, h, tr); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
		headers[name] = h
	}
}

// applyEntry creates one tar entry, name, in root.
func applyEntry(root *os.Root, name string, h *tar.Header, content io.Reader) error {
	mode := os.FileMode(h.Mode).Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, mode); err != nil {
			return err
		}
	case tar.TypeReg:
		if err := root.MkdirAll(path.Dir(name), entryMode); err != nil {
			return err
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, content); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	case tar.TypeSymlink:
		return root.Symlink(h.Linkname, name)
	default:
		return fmt.Errorf("tar entry type %q is not supported", h.Typeflag)
	}
	return root.Chmod(name, mode) // past the umask
}

// command is the container's entrypoint and command as a process on the host: the binary from
// the rootfs, every absolute argument mapped into the rootfs or, below a mount point of mounts
// (container path -> host directory), into that directory; the config's environment only, and
// its working directory.
func (c *container) command(ctx context.Context, mounts map[string]string) *exec.Cmd {
	args := slices.Concat(c.Config.Config.Entrypoint, c.Config.Config.Cmd)
	for i, a := range args {
		args[i] = c.hostPath(a, mounts)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append([]string{}, c.Config.Config.Env...) // not this process's environment
	cmd.Dir = c.hostPath(cmp.Or(c.Config.Config.WorkingDir, "/"), mounts)
	return cmd
}

// hostPath maps the container path p to the host, leaving arguments that are not absolute paths.
func (c *container) hostPath(p string, mounts map[string]string) string {
	if !path.IsAbs(p) {
		return p
	}
	for mount, dir := range mounts {
		if rest, ok := strings.CutPrefix(p, mount); ok && (rest == "" || rest[0] == '/') {
			return filepath.Join(dir, filepath.FromSlash(rest))
		}
	}
	return filepath.Join(c.Rootfs, filepath.FromSlash(p))
}
