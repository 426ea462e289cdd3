package secretfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// onDisk lists the files under dir.
func onDisk(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = append(found, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// What a credentials file reads while it is held, where it lives, and what Close leaves.
func TestFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		// diskOnly plays a system without memory files; inMemory is where the files must be.
		diskOnly, inMemory bool
	}{
		{name: "on Linux the files live in memory only and read as put", inMemory: runtime.GOOS == "linux"},
		{name: "without memory files they live in a private directory that Close removes", diskOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			f := New("velero-async-test-", nil)
			f.diskOnly = tc.diskOnly
			path, err := f.Put("secret-a", []byte("[default]\naws_access_key_id = A\n"))
			if err != nil {
				t.Fatal(err)
			}
			other, err := f.Put("secret-b", []byte("b"))
			if err != nil || other == path {
				t.Fatalf("second file at %q (err %v), the first at %q", other, err, path)
			}
			again, err := f.Put("secret-a", []byte("[default]\naws_access_key_id = B\n"))
			if err != nil || again != path {
				t.Fatalf("rewritten file at %q (err %v), want the same path %q", again, err, path)
			}
			if got, err := os.ReadFile(path); err != nil || string(got) != "[default]\naws_access_key_id = B\n" {
				t.Errorf("%s reads %q (err %v), want the new content", path, got, err)
			}
			if files := onDisk(t, tmp); tc.inMemory != (len(files) == 0) || f.InMemory() != tc.inMemory {
				t.Errorf("files under the temporary directory %v, InMemory %v: want in memory %v", files, f.InMemory(), tc.inMemory)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if files := onDisk(t, tmp); len(files) != 0 {
				t.Errorf("after Close, files are left under the temporary directory: %v", files)
			}
			if _, err := f.Put("secret-c", []byte("c")); err == nil {
				t.Error("Put after Close succeeded")
			}
		})
	}
}

// A memory file's content is sealed: nothing can write it through its path.
func TestMemoryFileSealed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("memory files are Linux's")
	}
	f := New("velero-async-test-", nil)
	defer f.Close()
	path, err := f.Put("secret-a", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("b"), 0o600); err == nil {
		t.Error("a write through the path succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != "a" {
		t.Errorf("%s reads %q, want %q", path, got, "a")
	}
}

// A process this one starts, as the object-store plugin is for a storage location's
// credentials, reads a memory file through the path Put returned.
func TestMemoryFileReadByAChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("memory files are Linux's")
	}
	f := New("velero-async-test-", nil)
	defer f.Close()
	path, err := f.Put("secret-a", []byte("from the parent"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("cat", path).CombinedOutput()
	if err != nil || string(out) != "from the parent" {
		t.Errorf("a child reading %s got %q (%v), want %q", path, out, err, "from the parent")
	}
}
