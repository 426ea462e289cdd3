package readme

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Limits of the README's shell blocks run by these tests.
const (
	// simulatorStartLimit bounds `go run` of the simulator (a build on a cold cache) until it
	// answers, and demoLimit bounds `make demo` (builds too): make test's own -timeout, since a
	// build on a busy machine takes what it takes.
	simulatorStartLimit = 30 * time.Minute
	demoLimit           = 30 * time.Minute
)

// shellLines returns the lines of the sh blocks of the Markdown document at path that start with
// one of prefixes, in order, failing the test when a prefix matches none: a block renamed must
// not pass unnoticed.
func shellLines(t *testing.T, path string, prefixes ...string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(path)
	blocks, err := splitBlocks(name, string(src))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range prefixes {
		found := false
		for _, b := range blocks {
			if b.lang != "sh" {
				continue
			}
			for _, l := range b.body {
				if strings.HasPrefix(strings.TrimSpace(l), p) {
					out, found = append(out, l), true
				}
			}
		}
		if !found {
			t.Fatalf("%s: no sh line starts with %q", path, p)
		}
	}
	return out
}

// TestREADMESimulatorCommandsWorkAsWritten runs the test kit README's two lines that start the
// EC2 simulator and point the SDK at it, exactly as written, in the module root (a fresh clone
// holds nothing else), then makes an EC2 call with the environment they set.
func TestREADMESimulatorCommandsWorkAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the simulator")
	}
	lines := shellLines(t, testkitReadmePath(t), "go run ./internal/testkit/cmd/ec2sim", "export AWS_ENDPOINT_URL_EC2")
	envFile := filepath.Join(t.TempDir(), "env")
	script := strings.Join(lines, "\n") + "\nenv > " + envFile + ".tmp && mv " + envFile + ".tmp " + envFile + "\nwait\n"
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = filepath.Dir(readmePath(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	})
	env := awaitEnv(t, envFile)
	for _, k := range []string{"AWS_ENDPOINT_URL_EC2", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if env[k] == "" {
			t.Fatalf("the README's export line leaves %s unset", k)
		}
		t.Setenv(k, env[k])
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	ctx, cancel := context.WithTimeout(context.Background(), simulatorStartLimit)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := ec2.NewFromConfig(cfg)
	for {
		_, err := client.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}})
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the simulator the README starts did not answer within %s: %v\n%s", simulatorStartLimit, err, out.String())
		}
		time.Sleep(time.Second)
	}
}

// testkitReadmePath is the test kit's README, beside the code it describes.
func testkitReadmePath(t *testing.T) string {
	t.Helper()
	return filepath.Join(filepath.Dir(readmePath(t)), "internal", "testkit", "README.md")
}

// awaitEnv waits for the script to write its environment to path and reads it.
func awaitEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(simulatorStartLimit)
	for {
		f, err := os.Open(path)
		if err == nil {
			defer f.Close()
			env := map[string]string{}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), "="); ok {
					env[k] = v
				}
			}
			return env
		}
		if time.Now().After(deadline) {
			t.Fatalf("the README's simulator lines did not get past the export within %s", simulatorStartLimit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestREADMEDemoWorksAsWritten runs the README's `make demo` line and checks that the demo says
// OK at the end (before its log's path), as a new user would read it.
func TestREADMEDemoWorksAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	line := shellLines(t, readmePath(t), "make demo")[0]
	ctx, cancel := context.WithTimeout(context.Background(), demoLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = filepath.Dir(readmePath(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	// Under make test, make says which directory it enters and leaves: not the demo's output.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(l, "make[") {
			lines = append(lines, l)
		}
	}
	// The demo's last line names its log; the verdict comes just before it.
	if len(lines) < 2 || lines[len(lines)-2] != "OK" {
		t.Fatalf("%s does not end with OK and its log's path:\n%s", line, out)
	}
	if !strings.Contains(string(out), "Left after the deletion: 0 snapshots") {
		t.Errorf("the demo leaves snapshots after deletion:\n%s", out)
	}
}
