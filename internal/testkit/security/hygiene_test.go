package security

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// socketInodes returns the inodes of the sockets a process holds open.
func socketInodes(pid int) map[string]bool {
	out := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			out[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return out
}

// listening returns the process's TCP sockets in state LISTEN and its unconnected UDP sockets
// (which receive from anyone), from /proc/PID/net/{tcp,tcp6,udp,udp6}.
func listening(pid int) []string {
	mine := socketInodes(pid)
	var out []string
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, proto))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !mine[fields[9]] {
				continue
			}
			remote, state := fields[2], fields[3]
			if (strings.HasPrefix(proto, "tcp") && state == "0A") || (strings.HasPrefix(proto, "udp") && strings.Trim(remote, "0:") == "") {
				out = append(out, fmt.Sprintf("%s %s", proto, fields[1]))
			}
		}
		f.Close()
	}
	return out
}

// writableFiles returns the regular files a process holds open for writing outside allowed.
func writableFiles(pid int, allowed ...string) []string {
	var out []string
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "/dev/") {
			continue
		}
		info, _ := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		var flags int64
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, _ = strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			}
		}
		if flags&3 == 0 || slices.ContainsFunc(allowed, func(dir string) bool { return strings.HasPrefix(target, dir+"/") }) {
			continue
		}
		out = append(out, target)
	}
	return out
}

// watcher samples the plugin processes until stopped and collects what they should not do.
type watcher struct {
	plugin     *rig.Plugin
	tmp        string
	stop, done chan struct{}
	mu         sync.Mutex
	seen       map[int]bool
	findings   map[string]bool
}

func watch(plugin *rig.Plugin, tmp string, every time.Duration) *watcher {
	w := &watcher{plugin: plugin, tmp: tmp, stop: make(chan struct{}), done: make(chan struct{}), seen: map[int]bool{}, findings: map[string]bool{}}
	go func() {
		defer close(w.done)
		for {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-time.After(every):
			}
		}
	}()
	return w
}

func (w *watcher) sample() {
	for _, pid := range w.plugin.PIDs() {
		var found []string
		for _, child := range process.Children(pid) {
			exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", child))
			found = append(found, fmt.Sprintf("child process %d (%s)", child, exe))
		}
		for _, l := range listening(pid) {
			found = append(found, "listening socket "+l)
		}
		for _, f := range writableFiles(pid, w.tmp) {
			found = append(found, "file open for writing "+f)
		}
		w.mu.Lock()
		w.seen[pid] = true
		for _, f := range found {
			w.findings[f] = true
		}
		w.mu.Unlock()
	}
}

// Stop ends sampling and returns the plugin processes seen and the findings.
func (w *watcher) Stop() (processes int, findings []string) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for f := range w.findings {
		findings = append(findings, f)
	}
	slices.Sort(findings)
	return len(w.seen), findings
}

// filesUnder lists the files and directories under dir.
func filesUnder(t *testing.T, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && path != dir {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPluginProcessHygiene runs a full backup, restore and deletion while sampling every plugin
// process: none starts a child process (no shell, nothing), none holds a listening TCP or an
// unconnected UDP socket (go-plugin's unix socket is fine), none holds a file open for writing
// outside TMPDIR, and the scratch HOME they get stays empty.
func TestPluginProcessHygiene(t *testing.T) {
	home, tmp := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", tmp)
	env := &rig.Env{Plugin: built, LogDir: t.TempDir(), SyncPeriod: syncPeriod}
	r, err := env.NewRig("hygiene", rig.FastConfig(1), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := watch(built, tmp, 5*time.Millisecond)
	res := cycle{rig: r}.run(t.Context())
	processes, findings := w.Stop()
	if !res.OK() {
		t.Fatalf("the run failed: %s", res.Summary())
	}
	if processes == 0 {
		t.Fatal("no plugin process was seen: nothing was checked")
	}
	for _, f := range findings {
		t.Errorf("a plugin process had %s", f)
	}
	if files := filesUnder(t, home); len(files) > 0 {
		t.Errorf("the plugin wrote into HOME: %v", files)
	}
	t.Logf("%d plugin processes sampled; TMPDIR holds %v", processes, filesUnder(t, tmp))
}

// TestHygieneDetectors checks the detectors on this test process, which does what the plugin
// must not: it listens on TCP, holds a file open for writing and runs a child process.
func TestHygieneDetectors(t *testing.T) {
	srv, err := ec2sim.Start(ec2sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "written"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	child := exec.Command("sleep", "5")
	if err := child.Start(); err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	self := os.Getpid()
	checks := []struct {
		name  string
		found bool
	}{
		{"listening TCP socket", len(listening(self)) > 0},
		{"file open for writing", slices.Contains(writableFiles(self, "/nonexistent"), f.Name())},
		{"file in an allowed directory ignored", !slices.Contains(writableFiles(self, filepath.Dir(f.Name())), f.Name())},
		{"child process", slices.Contains(process.Children(self), child.Process.Pid)},
	}
	for _, c := range checks {
		if !c.found {
			t.Errorf("%s: not detected", c.name)
		}
	}
}
