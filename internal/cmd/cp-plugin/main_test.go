package main

import (
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
}
