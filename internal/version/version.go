// Package version is the plugin binary's version and commit, stamped at build time with
//
//	go build -ldflags "-X github.com/velero-async/velero-plugin-for-aws/internal/version.Version=v0.1.0 \
//	  -X github.com/velero-async/velero-plugin-for-aws/internal/version.Commit=$(git rev-parse HEAD)"
//
// as `make build`, `make image` and the Dockerfile do. An unstamped build (go build, go test)
// says Unstamped and Unknown.
package version

import "strings"

// The values of an unstamped build.
const (
	Unstamped = "dev"
	Unknown   = "unknown"
)

// Version is `git describe --tags --always --dirty` of the source built; Commit its full commit
// hash. Both are set by the linker (-X); they are variables for that reason only.
var (
	Version = Unstamped
	Commit  = Unknown
)

// pkgPath is this package's import path, which -X names.
const pkgPath = "github.com/velero-async/velero-plugin-for-aws/internal/version"

// String is the version and commit as the binary prints them: "v0.1.0 (commit 1a2b3c…)".
func String() string { return Version + " (commit " + Commit + ")" }

// LDFlags are the linker flags that stamp version and commit; an empty value keeps the
// unstamped one.
func LDFlags(version, commit string) string {
	var f []string
	if version != "" {
		f = append(f, "-X "+pkgPath+".Version="+version)
	}
	if commit != "" {
		f = append(f, "-X "+pkgPath+".Commit="+commit)
	}
	return strings.Join(f, " ")
}
