package readme

import (
	"fmt"
	"regexp"
	"strings"
)

// Kind is what a describe sample shows.
type Kind string

// The kinds of describe output the README shows.
const (
	BackupWaiting   Kind = "backup waiting"
	BackupCompleted Kind = "backup completed"
	Restore         Kind = "restore"
)

// elision is the line with which a sample leaves lines out.
const elision = "…"

// Sample is one `velero backup describe --details` or `velero restore describe --details`
// sample of a Markdown document: a text block whose first line is the command, after "$ ".
type Sample struct {
	Kind  Kind
	Line  int // of the block's opening fence
	Lines []string
}

// Capture is the output of one describe command of a real Velero server.
type Capture struct {
	Kind Kind
	Text string
}

var describeCommand = regexp.MustCompile(`^\$ velero (backup|restore) describe \S+ --details\s*$`)

// Samples returns the describe samples of a Markdown document, in order. A backup sample is of
// a waiting backup when its first Phase line says WaitingForPluginOperations, else of a
// completed one.
func Samples(md string) ([]Sample, error) {
	blocks, err := splitBlocks("README.md", md)
	if err != nil {
		return nil, err
	}
	var out []Sample
	for _, b := range blocks {
		if b.lang != "text" || len(b.body) == 0 {
			continue
		}
		m := describeCommand.FindStringSubmatch(b.body[0])
		if m == nil {
			continue
		}
		s := Sample{Kind: Restore, Line: b.line, Lines: b.body[1:]}
		if m[1] == "backup" {
			s.Kind = BackupCompleted
			for _, l := range s.Lines {
				if f := strings.Fields(l); len(f) >= 2 && f[0] == "Phase:" {
					if f[1] == "WaitingForPluginOperations" {
						s.Kind = BackupWaiting
					}
					break
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// Normalisation of describe lines: what differs between two runs (identifiers, names, times,
// numbers) becomes a placeholder, and runs of spaces one space.
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`^(Name|Backup|Namespace):\s.*$`), "$1: NAME"},
	{regexp.MustCompile(`(Operation for \S+ )\S*:$`), "${1}OBJECT:"},
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}( [+-]\d{4} \w+)?`), "TIME"},
	{regexp.MustCompile(`\bsnap-[0-9a-f]*…?`), "snap-ID"},
	{regexp.MustCompile(`\bvol-[0-9a-f]*…?`), "vol-ID"},
	{regexp.MustCompile(`(ebs:v\d+(?::[^:\s]+){3}):\S+`), "$1:OBJECT"},
	{regexp.MustCompile(`\b(us|eu|ap|ca|sa|me|af|il|mx)-[a-z]+-\d[a-z]?\b`), "REGION"},
	{regexp.MustCompile(`\d+`), "N"},
	{regexp.MustCompile(`\s+`), " "},
}

// normalise returns a describe line with what differs between runs replaced by placeholders.
func normalise(line string) string {
	l := strings.TrimSpace(line)
	for _, n := range normalisers {
		l = n.re.ReplaceAllString(l, n.with)
	}
	return l
}

// isDescription reports a line whose value depends on the moment of the capture: an
// operation's description or error.
func isDescription(norm string) bool {
	return strings.HasPrefix(norm, "Progress description:") || strings.HasPrefix(norm, "Operation Error:")
}

// Mismatches compares a sample with the captures of its kind and returns what does not match,
// each naming the sample's line: every line of the sample but elisions, normalised, must appear
// in one capture in the same order; a description line may come from any capture of the kind
// (each capture is one moment of the operations), and stands in the order for a description.
func Mismatches(s Sample, captures []Capture) []string {
	var mine []Capture
	descriptions := map[string]bool{}
	for _, c := range captures {
		if c.Kind != s.Kind {
			continue
		}
		mine = append(mine, c)
		for _, l := range strings.Split(c.Text, "\n") {
			if n := normalise(l); isDescription(n) {
				descriptions[n] = true
			}
		}
	}
	if len(mine) == 0 {
		return []string{fmt.Sprintf("README.md:%d: no captured describe output of a %s to compare the sample with", s.Line, s.Kind)}
	}
	var problems []string
	for i, l := range s.Lines {
		if n := normalise(l); isDescription(n) && !descriptions[n] {
			problems = append(problems, fmt.Sprintf("README.md:%d: %q: no %s description has this form (%q)", s.Line+2+i, strings.TrimSpace(l), s.Kind, n))
		}
	}
	furthest := 0
	for _, c := range mine {
		m := firstMissing(s.Lines, c.Text)
		if m < 0 {
			return problems
		}
		furthest = max(furthest, m)
	}
	return append(problems, fmt.Sprintf("README.md:%d: %q (%q) is not in any captured describe output of a %s, in the sample's order",
		s.Line+2+furthest, strings.TrimSpace(s.Lines[furthest]), normalise(s.Lines[furthest]), s.Kind))
}

// firstMissing returns the index of the first line of sample (elisions left out) that the
// captured text lacks, lines taken in order, or -1 when it has every one. A description line
// matches any description line.
func firstMissing(sample []string, text string) int {
	var got []string
	for _, l := range strings.Split(text, "\n") {
		if n := normalise(l); n != "" {
			got = append(got, n)
		}
	}
	j := 0
	for i, l := range sample {
		want := normalise(l)
		if want == "" || want == elision {
			continue
		}
		for ; j < len(got); j++ {
			if got[j] == want || isDescription(want) && isDescription(got[j]) && strings.SplitN(want, ":", 2)[0] == strings.SplitN(got[j], ":", 2)[0] {
				break
			}
		}
		if j == len(got) {
			return i
		}
		j++
	}
	return -1
}
