package main

import (
	"testing"
)

// What `go build -v` writes: the lines naming a package count as compiled, the others are what
// a failed build shows.
func TestBuildOutput(t *testing.T) {
	for _, tt := range []struct {
		name, written string
		packages      int
		errors        string
	}{
		{"nothing compiled: a warm cache", "", 0, ""},
		{"each package compiled counts once", "runtime\nk8s.io/api/core/v1\ngithub.com/velero-async/velero-plugin-for-aws\n", 3, ""},
		{"a compile error is shown, its packages not counted", "runtime\n# example.com/broken\n./x.go:3:2: undefined: y\n", 1,
			"# example.com/broken\n./x.go:3:2: undefined: y"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b buildOutput
			if _, err := b.Write([]byte(tt.written)); err != nil {
				t.Fatal(err)
			}
			if n := b.packages(); n != tt.packages {
				t.Errorf("%d packages, want %d", n, tt.packages)
			}
			if e := b.errors(); e != tt.errors {
				t.Errorf("errors %q, want %q", e, tt.errors)
			}
		})
	}
}
