package explore

import (
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// defaultSeeds is the seed budget of a plain go test: about two minutes on two cores (one
// seed runs at a time: about 100 a second on today's code, where most runs stop at a known finding).
const defaultSeeds = 8000

// defaultSeed is the seed go test starts from unless -rapid.seed names another.
const defaultSeed = 1

var hunt = flag.String("explore.hunt", "", "fail only on broken promises whose name contains this (to count the seeds a finding takes)")

func TestMain(m *testing.M) {
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["rapid.checks"] {
		_ = flag.Set("rapid.checks", fmt.Sprint(defaultSeeds))
	}
	if !set["rapid.seed"] {
		// go test (make test, CI) runs the same seeds every time, so that its verdict is the
		// code's; make explore draws new ones.
		_ = flag.Set("rapid.seed", fmt.Sprint(defaultSeed))
	}
	if !set["rapid.nofailfile"] {
		_ = flag.Set("rapid.nofailfile", "true")
	}
	dir, err := os.MkdirTemp("", "explore-credentials-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	credentialsDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// figures are what a run of the explorer covered.
type figures struct {
	mu           sync.Mutex
	seeds, steps int
	interleaving map[uint64]bool
	known        map[category]int
	// byActor counts the seeds in which each actor kind took a step.
	byActor map[string]int
}

func (f *figures) add(w *world) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seeds++
	f.steps += len(w.kinds)
	h := fnv.New64a()
	for _, k := range w.kinds {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	f.interleaving[h.Sum64()] = true
	acted := map[string]bool{}
	for _, k := range w.kinds {
		if !acted[k] {
			acted[k] = true
			f.byActor[k]++
		}
	}
	seen := map[category]bool{}
	for _, v := range w.violations {
		if !seen[v.cat] {
			seen[v.cat] = true
			f.known[v.cat]++
		}
	}
}

// counts says whether a broken promise fails the run: one whose name contains -explore.hunt
// when hunting, else any but those of findings known to be open.
func counts(cat category) bool {
	if *hunt != "" {
		return strings.Contains(string(cat), *hunt)
	}
	return !knownOpen[cat]
}

// report fails t with a run's broken promise: the trace, one line per step, and how to replay it.
func report(t *rapid.T, w *world, v violation) {
	t.Fatalf("%s\n\nreplay: go test ./internal/testkit/explore/ -run '^TestExplore$' -count=1 -v -rapid.seed=SEED (SEED: rapid's \"To reproduce\" line below)\ntrace of the shortest run found:\n%s",
		v, strings.Join(w.trace, "\n"))
}

// TestExplore explores seeded interleavings of Velero, other installs and tools and a faulty
// EC2, failing on any broken promise but those of findings known to be open (knownOpen).
func TestExplore(t *testing.T) {
	f := &figures{interleaving: map[uint64]bool{}, known: map[category]int{}, byActor: map[string]int{}}
	start := time.Now()
	rapid.Check(t, func(t *rapid.T) {
		w := explore(t, counts)
		f.add(w)
		for _, v := range w.violations {
			if counts(v.cat) {
				report(t, w, v)
			}
		}
	})
	elapsed := time.Since(start).Seconds()
	t.Logf("%d seeds in %.1f s: %.1f seeds/s, %.1f steps/seed, %d distinct interleavings of actor kinds",
		f.seeds, elapsed, float64(f.seeds)/elapsed, float64(f.steps)/float64(max(f.seeds, 1)), len(f.interleaving))
	for actor, n := range f.byActor {
		t.Logf("%q took a step in %d seeds", actor, n)
	}
	for cat, n := range f.known {
		t.Logf("known open, seen in %d seeds: %s", n, cat)
	}
}
