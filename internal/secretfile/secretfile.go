// Package secretfile holds the content of credentials files where the AWS SDK can read it: the
// SDK takes shared credentials and config only by path. Where the system allows, nothing of
// them touches disk: on Linux each file is an anonymous memory file (memfd_create), named
// /proc/PID/fd/N (readable by the processes it starts too), which lives in the process's
// memory and goes with the process however it ends, SIGKILL and the OOM killer included. Elsewhere (macOS), or where the kernel, a seccomp
// profile or a missing /proc refuse memory files, each is a file of mode 0600 in a private
// temporary directory that Close removes; a process killed before Close leaves it.
package secretfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Files are credentials files, each under a name, at a path the AWS SDK reads. A Files is safe
// for concurrent use.
type Files struct {
	prefix string
	warn   func(string)

	mu sync.Mutex
	// mem are the memory files by name; dir holds the files on disk, once one is written.
	mem map[string]*os.File
	dir string
	// content is each file's content, by name, as last put.
	content map[string][]byte
	// diskOnly makes every file go to disk (the fallback, once memory files were refused).
	diskOnly bool
	closed   bool
}

// New returns Files whose files on disk, if any, go to a directory of the temporary directory
// named after prefix. warn, when not nil, is told once why files go to disk on a system that
// has memory files.
func New(prefix string, warn func(string)) *Files {
	return &Files{prefix: prefix, warn: warn, mem: map[string]*os.File{}, content: map[string][]byte{}}
}

// errClosed is Put's error once Close was called.
var errClosed = errors.New("credentials files already closed")

// Put makes the file name hold data and returns its path, the same path for a name each time:
// a file whose content changes is replaced whole, so that a reader never sees part of it.
func (f *Files) Put(name string, data []byte) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return "", errClosed
	}
	if old, ok := f.content[name]; ok && bytes.Equal(old, data) {
		return f.path(name), nil
	}
	if !f.diskOnly {
		err := f.putInMemory(name, data)
		if err == nil {
			f.content[name] = bytes.Clone(data)
			return f.path(name), nil
		}
		if f.warn != nil && memoryFilesExist {
			f.warn(fmt.Sprintf("credentials files go to a private temporary directory removed on exit, not to memory: %v", err))
		}
		f.diskOnly = true
	}
	if err := f.putOnDisk(name, data); err != nil {
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	f.content[name] = bytes.Clone(data)
	return f.path(name), nil
}

// path is where the file name is read. Callers hold f.mu.
func (f *Files) path(name string) string {
	if m, ok := f.mem[name]; ok {
		return memoryPath(m)
	}
	return filepath.Join(f.dir, name)
}

// putInMemory puts data in the memory file name, replacing the one there atomically. Callers
// hold f.mu.
func (f *Files) putInMemory(name string, data []byte) error {
	m, err := memoryFile(name, data)
	if err != nil {
		return err
	}
	old, ok := f.mem[name]
	if !ok {
		f.mem[name] = m
		return nil
	}
	defer m.Close()
	return replace(old, m)
}

// putOnDisk writes data to name in the private directory, renamed into place. Callers hold f.mu.
func (f *Files) putOnDisk(name string, data []byte) error {
	if f.dir == "" {
		dir, err := os.MkdirTemp("", f.prefix) // mode 0700
		if err != nil {
			return err
		}
		f.dir = dir
	}
	tmp, err := os.CreateTemp(f.dir, ".tmp-"+name+"-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(f.dir, name))
}

// InMemory reports whether every file put so far is in memory (true when none was put).
func (f *Files) InMemory() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dir == ""
}

// Close forgets every file: memory files are closed, the directory on disk removed. Paths
// handed out no longer read.
func (f *Files) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	var errs []error
	for _, m := range f.mem {
		errs = append(errs, m.Close())
	}
	if f.dir != "" {
		errs = append(errs, os.RemoveAll(f.dir))
	}
	f.mem, f.content = nil, nil
	return errors.Join(errs...)
}
