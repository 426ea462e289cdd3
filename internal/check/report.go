package check

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
)

// Command is the subcommand's name: the first argument of the plugin binary.
const Command = "check"

// Exit statuses.
const (
	// ExitOK: no finding failed and every check could read what it needs (warnings and lines
	// not checked allowed).
	ExitOK = 0
	// ExitProblems: at least one finding failed.
	ExitProblems = 1
	// ExitError: the check could not run (bad flags, no Kubernetes API, the locations not
	// listable).
	ExitError = 2
	// ExitIncomplete: no finding failed, but the Kubernetes API refused a read a check needs
	// (an "incomplete" line, whose fix says what to grant).
	ExitIncomplete = ExitError
)

// binaryName is the plugin binary's, which the text output names with its version.
const binaryName = cli.BinaryName

// Status is a finding's verdict.
type Status string

// The verdicts. NotChecked and Incomplete are never a pass: the check could not show either
// way; Incomplete because it could not read what it needs (the Kubernetes API refused it),
// which the finding's fix grants.
const (
	Pass       Status = "pass"
	Fail       Status = "fail"
	Warn       Status = "warning"
	NotChecked Status = "not checked"
	Incomplete Status = "incomplete"
)

// symbol is how the text output shows a status.
func (s Status) symbol() string {
	switch s {
	case Pass:
		return "✓"
	case Fail:
		return "✗"
	case Warn:
		return "!"
	}
	return string(s)
}

// Finding is one line of the report.
type Finding struct {
	// Check names what was checked, such as "ec2:CreateSnapshot in us-east-1".
	Check string `json:"check"`
	// Status is the verdict.
	Status Status `json:"status"`
	// Detail says what was found or why it could not be checked.
	Detail string `json:"detail,omitempty"`
	// Fix, for a failure, says what to change.
	Fix string `json:"fix,omitempty"`
}

// Section is the findings about one subject: a VolumeSnapshotLocation, or Velero's settings.
type Section struct {
	// Title names the subject, such as "VolumeSnapshotLocation velero/aws-async".
	Title string `json:"title"`
	// Location is the VolumeSnapshotLocation's name; empty for Velero's settings.
	Location string    `json:"location,omitempty"`
	Findings []Finding `json:"findings"`
}

// Report is what a check found.
type Report struct {
	// Plugin is the plugin's version and commit, as its version command prints them.
	Plugin string `json:"plugin,omitempty"`
	// Namespace is Velero's namespace.
	Namespace string    `json:"namespace"`
	Sections  []Section `json:"sections"`
	// Failures, Warnings and Incomplete count the findings of each of those statuses.
	Failures   int `json:"failures"`
	Warnings   int `json:"warnings"`
	Incomplete int `json:"incomplete"`
}

// add appends a section and counts its findings.
func (r *Report) add(s Section) {
	for _, f := range s.Findings {
		switch f.Status {
		case Fail:
			r.Failures++
		case Warn:
			r.Warnings++
		case Incomplete:
			r.Incomplete++
		}
	}
	r.Sections = append(r.Sections, s)
}

// Failed reports whether any finding failed.
func (r Report) Failed() bool { return r.Failures > 0 }

// ExitCode is the check's exit status for the report: ExitProblems when a finding failed, else
// ExitIncomplete when the check could not read what it needs, else ExitOK (warnings and
// lines not checked included).
func (r Report) ExitCode() int {
	switch {
	case r.Failures > 0:
		return ExitProblems
	case r.Incomplete > 0:
		return ExitIncomplete
	}
	return ExitOK
}

// WriteText writes the report as text: the plugin's version, a heading per section, one line
// per finding and a summary.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Plugin != "" {
		b.WriteString(binaryName + " " + r.Plugin + "\n\n")
	}
	for i, s := range r.Sections {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s.Title + "\n")
		for _, f := range s.Findings {
			b.WriteString(f.line() + "\n")
		}
	}
	b.WriteString("\n" + r.summary() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// summary is the report's last line: the problems found, then the warnings and the checks
// left incomplete, when there are any.
func (r Report) summary() string {
	s := "No problem found"
	if r.Failures > 0 {
		s = plural(r.Failures, "problem") + " found"
	}
	if r.Warnings > 0 {
		s += ", " + plural(r.Warnings, "warning")
	}
	if r.Incomplete > 0 {
		s += "; " + plural(r.Incomplete, "check") + " incomplete"
	}
	return s + "."
}

// line is the finding as one line of text.
func (f Finding) line() string {
	s := "  " + f.Status.symbol() + " " + f.Check
	if f.Detail != "" {
		s += ": " + f.Detail
	}
	if f.Fix != "" {
		s += " — fix: " + f.Fix
	}
	return s
}

// WriteJSON writes the report as one indented JSON document.
func (r Report) WriteJSON(w io.Writer) error { return cli.WriteJSON(w, r) }

// finding constructors.

func pass(check, detail string) Finding { return Finding{Check: check, Status: Pass, Detail: detail} }

func fail(check, detail, fix string) Finding {
	return Finding{Check: check, Status: Fail, Detail: detail, Fix: fix}
}

func warn(check, detail, fix string) Finding {
	return Finding{Check: check, Status: Warn, Detail: detail, Fix: fix}
}

func notChecked(check, why string) Finding {
	return Finding{Check: check, Status: NotChecked, Detail: why}
}

func incomplete(check, why, grant string) Finding {
	return Finding{Check: check, Status: Incomplete, Detail: why, Fix: grant}
}

// human writes a duration as Velero's flags take it, without zero minutes and seconds: 4h, 1h30m, 90s.
func human(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// plural says "n thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// shortList names at most three items, then how many more.
func shortList(items []string) string {
	const shown = 3
	if len(items) <= shown {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:shown], ", ") + fmt.Sprintf(" and %d more", len(items)-shown)
}
