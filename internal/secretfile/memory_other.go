//go:build !linux

package secretfile

import (
	"errors"
	"os"
)

// memoryFilesExist says the system has no memory files: files go to disk, as documented.
const memoryFilesExist = false

// errNoMemoryFiles is why files go to disk on systems other than Linux.
var errNoMemoryFiles = errors.New("no anonymous memory files on this system")

func memoryFile(string, []byte) (*os.File, error) { return nil, errNoMemoryFiles }

func memoryPath(*os.File) string { return "" }

func replace(_, _ *os.File) error { return errNoMemoryFiles }
