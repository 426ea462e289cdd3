package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// root is the module root, where the Makefile and the Dockerfile are.
const root = "../.."

// Every build of the plugin a user runs stamps it with the same linker flags: `make build`
// (from git), the Dockerfile (from its build arguments); the image command's build is checked
// by its own test, which runs the stamped plugin.
func TestEveryBuildStampsThePlugin(t *testing.T) {
	tests := []struct {
		name string
		// text is the build's command line; want the linker flags it must hold.
		text func(t *testing.T) string
		want []string
	}{
		{"make build", func(t *testing.T) string {
			if _, err := exec.LookPath("make"); err != nil {
				t.Skip("no make")
			}
			cmd := exec.Command("make", "-n", "build", "VERSION=v1.2.3-4-gabcdef0", "COMMIT=abcdef0123")
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n build: %v\n%s", err, out)
			}
			return string(out)
		}, []string{`-ldflags "` + LDFlags("v1.2.3-4-gabcdef0", "abcdef0123") + `"`}},
		{"the Dockerfile", func(t *testing.T) string {
			b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}, []string{"ARG VERSION=" + Unstamped + "\n", "ARG COMMIT=" + Unknown + "\n", LDFlags("${VERSION}", "${COMMIT}")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.text(t)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("%s does not hold %q:\n%s", tt.name, w, text)
				}
			}
		})
	}
}

func TestLDFlags(t *testing.T) {
	tests := []struct {
		name, version, commit, want string
	}{
		{"both", "v0.1.0", "abc", "-X " + pkgPath + ".Version=v0.1.0 -X " + pkgPath + ".Commit=abc"},
		{"no commit known", "v0.1.0", "", "-X " + pkgPath + ".Version=v0.1.0"},
		{"nothing known stays unstamped", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LDFlags(tt.version, tt.commit); got != tt.want {
				t.Errorf("LDFlags(%q, %q) = %q, want %q", tt.version, tt.commit, got, tt.want)
			}
		})
	}
}

// pkgPathProbe is a type of this package, whose path -X must name.
type pkgPathProbe struct{}

func TestLDFlagsNameThisPackage(t *testing.T) {
	if got := reflect.TypeOf(pkgPathProbe{}).PkgPath(); got != pkgPath {
		t.Errorf("pkgPath %q, but this package is %q: -X would stamp nothing", pkgPath, got)
	}
}
