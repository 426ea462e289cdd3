// Package faults is the plugin's fault suite: scenarios that drive the built plugin binary
// through the Velero harness against the EC2 simulator with faults injected (throttling,
// ambiguous failures, eventual consistency, killed plugin processes, snapshots ending in error,
// awkward deletions, EC2's quotas) and measure, for each, the operations that failed, the
// duplicate snapshots or copies made and the snapshots left after deletion.
package faults

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Result is what one scenario measured.
type Result struct {
	// Scenario, Load and Faults describe the run, as the Reliability table shows them.
	Scenario, Load, Faults string
	// Operations counts the backup item operations started.
	Operations int
	// Failed counts the operations that failed; WantFailed those the scenario meant to fail
	// (a snapshot ending in error).
	Failed, WantFailed int
	// Duplicates counts snapshots beyond one source per volume per backup and one copy per source.
	Duplicates int
	// Leaked counts snapshots and copies left in any region after deletion.
	Leaked int
	// NotDeleted marks a scenario that deletes nothing (Leaked is then meaningless).
	NotDeleted bool
	// Duration is the scenario's wall-clock time.
	Duration time.Duration
	// LongestReconcile is the longest time one reconcile of any of its backups spent in the
	// plugin's Progress and Cancel calls.
	LongestReconcile time.Duration
	// Problems are the scenario's other failed expectations.
	Problems []string
}

// OK reports whether the scenario met every expectation: exactly the intended operations
// failed, no duplicates, nothing leaked and no other problem.
func (r *Result) OK() bool {
	return r.Failed == r.WantFailed && r.Duplicates == 0 && r.Leaked == 0 && len(r.Problems) == 0
}

// Problemf records a failed expectation.
func (r *Result) Problemf(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// Summary is a one-line account of the result, for logs.
func (r *Result) Summary() string {
	return fmt.Sprintf("%s: %d operations, %d failed (want %d), %d duplicates, %s leaked, %s; problems: %v",
		r.Scenario, r.Operations, r.Failed, r.WantFailed, r.Duplicates, r.leaked(), r.Duration.Round(time.Second), r.Problems)
}

func (r *Result) leaked() string {
	if r.NotDeleted {
		return "– (not deleted)"
	}
	return fmt.Sprint(r.Leaked)
}

// WriteTable writes results as the README's Reliability table (Markdown).
func WriteTable(w io.Writer, results []*Result) error {
	var b strings.Builder
	b.WriteString("| Scenario | Load | Faults injected | Operations failed | Duplicates | Snapshots leaked | Longest reconcile | Duration | Result |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		failed := fmt.Sprintf("%d of %d", r.Failed, r.Operations)
		if r.WantFailed > 0 {
			failed += fmt.Sprintf(" (%d intended)", r.WantFailed)
		}
		verdict := "pass"
		if !r.OK() {
			verdict = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %s | %s |\n", r.Scenario, r.Load, r.Faults, failed,
			r.Duplicates, r.leaked(), r.LongestReconcile.Round(100*time.Millisecond), r.Duration.Round(time.Second), verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
