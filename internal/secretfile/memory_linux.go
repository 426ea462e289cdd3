package secretfile

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// memoryFilesExist says the system has memory files: a fallback to disk is worth a warning.
const memoryFilesExist = true

// memoryFile returns an anonymous memory file holding data, sealed against any change, whose
// memoryPath a reader opens.
func memoryFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	m := os.NewFile(uintptr(fd), name)
	if _, err := m.Write(data); err != nil {
		m.Close()
		return nil, fmt.Errorf("writing a memory file: %w", err)
	}
	if _, err := unix.FcntlInt(m.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		m.Close()
		return nil, fmt.Errorf("sealing a memory file: %w", err)
	}
	if _, err := os.Stat(memoryPath(m)); err != nil {
		m.Close()
		return nil, fmt.Errorf("a memory file has no path a reader can open (is /proc mounted?): %w", err)
	}
	return m, nil
}

// memoryPath is the path by which a memory file of this process is opened, by this process and
// by the processes it starts (the object-store plugin reading a storage location's credentials
// file), which /proc/self would name their own descriptors for.
func memoryPath(m *os.File) string { return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), m.Fd()) }

// replace makes old's descriptor name m's file, in one step: a reader opening old's path gets
// either file whole. m's own descriptor is left to the caller to close.
func replace(old, m *os.File) error {
	if err := unix.Dup3(int(m.Fd()), int(old.Fd()), unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("replacing a memory file: %w", err)
	}
	return nil
}
