package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestCopyExecutable(t *testing.T) {
	src := filepath.Join(t.TempDir(), "velero-plugin-for-aws-async")
	if err := os.WriteFile(src, []byte("binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := copyExecutable(src, dir); err != nil {
		t.Fatalf("copyExecutable: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "velero-plugin-for-aws-async"))
	if err != nil || string(got) != "binary" {
		t.Fatalf("target holds %q, %v", got, err)
	}
	info, _ := os.Stat(filepath.Join(dir, "velero-plugin-for-aws-async"))
	if info.Mode().Perm()&0o111 == 0 {
		t.Errorf("target mode %v is not executable", info.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("target dir holds %d entries, want only the plugin", len(entries))
	}
	if err := copyExecutable(filepath.Join(t.TempDir(), "missing"), dir); err == nil {
		t.Error("copying a missing file succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a failed copy the target dir holds %d entries, want only the plugin", len(entries))
	}
}

// Killed after any step, the copy leaves no executable file in the plugin directory that is not
// the whole plugin: Velero would register it as a plugin.
func TestCopyKilledLeavesNoStrayExecutable(t *testing.T) {
	src := filepath.Join(t.TempDir(), "velero-plugin-for-aws-async")
	if err := os.WriteFile(src, []byte("binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	all, _ := copySteps(src, t.TempDir())
	for killedAfter := range len(all) {
		t.Run(fmt.Sprintf("killed after step %d", killedAfter+1), func(t *testing.T) {
			dir := t.TempDir()
			steps, _ := copySteps(src, dir)
			for _, step := range steps[:killedAfter+1] {
				if err := step(); err != nil {
					t.Fatal(err)
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				info, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				if e.IsDir() || info.Mode().Perm()&0o111 == 0 {
					continue // Velero registers only executable files
				}
				got, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				if e.Name() != filepath.Base(src) || string(got) != "binary" {
					t.Errorf("executable %s holding %q in the plugin directory", e.Name(), got)
				}
			}
		})
	}
}
