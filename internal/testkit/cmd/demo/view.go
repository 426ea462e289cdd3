package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
)

// newDisplay returns a live view writing to w: a table with progress bars redrawn in place
// when w is a terminal, plain log lines otherwise.
func newDisplay(w io.Writer) harness.Observer {
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return &tableDisplay{w: w, maxRows: 20}
		}
	}
	return &lineDisplay{w: w, phases: map[*harness.Operation]itemoperation.OperationPhase{}}
}

// tableDisplay redraws a table of the open and failed operations in place.
type tableDisplay struct {
	w       io.Writer
	maxRows int
	lines   int
}

func (d *tableDisplay) Observe(s harness.Status) {
	var b strings.Builder
	completed, failed := s.Count()
	total := len(s.Operations)
	fmt.Fprintf(&b, "%s %s   Phase: %s   elapsed %s   reconciles %d\n", s.Kind, s.Name, s.Phase, s.Elapsed.Round(100*time.Millisecond), s.Reconciles)
	fmt.Fprintf(&b, "Item Operations: %d of %d completed, %d failed %s\n", completed, total, failed, bar(int64(completed+failed), int64(total), 30))
	rows := 0
	for _, op := range s.Operations {
		if op.Status.Phase == itemoperation.OperationPhaseCompleted {
			continue
		}
		if rows == d.maxRows {
			fmt.Fprintf(&b, "  … %d more\n", total-completed-rows)
			break
		}
		rows++
		fmt.Fprintf(&b, "  %-24s %-10s %s %d/%d %s\n", trim(op.Resource.Name, 24), op.Status.Phase,
			bar(op.Status.NCompleted, op.Status.NTotal, 10), op.Status.NCompleted, op.Status.NTotal, trim(describe(op), 70))
	}
	if d.lines > 0 {
		fmt.Fprintf(d.w, "\x1b[%dA\x1b[J", d.lines)
	}
	out := b.String()
	d.lines = strings.Count(out, "\n")
	fmt.Fprint(d.w, out)
}

// lineDisplay prints a line when the phase or the operation counts change (at least every
// 10 seconds while waiting), and one line per operation that fails.
type lineDisplay struct {
	w       io.Writer
	last    string
	printed time.Duration
	phases  map[*harness.Operation]itemoperation.OperationPhase
}

func (d *lineDisplay) Observe(s harness.Status) {
	completed, failed := s.Count()
	line := fmt.Sprintf("%s %s: %s, operations %d of %d completed, %d failed", s.Kind, s.Name, s.Phase, completed, len(s.Operations), failed)
	if line != d.last || s.Elapsed-d.printed >= 10*time.Second {
		fmt.Fprintf(d.w, "[%6.1fs] %s (reconcile %d)\n", s.Elapsed.Seconds(), line, s.Reconciles)
		d.last, d.printed = line, s.Elapsed
	}
	for _, op := range s.Operations {
		if d.phases[op] == op.Status.Phase || op.Status.Phase != itemoperation.OperationPhaseFailed {
			continue
		}
		d.phases[op] = op.Status.Phase
		fmt.Fprintf(d.w, "           %s %s: %s\n", op.Resource.Name, op.Status.Phase, describe(op))
	}
}

func describe(op *harness.Operation) string {
	if op.Status.Error != "" {
		return "error: " + op.Status.Error
	}
	return op.Status.Description
}

func bar(done, total int64, width int) string {
	if total <= 0 {
		return "[" + strings.Repeat(" ", width) + "]"
	}
	n := int(min(done, total) * int64(width) / total)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
