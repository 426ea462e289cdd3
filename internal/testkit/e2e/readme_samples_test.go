//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/readme"
)

// describeSamples holds the `velero backup describe --details` and `velero restore describe
// --details` outputs the rig captures, to check the README's samples against: while backups wait
// for their operations (one capture every describeEvery), once they completed, and of every
// completed restore.
type describeSamples struct {
	mu       sync.Mutex
	captures []readme.Capture
	last     map[string]time.Time // last capture of a waiting backup, by name
}

// add records one capture and saves it in the logs folder, from which the README package's
// testdata can be refreshed.
func (r *rig) addSample(kind readme.Kind, text string) {
	r.samples.mu.Lock()
	r.samples.captures = append(r.samples.captures, readme.Capture{Kind: kind, Text: text})
	n := len(r.samples.captures)
	r.samples.mu.Unlock()
	dir := filepath.Join(r.logDir, describeDir, "samples")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d-%s.txt", n, strings.ReplaceAll(string(kind), " ", "-"))), []byte(text), 0o644)
}

// captureWaiting captures the describe output of a backup waiting for its operations, at most
// once every describeEvery, so that the descriptions of each stage (snapshot, copy, vault copy)
// are seen.
func (r *rig) captureWaiting(name string) {
	r.samples.mu.Lock()
	if r.samples.last == nil {
		r.samples.last = map[string]time.Time{}
	}
	due := time.Since(r.samples.last[name]) >= describeEvery
	if due {
		r.samples.last[name] = time.Now()
	}
	r.samples.mu.Unlock()
	if !due {
		return
	}
	if d, err := r.velero("backup", "describe", name, "--details", "--colorized=false"); err == nil && strings.Contains(d, "WaitingForPluginOperations") {
		r.addSample(readme.BackupWaiting, d)
	}
}

// checkReadmeSamples checks that every describe sample of the README has the shape of what this
// Velero server printed: the same lines in the same order, and descriptions of forms the plugin
// gave, once identifiers, names, times and numbers are set aside.
func (r *rig) checkReadmeSamples() {
	src, err := os.ReadFile(filepath.Join(r.repoRoot, "README.md"))
	if err != nil {
		r.t.Fatal(err)
	}
	samples, err := readme.Samples(string(src))
	if err != nil {
		r.t.Fatal(err)
	}
	r.samples.mu.Lock()
	captures := append([]readme.Capture(nil), r.samples.captures...)
	r.samples.mu.Unlock()
	count := map[readme.Kind]int{}
	for _, c := range captures {
		count[c.Kind]++
	}
	r.saw("README describe samples: %d; captured describe outputs: %v (in %s)", len(samples), count, filepath.Join(r.logDir, describeDir, "samples"))
	kinds := map[readme.Kind]bool{}
	for _, s := range samples {
		kinds[s.Kind] = true
		for _, p := range readme.Mismatches(s, captures) {
			r.t.Error(p)
		}
	}
	for _, k := range []readme.Kind{readme.BackupWaiting, readme.BackupCompleted, readme.Restore} {
		if !kinds[k] {
			r.t.Errorf("the README has no describe sample of a %s", k)
		}
	}
}

// checkReadmeCommands hands every `velero` command of the README's sh blocks to this Velero
// CLI with --help: the CLI parses the command's subcommands and flags as it would to run it, and
// an unknown one fails, without changing anything in the cluster.
func (r *rig) checkReadmeCommands() {
	src, err := os.ReadFile(filepath.Join(r.repoRoot, "README.md"))
	if err != nil {
		r.t.Fatal(err)
	}
	cmds, err := readme.VeleroCommands(string(src))
	if err != nil {
		r.t.Fatal(err)
	}
	if len(cmds) == 0 {
		r.t.Fatal("the README has no velero command in its sh blocks")
	}
	for _, c := range cmds {
		if out, err := r.velero(append(c[1:], "--help")...); err != nil {
			r.t.Errorf("README command `%s` is refused by velero %s: %v\n%s", strings.Join(c, " "), veleroVersion(), err, out)
		}
	}
	r.saw("the README's %d velero commands parse with velero %s", len(cmds), veleroVersion())
}
