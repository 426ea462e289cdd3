package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pluginPIDs lists the running children of this process whose executable is binary.
func pluginPIDs(binary string) []int {
	var pids []int
	for _, pid := range Children(os.Getpid()) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == binary {
			pids = append(pids, pid)
		}
	}
	return pids
}

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

// PIDs lists the plugin processes this process has running.
func (p *Plugin) PIDs() []int { return pluginPIDs(p.Binary) }

// Running counts the plugin processes this process has running.
func (p *Plugin) Running() int { return len(pluginPIDs(p.Binary)) }

// KillPlugins kills every running plugin process started by this process and waits until
// they are reaped, so that Velero's restartable process notices and starts a new one on its
// next call. It returns how many it killed.
func (p *Plugin) KillPlugins() int {
	pids := pluginPIDs(p.Binary)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if len(pids) > 0 {
		// go-plugin marks the client exited just after reaping the process
		time.Sleep(50 * time.Millisecond)
	}
	return len(pids)
}

// MemorySampler samples the peak resident memory (VmHWM) of the plugin's processes.
type MemorySampler struct {
	binary string
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	peak   int64
}

// SampleMemory starts sampling the plugin processes every interval until Stop.
func (p *Plugin) SampleMemory(interval time.Duration) *MemorySampler {
	s := &MemorySampler{binary: p.Binary, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *MemorySampler) sample() {
	for _, pid := range pluginPIDs(s.binary) {
		if kb := vmHWM(pid); kb > 0 {
			s.mu.Lock()
			s.peak = max(s.peak, kb*1024)
			s.mu.Unlock()
		}
	}
}

// Stop ends sampling and returns the peak in bytes of any single plugin process.
func (s *MemorySampler) Stop() int64 {
	close(s.stop)
	<-s.done
	return s.Peak()
}

// Peak returns the highest VmHWM seen so far, in bytes.
func (s *MemorySampler) Peak() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// vmHWM reads a process's peak resident set size in KiB.
func vmHWM(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}
