package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/vmware-tanzu/velero/pkg/itemoperation"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
)

// How often the display prints the operation counts: at most every countEvery when they
// change, and every heartbeat when nothing does.
const (
	countEvery = 5 * time.Second
	heartbeat  = 10 * time.Second
)

// stepPrinter prints the demo's lines, each stamped with the time since the demo started.
type stepPrinter struct {
	w     io.Writer
	start time.Time
}

func (p *stepPrinter) printf(format string, args ...any) {
	fmt.Fprintf(p.w, "%s %s\n", stamp(p.start), fmt.Sprintf(format, args...))
}

func (p *stepPrinter) blank() { fmt.Fprintln(p.w) }

// display is the live view of a backup or restore: a line of counts when the phase changes (and
// every few seconds while operations complete), a line per failed operation, and, for the first
// operation, what `velero backup describe --details` (or `velero restore describe`) shows of it
// each time its progress description says something new.
type display struct {
	steps *stepPrinter
	// name is the backup or restore shown; the fields below are about it.
	name        string
	lastCounts  string
	lastPhase   string
	printed     time.Time
	failedShown map[*harness.Operation]bool
	// followed is the operation whose description is shown; shape its last one shown.
	followed *harness.Operation
	shape    string
}

func newDisplay(steps *stepPrinter) *display { return &display{steps: steps} }

// Observe prints what changed in s.
func (d *display) Observe(s harness.Status) {
	if s.Kind+"/"+s.Name != d.name {
		*d = display{steps: d.steps, name: s.Kind + "/" + s.Name, failedShown: map[*harness.Operation]bool{}}
	}
	completed, failed := s.Count()
	counts := fmt.Sprintf("%s %s: %s, item operations %d of %d completed, %d failed", s.Kind, s.Name, s.Phase, completed, len(s.Operations), failed)
	since := time.Since(d.printed)
	if s.Phase != d.lastPhase || counts != d.lastCounts && since >= countEvery || since >= heartbeat {
		d.steps.printf("%s (reconcile %d)", counts, s.Reconciles)
		d.lastCounts, d.lastPhase, d.printed = counts, s.Phase, time.Now()
	}
	for _, op := range s.Operations {
		if op.Status.Phase == itemoperation.OperationPhaseFailed && !d.failedShown[op] {
			d.failedShown[op] = true
			d.steps.printf("  %s failed: %s", op.Resource.Name, op.Status.Error)
		}
	}
	d.follow(s)
}

// follow shows the first operation as describe does whenever its phase or the shape of its
// description (the text with its numbers left out) changes.
func (d *display) follow(s harness.Status) {
	if d.followed == nil && len(s.Operations) > 0 {
		d.followed = s.Operations[0]
	}
	op := d.followed
	if op == nil || op.Status.Description == "" && op.Status.Error == "" {
		return
	}
	shape := string(op.Status.Phase) + "|" + digits.ReplaceAllString(op.Status.Description+op.Status.Error, "#")
	if shape == d.shape {
		return
	}
	first := d.shape == ""
	d.shape = shape
	if first {
		d.steps.printf("`velero %s describe %s --details` shows each of its %d operations; the first one:", strings.ToLower(s.Kind), s.Name, len(s.Operations))
	} else {
		d.steps.printf("and now:")
	}
	fmt.Fprint(d.steps.w, describeOperation(s.Kind, op, first))
}

// digits are the numbers of a description: percentages, IDs' digits, counts.
var digits = regexp.MustCompile(`[0-9]+`)

// describeWidth is the width of describe's labels, as its tab writer aligns them.
const describeWidth = 29

// describeOperation renders op as Velero's describer does (describeBackupItemOperation in
// pkg/cmd/util/output): with its plugin and ID when full, else only the lines that change.
func describeOperation(kind string, op *harness.Operation, full bool) string {
	var b strings.Builder
	line := func(label string, format string, args ...any) {
		fmt.Fprintf(&b, "    %-*s%s\n", describeWidth, label+":", fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(&b, "  Operation for %s %s/%s:\n", op.Resource.GroupResource, op.Resource.Namespace, op.Resource.Name)
	if full {
		line(kind+" Item Action Plugin", "%s", op.Action)
		line("Operation ID", "%s", op.ID)
	}
	line("Phase", "%s", op.Status.Phase)
	if op.Status.Error != "" {
		line("Operation Error", "%s", op.Status.Error)
	}
	if op.Status.NTotal > 0 || op.Status.NCompleted > 0 {
		line("Progress", "%d of %d complete (%s)", op.Status.NCompleted, op.Status.NTotal, op.Status.OperationUnits)
	}
	if op.Status.Description != "" {
		line("Progress description", "%s", op.Status.Description)
	}
	return b.String()
}
