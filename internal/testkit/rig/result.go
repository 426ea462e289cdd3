package rig

import (
	"fmt"
	"time"
)

// Result is what a run measured: the expectations the rig's checks found unmet, and counts.
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
		r.Scenario, r.Operations, r.Failed, r.WantFailed, r.Duplicates, r.Leaks(), r.Duration.Round(time.Second), r.Problems)
}

// Leaks is Leaked as the Reliability table shows it: "–" when the run deleted nothing.
func (r *Result) Leaks() string {
	if r.NotDeleted {
		return "– (not deleted)"
	}
	return fmt.Sprint(r.Leaked)
}
