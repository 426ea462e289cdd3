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

// stagingPattern names the directory in which the copy is made. Velero registers every
// executable file of the plugin directory but never looks into its subdirectories, so nothing
// there is ever taken for a plugin.
const stagingPattern = ".cp-plugin-*"

// copyExecutable copies src into dir under its own name, executable, replacing the target
// atomically: a Velero server starting at the same moment never runs half a binary, and a copy
// killed at any point leaves no executable in dir but the plugin itself.
func copyExecutable(src, dir string) error {
	steps, cleanUp := copySteps(src, dir)
	defer cleanUp()
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// copySteps are copyExecutable's steps in order: the binary is written, synced and made
// executable in a staging subdirectory, then renamed into dir, then the staging directory goes.
// cleanUp removes the staging directory of a copy that failed.
func copySteps(src, dir string) (steps []func() error, cleanUp func()) {
	var staging, tmp string
	cleanUp = func() {
		if staging != "" {
			os.RemoveAll(staging)
		}
	}
	return []func() error{
		func() (err error) {
			staging, err = os.MkdirTemp(dir, stagingPattern)
			return err
		},
		func() error {
			tmp = filepath.Join(staging, filepath.Base(src))
			return writeSynced(src, tmp)
		},
		func() error { return os.Chmod(tmp, 0o755) },
		func() error { return os.Rename(tmp, filepath.Join(dir, filepath.Base(src))) },
		func() error { return os.RemoveAll(staging) },
	}, cleanUp
}

// writeSynced copies src to a new file dst, not executable, and syncs it to disk.
func writeSynced(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
