// Command demo is `make demo`: it compiles the plugin and the demo itself (./story), saying
// how long that takes and printing a line every few seconds while it does, then runs the demo
// with this command's arguments and exits with its status. It uses only the standard library,
// so that `go run` starts it within seconds even with an empty Go build cache; the compiling,
// which then takes minutes, is shown here.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// header is the demo's first lines. Its figures come from `time make demo` on a 2-core machine that other work kept
// busy. With an empty Go build cache and demo cache (GOCACHE and XDG_CACHE_HOME new empty
// directories) compiling took 6¼ minutes of CPU, 11¼ minutes of wall time at a load of 12 and
// 24 at a load of 30; with the caches of an earlier run, 2–4 s. The demo itself ran 36–38 s.
const header = `The demo compiles the plugin and itself first. The first time (an empty Go build cache) that takes about 6 minutes
of CPU: at least 3 minutes on 2 cores, 11 measured on a 2-core machine busy with other work; later runs, seconds.
Then the demo runs about 40 s on the bundled EC2 simulator: no AWS account needed.
`

const (
	// heartbeat is how often a line says how far compiling has come.
	heartbeat = 15 * time.Second
	// storyPackage is the demo itself, relative to the module root; the plugin is the root.
	storyPackage = "./internal/testkit/cmd/demo/story"
	// pluginBinary and storyBinary are the built files' names.
	pluginBinary = "velero-plugin-for-aws-async"
	storyBinary  = "demo-story"
	// cacheName is the directory of the user's cache dir the binaries are built into, so that
	// the go command links them again only when their sources changed.
	cacheName = "velero-async-demo"
	// exitFailed is the exit status when the demo could not be compiled or started.
	exitFailed = 1
)

func main() {
	// The go command and the demo (child processes) get the terminal's interrupt too; this
	// process waits for them to end. (Ignoring the signal would make them ignore it too.)
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	os.Exit(launch(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// launch compiles the plugin and the demo, copies them into a new directory of the system's
// temp dir, runs the demo with args, its log in that directory, and removes the copies.
func launch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	start := time.Now()
	fmt.Fprint(stdout, header)
	runDir, err := os.MkdirTemp("", "velero-async-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "demo: a directory for the run: %v\n", err)
		return exitFailed
	}
	bin := filepath.Join(runDir, "bin")
	defer os.RemoveAll(bin)
	if err := compile(ctx, bin, start, stdout); err != nil {
		fmt.Fprintf(stderr, "demo: FAILED: compiling: %v\n", err)
		return exitFailed
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, storyBinary), append([]string{
		"--plugin", filepath.Join(bin, pluginBinary), "--log-dir", runDir, "--started", start.Format(time.RFC3339Nano),
	}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return max(exit.ExitCode(), exitFailed) // -1: ended by a signal
	case err != nil:
		fmt.Fprintf(stderr, "demo: FAILED: %v\n", err)
		return exitFailed
	}
	return 0
}

// compile builds the plugin and the demo into the user's cache dir, printing every heartbeat
// how many packages the go command has compiled so far, and copies them into bin: a demo
// running from its own copies never blocks another's build. One demo builds at a time.
func compile(ctx context.Context, bin string, start time.Time, w io.Writer) error {
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, cacheName)
	unlock, err := lockDir(dir, func() {
		fmt.Fprintf(w, "%s waiting for another demo to finish compiling into %s…\n", stamp(start), dir)
	})
	if err != nil {
		return err
	}
	defer unlock()
	fmt.Fprintf(w, "%s compiling the plugin and the demo (go build into %s)…\n", stamp(start), dir)
	total := make(chan int, 1)
	go func() { total <- countPackages(ctx, root) }()
	progress := &buildOutput{}
	done := make(chan error, 1)
	go func() {
		// One after the other: most of the demo's packages are the plugin's, which then
		// come from the build cache.
		for _, b := range []struct{ out, pkg string }{{pluginBinary, "."}, {storyBinary, storyPackage}} {
			cmd := exec.CommandContext(ctx, "go", "build", "-v", "-o", filepath.Join(dir, b.out), b.pkg)
			cmd.Dir, cmd.Stdout, cmd.Stderr = root, progress, progress
			if err := cmd.Run(); err != nil {
				done <- fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, progress.errors())
				return
			}
		}
		done <- nil
	}()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	of := ""
	for {
		select {
		case err := <-done:
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s compiled (%d packages compiled, the others taken from the Go build cache)\n", stamp(start), progress.packages())
			return copyBinaries(dir, bin)
		case n := <-total:
			of = fmt.Sprintf(" of the %d the plugin and the demo use", n)
		case <-tick.C:
			fmt.Fprintf(w, "%s still compiling: %d packages compiled%s…\n", stamp(start), progress.packages(), of)
		}
	}
}

// lockDir creates dir and takes its lock file, calling waiting first when another process
// holds it; unlock releases it.
func lockDir(dir string, waiting func()) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		waiting()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
	}
	return func() { f.Close() }, nil
}

// copyBinaries links the built binaries from dir into bin, or copies them when dir is on
// another file system. A link is safe: the go command replaces a binary it builds again by a
// new file, never by writing into the old one.
func copyBinaries(dir, bin string) error {
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for _, name := range []string{pluginBinary, storyBinary} {
		from, to := filepath.Join(dir, name), filepath.Join(bin, name)
		if os.Link(from, to) == nil {
			continue
		}
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, data, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// countPackages counts the packages the plugin and the demo are built from, the standard
// library's included; 0 when the go command cannot tell.
func countPackages(ctx context.Context, root string) int {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", ".", storyPackage)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "\n")
}

// buildOutput collects what `go build -v` writes: the path of each package it compiles, one a
// line, and any errors.
type buildOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *buildOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the lines that name a package (they have no space) and the others.
func (b *buildOutput) lines() (packages, others []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, line := range strings.Split(b.buf.String(), "\n") {
		switch {
		case line == "":
		case strings.Contains(line, " "):
			others = append(others, line)
		default:
			packages = append(packages, line)
		}
	}
	return packages, others
}

// packages counts the packages compiled so far.
func (b *buildOutput) packages() int {
	p, _ := b.lines()
	return len(p)
}

// errors is what the go command said besides the packages it compiled.
func (b *buildOutput) errors() string {
	_, o := b.lines()
	return strings.Join(o, "\n")
}

// moduleRoot is the directory of the go.mod the go command finds from here.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run the demo inside the plugin's module (make demo at its root)")
	}
	return filepath.Dir(gomod), nil
}

// stamp is the time since start as the demo's lines begin: "[  65.0s]".
func stamp(start time.Time) string {
	return fmt.Sprintf("[%6.1fs]", time.Since(start).Seconds())
}
