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

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// WriteTable writes results as the Reliability table of internal/testkit/README.md (Markdown).
func WriteTable(w io.Writer, results []*rig.Result) error {
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
			r.Duplicates, r.Leaks(), r.LongestReconcile.Round(100*time.Millisecond), r.Duration.Round(time.Second), verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
