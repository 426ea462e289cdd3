// Command image builds the plugin's image for `velero plugin add` without a Docker daemon: the
// image the Dockerfile describes (no base image; the plugin at /plugins and cp-plugin at /bin,
// both static, owned by root and mode 0755; run as 65532:65532 with cp-plugin copying the plugin
// into /target) for each platform, cross-compiled with go build, as one OCI image index written
// to an OCI image layout directory that crane or skopeo can push.
//
//	go run ./internal/cmd/image -out _output/image -platforms linux/amd64,linux/arm64 -tag v0.1.0
//
// The plugin is stamped with the source's version and commit from git, as `make build` does
// (-version and -commit override them).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	// defaultOut is the layout directory `make image` writes.
	defaultOut = "_output/image"
	// defaultPlatforms are the platforms the Dockerfile's buildx command builds.
	defaultPlatforms = "linux/amd64,linux/arm64"
)

// refName is the grammar of org.opencontainers.image.ref.name in the OCI image layout spec.
var refName = regexp.MustCompile(`^[A-Za-z0-9]+(?:(?:[-._:@+]|--)[A-Za-z0-9]+)*(?:/[A-Za-z0-9]+(?:(?:[-._:@+]|--)[A-Za-z0-9]+)*)*$`)

func main() {
	out := flag.String("out", defaultOut, "OCI image layout directory to write; a layout already there is replaced")
	platforms := flag.String("platforms", defaultPlatforms, "comma-separated linux/ARCH platforms to build")
	tag := flag.String("tag", "", "name of the index in the layout (annotation "+refNameAnnotation+"), e.g. v0.1.0")
	ver := flag.String("version", "", "version to stamp the plugin with (default: git describe --tags --always --dirty)")
	commit := flag.String("commit", "", "commit to stamp the plugin with (default: git rev-parse HEAD)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	st := gitStamp(ctx)
	if *ver != "" {
		st.version = *ver
	}
	if *commit != "" {
		st.commit = *commit
	}
	if err := run(ctx, *out, *platforms, *tag, st, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run builds the image of every platform in the comma-separated list, the plugin stamped with
// st, writes the index to the layout directory out under the name tag (none when empty) and
// prints its digests to w.
func run(ctx context.Context, out, platformList, tag string, st stamp, w io.Writer) error {
	if tag != "" && !refName.MatchString(tag) {
		return fmt.Errorf("-tag %q is not a valid %s", tag, refNameAnnotation)
	}
	platforms, err := parsePlatforms(platformList)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "velero-plugin-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	idx, err := buildIndex(ctx, work, platforms, goBuild(st))
	if err != nil {
		return err
	}
	if err := writeLayout(out, idx, tag); err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", out, err)
	}
	return printDigests(w, out, tag, idx)
}

// printDigests prints the digest of each platform's manifest and of the index.
func printDigests(w io.Writer, out, tag string, idx v1.ImageIndex) error {
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	for _, d := range m.Manifests {
		fmt.Fprintf(w, "%-12s %s\n", d.Platform, d.Digest)
	}
	fmt.Fprintf(w, "%-12s %s in %s", "index", digest, out)
	if tag != "" {
		fmt.Fprintf(w, " as %s", tag)
	}
	fmt.Fprintln(w)
	return nil
}
