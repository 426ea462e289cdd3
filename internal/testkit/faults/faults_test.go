package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// built is the plugin binary, built once for the package.
var built *rig.Plugin

func TestMain(m *testing.M) { rig.TestMain(m, &built) }

// full reports whether the heavy sizes were asked for (make fault runs the same through
// internal/testkit/cmd/fault).
func full() bool { return os.Getenv("FAULT_FULL") == "1" }

// TestScenarios plays every fault scenario: Quick sizes by default, Full with FAULT_FULL=1 (the
// 1,000-volume throttling storm only then, and never with -short).
func TestScenarios(t *testing.T) {
	sizes := Quick
	if full() {
		sizes = Full
	}
	env := &rig.Env{Plugin: built, LogDir: t.TempDir()}
	var results []*rig.Result
	for _, s := range Scenarios(sizes) {
		t.Run(rig.FileName(s.Name), func(t *testing.T) {
			if s.Heavy && (!full() || testing.Short()) {
				t.Skip("heavy: set FAULT_FULL=1 (or run make fault)")
			}
			res := Run(t.Context(), env, s)
			results = append(results, res)
			t.Log(res.Summary())
			if !res.OK() {
				t.Errorf("%s", res.Summary())
				logTail(t, env.LogDir)
			}
		})
	}
	var b strings.Builder
	_ = WriteTable(&b, results)
	t.Logf("\n%s", b.String())
}

// logTail logs the end of each log file of the run.
func logTail(t *testing.T, dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Logf("last lines of %s:\n%s", e.Name(), process.LogTail(filepath.Join(dir, e.Name()), 30))
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	err := WriteTable(&b, []*rig.Result{
		{Scenario: "A", Load: "1 volume", Faults: "none", Operations: 1, Duration: 1500 * time.Millisecond, LongestReconcile: 1234 * time.Millisecond},
		{Scenario: "B", Load: "2 volumes", Faults: "errors", Operations: 2, Failed: 1, WantFailed: 1, NotDeleted: true},
		{Scenario: "C", Load: "3 volumes", Faults: "drops", Operations: 3, Duplicates: 1, Leaked: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Scenario | Load | Faults injected | Operations failed | Duplicates | Snapshots leaked | Longest reconcile | Duration | Result |",
		"| A | 1 volume | none | 0 of 1 | 0 | 0 | 1.2s | 2s | pass |",
		"| B | 2 volumes | errors | 1 of 2 (1 intended) | 0 | – (not deleted) | 0s | 0s | pass |",
		"| C | 3 volumes | drops | 0 of 3 | 1 | 2 | 0s | 0s | **FAIL** |",
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
