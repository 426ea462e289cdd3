package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything `make bench` measures, as printed and as written to JSON.
type Report struct {
	// Scenario is the standard scenario; Strategies its results, one per strategy.
	Scenario   Scenario `json:"scenario"`
	Strategies []Result `json:"strategies"`
	// Comparison holds the plugin and the blocking baseline at the comparison volume count.
	Comparison []Result `json:"comparison"`
	// GrowthScenario is the scenario of the growth runs, whose volume count varies.
	GrowthScenario Scenario `json:"growthScenario"`
	Growth         []Result `json:"growth"`
	// Targets are the plugin's targets with the measured figures.
	Targets []Target `json:"targets"`
}

// Target is one of the plugin's performance targets.
type Target struct {
	Name     string  `json:"name"`
	Measured float64 `json:"measured"`
	Limit    float64 `json:"limit"`
	// AtMost is true for ceilings (measured ≤ limit), false for floors (measured ≥ limit).
	AtMost bool `json:"atMost"`
	Pass   bool `json:"pass"`
}

func ceiling(name string, measured, limit float64) Target {
	return Target{Name: name, Measured: measured, Limit: limit, AtMost: true, Pass: measured <= limit}
}

func floor(name string, measured, limit float64) Target {
	return Target{Name: name, Measured: measured, Limit: limit, Pass: measured >= limit}
}

// scaledTo rescales a serial strategy's result to n volumes under scenario sc.
func (r Result) scaledTo(n int, sc Scenario) Result {
	f := float64(n) / float64(r.Volumes)
	out := r
	out.Volumes = n
	out.Makespan = Seconds(float64(r.Makespan) * f)
	out.Bound = seconds(sc.LowerBound())
	out.Ratio = float64(out.Makespan) / float64(out.Bound)
	out.Calls, out.TotalCalls = map[string]int{}, 0
	for a, c := range r.Calls {
		out.Calls[a] = int(float64(c) * f)
		out.TotalCalls += out.Calls[a]
	}
	out.Throttled = int(float64(r.Throttled) * f)
	out.FailedOps = int(float64(r.FailedOps) * f)
	return out
}

// evaluate fills the targets from the results.
func (rep *Report) evaluate() {
	rep.Targets = nil
	for _, r := range rep.Strategies {
		if r.Strategy == "plugin" {
			rep.Targets = append(rep.Targets, ceiling(fmt.Sprintf("makespan / lower bound at N=%d", r.Volumes), r.Ratio, 1.15))
		}
	}
	for _, r := range append(append([]Result{}, rep.Strategies...), rep.Growth...) {
		if r.Strategy != "plugin" {
			continue
		}
		rep.Targets = append(rep.Targets,
			ceiling(fmt.Sprintf("EC2 calls ≤ 3N + 3×reconciles at N=%d", r.Volumes), float64(r.TotalCalls), float64(3*r.Volumes+3*r.Reconciles)),
			ceiling(fmt.Sprintf("failed operations at N=%d", r.Volumes), float64(r.FailedOps), 0))
	}
	if len(rep.Comparison) == 2 && rep.Comparison[0].Makespan > 0 {
		p, b := rep.Comparison[0], rep.Comparison[1]
		rep.Targets = append(rep.Targets, floor(fmt.Sprintf("blocking makespan / plugin makespan at N=%d", p.Volumes), float64(b.Makespan/p.Makespan), 20))
	}
}

// WriteJSON writes the report to path.
func (rep *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Print writes the report as tables.
func (rep *Report) Print(w io.Writer) {
	sc := rep.Scenario
	fmt.Fprintf(w, "\nStandard scenario: %s\n", sc.describe())
	fmt.Fprintf(w, "Lower bound at N=%d: %s (CreateSnapshot issue time at 100 burst + 5/s, + longest snapshot, + ceil(N/20) copy waves of the mean copy duration)\n\n", sc.Volumes, sc.LowerBound().Round(100*time.Millisecond))
	printResults(w, rep.Strategies)
	printCalls(w, rep.Strategies)
	if len(rep.Comparison) == 2 {
		fmt.Fprintf(w, "\nAt N=%d (same durations):\n", rep.Comparison[0].Volumes)
		printResults(w, rep.Comparison)
	}
	for _, r := range append(rep.Strategies, rep.Comparison...) {
		if r.Measured < r.Volumes {
			fmt.Fprintf(w, "  %s: measured on %d volumes and scaled linearly to N (exact for a serial strategy)\n", r.Strategy, r.Measured)
			break
		}
	}
	if len(rep.Growth) > 0 {
		fmt.Fprintf(w, "\nEC2 calls vs N for the plugin (%s):\n", rep.GrowthScenario.conditions())
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "N\tEC2 calls\tper volume\treconciles\t3N+3×reconciles\tthrottled\tfailed ops\tmakespan\t")
		for _, r := range rep.Growth {
			fmt.Fprintf(tw, "%d\t%d\t%.2f\t%d\t%d\t%d\t%d\t%.1fs\t\n", r.Volumes, r.TotalCalls, float64(r.TotalCalls)/float64(r.Volumes),
				r.Reconciles, 3*r.Volumes+3*r.Reconciles, r.Throttled, r.FailedOps, r.Makespan)
		}
		_ = tw.Flush()
	}
	fmt.Fprintln(w, "\nTargets for the plugin:")
	for _, t := range rep.Targets {
		verdict, op := "FAIL", "≥"
		if t.Pass {
			verdict = "pass"
		}
		if t.AtMost {
			op = "≤"
		}
		fmt.Fprintf(w, "  [%s] %s: %.2f (target %s %g)\n", verdict, t.Name, t.Measured, op, t.Limit)
	}
}

func (sc Scenario) describe() string {
	return fmt.Sprintf("%d volumes, %s", sc.Volumes, sc.conditions())
}

func (sc Scenario) conditions() string {
	return fmt.Sprintf("snapshots %s, copies %s, sync period %s, throttling at %g× AWS's documented rates",
		&sc.Snapshots, &sc.Copies, sc.SyncPeriod, sc.ThrottleScale)
}

func printResults(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tN\tmakespan\tbound\tratio\tEC2 calls\tthrottled\tfailed ops\tpeak copies\tpeak plugin mem\treconciles\t")
	for _, r := range rs {
		mem := "in-process"
		if r.PeakMemoryBytes > 0 {
			mem = fmt.Sprintf("%.1f MiB", float64(r.PeakMemoryBytes)/(1<<20))
		}
		name := r.Strategy
		if r.Measured < r.Volumes {
			name += fmt.Sprintf(" (scaled from %d)", r.Measured)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1fs\t%.1fs\t%.2f\t%d\t%d\t%d\t%d\t%s\t%d\t\n", name, r.Volumes, r.Makespan, r.Bound, r.Ratio,
			r.TotalCalls, r.Throttled, r.FailedOps, r.PeakCopies, mem, r.Reconciles)
	}
	_ = tw.Flush()
}

func printCalls(w io.Writer, rs []Result) {
	actions := map[string]bool{}
	for _, r := range rs {
		for a := range r.Calls {
			actions[a] = true
		}
	}
	fmt.Fprintln(w, "\nEC2 calls by action (all outcomes, throttled included):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Strategy
	}
	fmt.Fprintf(tw, "action\t%s\t\n", strings.Join(names, "\t"))
	for _, a := range slices.Sorted(maps.Keys(actions)) {
		fmt.Fprint(tw, a)
		for _, r := range rs {
			fmt.Fprintf(tw, "\t%d", r.Calls[a])
		}
		fmt.Fprintln(tw, "\t")
	}
	_ = tw.Flush()
}
