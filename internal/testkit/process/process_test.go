package process

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// execWait bounds how long a started child takes to exec its binary.
const execWait = 5 * time.Second

func TestFindsEnvironsAndKillsAChild(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command(sleep, "60")
	cmd.Env = []string{"PROCESS_TEST=1"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	if !slices.Contains(Children(os.Getpid()), pid) {
		t.Fatalf("Children(%d) lacks %d", os.Getpid(), pid)
	}
	// Start returns once the child is forked, maybe before it has exec'd sleep: wait for that.
	deadline := time.Now().Add(execWait)
	for !slices.Equal(Running(os.Getpid(), sleep), []int{pid}) {
		if time.Now().After(deadline) {
			exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			t.Fatalf("Running(%s) = %v after %s, want [%d] (its executable is %s)", sleep, Running(os.Getpid(), sleep), execWait, pid, exe)
		}
		time.Sleep(reapPoll)
	}
	if got := Running(os.Getpid(), "/no/such/binary"); len(got) != 0 {
		t.Errorf("Running(/no/such/binary) = %v", got)
	}
	if env, err := Environ(pid); err != nil || !slices.Contains(env, "PROCESS_TEST=1") {
		t.Errorf("Environ = %v, %v", env, err)
	}
	if peakResident(pid) <= 0 {
		t.Errorf("no peak resident memory for %d", pid)
	}
	Kill([]int{pid})
	<-waited
	if slices.Contains(Children(os.Getpid()), pid) {
		t.Errorf("%d still a child after Kill", pid)
	}
}

func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		n    int
		want string
	}{{2, "b\nc"}, {5, "a\nb\nc"}}
	for _, tc := range tests {
		if got := LogTail(path, tc.n); got != tc.want {
			t.Errorf("LogTail(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := LogTail(filepath.Join(t.TempDir(), "none"), 3); got != "" {
		t.Errorf("LogTail of a missing file = %q", got)
	}
}
