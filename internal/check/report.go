package check

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Status is a finding's verdict.
type Status string

// The verdicts. NotChecked is never a pass: the check could not show either way.
const (
	Pass       Status = "pass"
	Fail       Status = "fail"
	NotChecked Status = "not checked"
)

// symbol is how the text output shows a status.
func (s Status) symbol() string {
	switch s {
	case Pass:
		return "✓"
	case Fail:
		return "✗"
	}
	return "not checked"
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
	// Namespace is Velero's namespace.
	Namespace string    `json:"namespace"`
	Sections  []Section `json:"sections"`
	// Failures counts the findings that failed.
	Failures int `json:"failures"`
}

// add appends a section and counts its failures.
func (r *Report) add(s Section) {
	for _, f := range s.Findings {
		if f.Status == Fail {
			r.Failures++
		}
	}
	r.Sections = append(r.Sections, s)
}

// Failed reports whether any finding failed.
func (r Report) Failed() bool { return r.Failures > 0 }

// WriteText writes the report as text: a heading per section and one line per finding.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for i, s := range r.Sections {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s.Title + "\n")
		for _, f := range s.Findings {
			b.WriteString(f.line() + "\n")
		}
	}
	switch r.Failures {
	case 0:
		b.WriteString("\nNo problem found.\n")
	case 1:
		b.WriteString("\n1 problem found.\n")
	default:
		fmt.Fprintf(&b, "\n%d problems found.\n", r.Failures)
	}
	_, err := io.WriteString(w, b.String())
	return err
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
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// finding constructors.

func pass(check, detail string) Finding { return Finding{Check: check, Status: Pass, Detail: detail} }

func fail(check, detail, fix string) Finding {
	return Finding{Check: check, Status: Fail, Detail: detail, Fix: fix}
}

func notChecked(check, why string) Finding {
	return Finding{Check: check, Status: NotChecked, Detail: why}
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
