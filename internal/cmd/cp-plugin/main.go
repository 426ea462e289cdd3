// Command cp-plugin is the entrypoint of the plugin's image: `velero plugin add` runs the image
// as an init container with the plugins volume at /target, and this copies the plugin binary
// there. The image is FROM scratch, so there is no shell or cp to do it.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: cp-plugin SOURCE TARGET-DIR")
		os.Exit(2)
	}
	if err := copyExecutable(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "cp-plugin:", err)
		os.Exit(1)
	}
}

// copyExecutable copies src into dir under its own name, executable, replacing the target
// atomically so a Velero server starting at the same moment never runs half a binary.
func copyExecutable(src, dir string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, ".cp-plugin-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, filepath.Base(src)))
}
