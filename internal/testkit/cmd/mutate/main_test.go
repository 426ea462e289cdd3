package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// moduleRoot is the plugin's module, from this package's directory.
const moduleRoot = "../../../.."

func TestApply(t *testing.T) {
	const program = "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Print(\"old\", \"old\") }\n"
	for _, tc := range []struct {
		name     string
		old, new string
		// drift says the mutant does not apply; else the mutated program prints printed.
		drift   bool
		printed string
	}{
		{name: "a snippet found once is replaced, through an overlay", old: `fmt.Print(`, new: `fmt.Println(`, printed: "old old\n"},
		{name: "a snippet the code no longer holds does not apply", old: `fmt.Printf(`, new: `fmt.Println(`, drift: true},
		{name: "a snippet found twice does not apply", old: `"old"`, new: `"new"`, drift: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, text := range map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "main.go": program} {
				if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			overlay, err := apply(root, mutant{name: "m", file: "main.go", old: tc.old, new: tc.new}, filepath.Join(t.TempDir(), "m"))
			if tc.drift {
				if !errors.Is(err, errDrift) {
					t.Fatalf("apply: %v, want %v", err, errDrift)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("go", "run", "-overlay", overlay, ".")
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil || string(out) != tc.printed {
				t.Fatalf("the mutated program printed %q (%v), want %q", out, err, tc.printed)
			}
			if text, _ := os.ReadFile(filepath.Join(root, "main.go")); string(text) != program {
				t.Fatalf("the tree was changed: %s", text)
			}
		})
	}
}

// TestEveryMutantAppliesToTheCode keeps the table on today's code: a mutant whose snippet was
// changed away would otherwise measure nothing.
func TestEveryMutantAppliesToTheCode(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range mutants {
		if seen[m.name] {
			t.Errorf("two mutants are named %s", m.name)
		}
		seen[m.name] = true
		if m.rule == "" || m.old == m.new {
			t.Errorf("mutant %s names no rule, or changes nothing", m.name)
		}
		if _, err := apply(moduleRoot, m, filepath.Join(t.TempDir(), m.name)); err != nil {
			t.Errorf("mutant %s: %v", m.name, err)
		}
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name, output string
		want         outcome
	}{
		{
			name:   "a broken promise kills the mutant, named with the seed that broke it",
			output: "--- FAIL: TestExplore (3.2s)\n    explore_test.go:88: [rapid] failed after 6 tests: completed without the copy it asked for: operation ebs:v2:x\n\n        replay: ...\n",
			want:   outcome{verdict: killed, why: "completed without the copy it asked for (at seed 6)"},
		},
		{
			name:   "a regression scenario that breaks its promise kills the mutant, named",
			output: "--- FAIL: TestRegressions (0.9s)\n    --- FAIL: TestRegressions/audit_keeps_it (0.01s)\n        regress_test.go:304: ...\nok\n",
			want:   outcome{verdict: killed, why: "regression scenario audit keeps it"},
		},
		{
			name:   "a panic kills the mutant",
			output: "    explore_test.go:88: [rapid] panic after 2 tests: runtime error: index out of range\n",
			want:   outcome{verdict: killed, why: "panic: runtime error: index out of range (at seed 2)"},
		},
		{
			name:   "a mutant that does not compile is reported as such",
			output: "# github.com/velero-async/velero-plugin-for-aws/internal/ebs\nidentity.go:31:2: declared and not used: uid\nFAIL\tgithub.com/velero-async/velero-plugin-for-aws/internal/testkit/explore [build failed]\n",
			want:   outcome{verdict: notBuilding},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judge(tc.output)
			if got.verdict != tc.want.verdict || tc.want.why != "" && got.why != tc.want.why {
				t.Fatalf("judge = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestChooseNamesTheMutantsWhenOneIsUnknown(t *testing.T) {
	got, err := choose(mutants, mutants[1].name+", "+mutants[0].name)
	if err != nil || len(got) != 2 || got[0].name != mutants[1].name {
		t.Fatalf("choose: %v %v, want the two named, in that order", namesOf(got), err)
	}
	if _, err := choose(mutants, "no-such-mutant"); err == nil || !strings.Contains(err.Error(), mutants[0].name) {
		t.Fatalf("choose of an unknown name: %v, want an error naming the mutants", err)
	}
}
