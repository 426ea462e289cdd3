// Command mutate measures the explorer's strength: it applies each one-rule mutant of its table
// (mutants.go) to the plugin's code through go's -overlay (the tree is not touched), runs the
// explorer alone with CI's fixed seeds, and prints per mutant whether the explorer killed it
// (and by which broken promise) or it survived, and the kill rate. A mutant whose snippet the
// code no longer holds is reported as not applying, so that the table follows the code. It
// exits 0 only when every mutant it ran applied and was killed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// suiteTimeout is the timeout make test gives the whole suite: one explorer run gets as long.
const suiteTimeout = 30 * time.Minute

// explorerPackage is the package the explorer runs in, and explorerRun the test that runs it.
const (
	explorerPackage = "./internal/testkit/explore/"
	explorerRun     = "^(TestExplore|TestRegressions)$"
)

func main() {
	names := flag.String("mutants", os.Getenv("MUTANTS"), "comma-separated names of the mutants to run (default: every one; also read from $MUTANTS)")
	dry := flag.Bool("dry", false, "only report whether each mutant applies to the code and builds (go vet), without running the explorer")
	flag.Parse()
	os.Exit(run(context.Background(), os.Stdout, ".", *names, *dry))
}

// outcome is what running the explorer on one mutant came to.
type outcome struct {
	// verdict is "killed", "survived", "does not apply" or "does not build".
	verdict string
	// why is the first broken promise for a killed mutant, or what went wrong.
	why string
}

// Verdicts.
const (
	killed       = "killed"
	survived     = "survived"
	notApplying  = "does not apply"
	notBuilding  = "does not build"
	appliesDryly = "applies"
)

// run runs the named mutants (every one when names is empty) in the module at root, one after
// another, and returns the exit code.
func run(ctx context.Context, out io.Writer, root, names string, dry bool) int {
	chosen, err := choose(mutants, names)
	if err != nil {
		fmt.Fprintln(out, err)
		return 2
	}
	scratch, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		fmt.Fprintln(out, err)
		return 2
	}
	defer os.RemoveAll(scratch)
	var kills, ran int
	failed := false
	for _, m := range chosen {
		start := time.Now()
		overlay, err := apply(root, m, filepath.Join(scratch, m.name))
		var o outcome
		switch {
		case err != nil:
			o = outcome{verdict: notApplying, why: err.Error()}
		case dry:
			o = vet(ctx, root, overlay, m)
		default:
			o = explore(ctx, root, overlay)
			ran++
		}
		if o.verdict == killed {
			kills++
		}
		failed = failed || o.verdict != killed && o.verdict != appliesDryly
		fmt.Fprintf(out, "%-15s %-32s %s (%s)\n", o.verdict, m.name, m.rule, time.Since(start).Round(time.Second))
		if o.why != "" {
			fmt.Fprintf(out, "%-15s %-32s   %s\n", "", "", o.why)
		}
	}
	if !dry {
		fmt.Fprintf(out, "kill rate: %d of %d mutants run (%s)\n", kills, ran, percent(kills, ran))
	}
	if failed {
		return 1
	}
	return 0
}

func percent(n, of int) string {
	if of == 0 {
		return "none run"
	}
	return fmt.Sprintf("%d%%", 100*n/of)
}

// choose returns the mutants named in the comma-separated list, in its order; every one
// when the list is empty.
func choose(all []mutant, names string) ([]mutant, error) {
	if strings.TrimSpace(names) == "" {
		return all, nil
	}
	var chosen []mutant
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		i := slices.IndexFunc(all, func(m mutant) bool { return m.name == n })
		if i < 0 {
			return nil, fmt.Errorf("no mutant is named %q; the mutants are: %s", n, strings.Join(namesOf(all), ", "))
		}
		chosen = append(chosen, all[i])
	}
	return chosen, nil
}

func namesOf(ms []mutant) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.name
	}
	return out
}

// errDrift says a mutant's snippet is not found exactly once in its file.
var errDrift = errors.New("the code no longer holds its snippet exactly once: update the mutant to the code")

// apply writes m's mutated file and an overlay naming it into dir, and returns the overlay's
// path for go's -overlay flag.
func apply(root string, m mutant, dir string) (string, error) {
	path, err := filepath.Abs(filepath.Join(root, m.file))
	if err != nil {
		return "", err
	}
	code, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", m.file, err)
	}
	if n := bytes.Count(code, []byte(m.old)); n != 1 {
		return "", fmt.Errorf("%s: found %d times: %w", m.file, n, errDrift)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	mutated := filepath.Join(dir, filepath.Base(m.file))
	if err := os.WriteFile(mutated, bytes.Replace(code, []byte(m.old), []byte(m.new), 1), 0o644); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(struct{ Replace map[string]string }{map[string]string{path: mutated}})
	if err != nil {
		return "", err
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	return overlayPath, os.WriteFile(overlayPath, overlay, 0o644)
}

// vet vets the package m changes with m applied: what go test would refuse to build.
func vet(ctx context.Context, root, overlay string, m mutant) outcome {
	cmd := exec.CommandContext(ctx, "go", "vet", "-overlay", overlay, "./"+filepath.ToSlash(filepath.Dir(m.file)))
	cmd.Dir = root
	if output, err := cmd.CombinedOutput(); err != nil {
		return outcome{verdict: notBuilding, why: firstLines(string(output), 5)}
	}
	return outcome{verdict: appliesDryly}
}

// explore runs the explorer, as make test runs it (its fixed seeds and budget), and its
// regression scenarios on the code the overlay mutates.
func explore(ctx context.Context, root, overlay string) outcome {
	cmd := exec.CommandContext(ctx, "go", "test", "-overlay", overlay, "-count=1", "-timeout", suiteTimeout.String(), "-run", explorerRun, explorerPackage)
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return outcome{verdict: survived}
	case !errors.As(err, &exit):
		return outcome{verdict: notBuilding, why: err.Error()}
	}
	return judge(string(output))
}

// rapidFailure is how rapid reports a broken property: its first line carries the test's own
// message, which the explorer starts with the broken promise's name and a colon.
var rapidFailure = regexp.MustCompile(`\[rapid\] (failed|panic) after (\d+) tests: ([^\n]*)`)

// scenarioFailure is how go test reports a regression scenario that broke a promise.
var scenarioFailure = regexp.MustCompile(`--- FAIL: TestRegressions/(\S+)`)

// judge reads a failed explorer run's output: the first broken promise, or why the run failed
// without one.
func judge(output string) outcome {
	if m := rapidFailure.FindStringSubmatch(output); m != nil {
		what := m[3]
		if m[1] == "failed" {
			what, _, _ = strings.Cut(what, ": ")
		} else {
			what = "panic: " + what
		}
		return outcome{verdict: killed, why: fmt.Sprintf("%s (at seed %s)", what, m[2])}
	}
	if m := scenarioFailure.FindStringSubmatch(output); m != nil {
		return outcome{verdict: killed, why: "regression scenario " + strings.ReplaceAll(m[1], "_", " ")}
	}
	switch {
	case strings.Contains(output, "[build failed]") || strings.Contains(output, "[setup failed]"):
		return outcome{verdict: notBuilding, why: firstLines(output, 5)}
	case strings.Contains(output, "panic: test timed out"):
		return outcome{verdict: killed, why: "the explorer did not end within " + suiteTimeout.String()}
	}
	return outcome{verdict: killed, why: "the explorer failed: " + firstLines(output, 5)}
}

// firstLines returns the first n lines of s, joined by " | ".
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[:min(n, len(lines))], " | ")
}
