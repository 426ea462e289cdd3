// Package process finds, kills and measures the processes a test starts, through Linux's /proc:
// the plugin processes Velero's plugin client starts, and their children.
package process

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// reapWait bounds how long Kill waits for killed processes to be reaped.
	reapWait = 5 * time.Second
	// reapPoll is how often Kill looks whether they are.
	reapPoll = 5 * time.Millisecond
	// clientNotice is how long after the reaping go-plugin marks its client exited (its Wait
	// goroutine must run first: 50 ms was too short once on a machine at a load of 10, and the
	// next call then reached the dead process's socket, which real Velero records as the
	// operation failing).
	clientNotice = 500 * time.Millisecond
)

// Children lists the running processes whose parent is ppid.
func Children(ppid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && parentOf(pid) == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// Running lists the running children of ppid whose executable is binary (an absolute path,
// symbolic links resolved as the kernel does).
func Running(ppid int, binary string) []int {
	if real, err := filepath.EvalSymlinks(binary); err == nil {
		binary = real
	}
	var pids []int
	for _, pid := range Children(ppid) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == binary {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Environ returns the environment a running process started with.
func Environ(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("process %d: empty environment (exiting?)", pid)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}

// Kill kills the processes with SIGKILL and waits until they are reaped, so that Velero's
// restartable process notices on its next call and starts a new one.
func Kill(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(reapWait)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
				break
			}
			time.Sleep(reapPoll)
		}
	}
	if len(pids) > 0 {
		time.Sleep(clientNotice)
	}
}

// parentOf reads the parent PID from /proc/PID/stat (the field after the parenthesised name).
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 2 {
		return -1
	}
	p, _ := strconv.Atoi(fields[1])
	return p
}

// peakResident reads a process's peak resident set size (VmHWM) in bytes.
func peakResident(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
