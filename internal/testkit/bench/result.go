package bench

import (
	"slices"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Result is one strategy's run of a scenario.
type Result struct {
	// Strategy names what ran: "plugin", "blocking" or "naive-async".
	Strategy string `json:"strategy"`
	// Volumes is the scenario's volume count; Measured how many volumes actually ran (fewer
	// when a serial strategy is scaled linearly).
	Volumes  int `json:"volumes"`
	Measured int `json:"measuredVolumes"`
	// Makespan is from the backup's start to its end (scaled to Volumes if Measured is smaller).
	Makespan Seconds `json:"makespanSeconds"`
	// Bound is the scenario's lower bound; Ratio is Makespan / Bound.
	Bound Seconds `json:"lowerBoundSeconds"`
	Ratio float64 `json:"ratio"`
	// Calls counts EC2 responses per action (scaled like Makespan); TotalCalls sums them.
	Calls      map[string]int `json:"ec2Calls"`
	TotalCalls int            `json:"ec2CallsTotal"`
	// ItemPhaseCalls are the responses of Calls made before the backup's first reconcile:
	// during its item phase (absent for the blocking baseline and for restores).
	ItemPhaseCalls map[string]int `json:"ec2CallsItemPhase,omitempty"`
	// Throttled counts RequestLimitExceeded responses.
	Throttled int `json:"throttled"`
	// FailedOps counts failed operations (or volumes, for the blocking baseline).
	FailedOps int `json:"failedOps"`
	// PeakCopies is the most copies pending at once in the copy region.
	PeakCopies int `json:"peakCopiesInFlight"`
	// PeakMemoryBytes is the peak VmHWM of a plugin process; 0 for in-process strategies.
	PeakMemoryBytes int64 `json:"peakPluginMemoryBytes"`
	// Reconciles counts Velero's operation reconciles (0 for the blocking baseline).
	Reconciles int `json:"reconciles"`
	// ThrottleScale is the run's EC2 request rates as a multiple of AWS's.
	ThrottleScale float64 `json:"throttleScale"`
	// LongestReconcile is the longest time one reconcile spent in Progress and Cancel calls.
	LongestReconcile Seconds `json:"longestReconcileSeconds"`
	// ProgressPerOp is the time of one reconcile's Progress calls divided by the operations
	// they were for: the median over every reconcile, and that of the busiest reconcile (the
	// most operations open; the first one at the latest).
	ProgressPerOp        Millis `json:"progressPerOpMsMedian"`
	ProgressPerOpBusiest Millis `json:"progressPerOpMsBusiest"`
}

// Seconds is a duration written as seconds in JSON.
type Seconds float64

// Duration converts back to a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

func seconds(d time.Duration) Seconds { return Seconds(d.Seconds()) }

// Millis is a duration written as milliseconds in JSON.
type Millis float64

func millis(d time.Duration) Millis { return Millis(float64(d) / float64(time.Millisecond)) }

// fillReconciles sets the reconcile figures from the reconciles of a run's backups.
func (r *Result) fillReconciles(times []harness.ReconcileTime) {
	var perOp []time.Duration
	busiest := harness.ReconcileTime{}
	for _, t := range times {
		r.LongestReconcile = max(r.LongestReconcile, seconds(t.Took))
		if t.Open == 0 {
			continue
		}
		perOp = append(perOp, t.PerOperation())
		if t.Open > busiest.Open {
			busiest = t
		}
	}
	r.ProgressPerOp = millis(median(perOp))
	r.ProgressPerOpBusiest = millis(busiest.PerOperation())
}

// median is the middle of ds (the mean of the two middle ones for an even count); 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// fill sets the figures a lower bound and the simulator's counters give, scaling calls by
// Volumes/Measured; copies count in copyRegion.
func (r *Result) fill(bound time.Duration, copyRegion string, st ec2sim.Stats, makespan time.Duration) {
	factor := float64(r.Volumes) / float64(r.Measured)
	r.Makespan = seconds(time.Duration(float64(makespan) * factor))
	r.Bound = seconds(bound)
	r.Ratio = float64(r.Makespan) / float64(r.Bound)
	r.Calls = map[string]int{}
	for action, n := range rig.CallsByAction(st) {
		r.Calls[action] = int(float64(n) * factor)
		r.TotalCalls += r.Calls[action]
	}
	r.Throttled = int(float64(rig.CallsByOutcome(st)[rig.Throttled]) * factor)
	r.PeakCopies = st.PeakCopiesInFlight[copyRegion]
}

// CallsPerVolume is TotalCalls / Volumes.
func (r Result) CallsPerVolume() float64 { return float64(r.TotalCalls) / float64(r.Volumes) }

// callsSince is the simulator's calls between two of its Stats, for a run that follows a
// set-up on the same simulator.
func callsSince(before, after ec2sim.Stats) ec2sim.Stats {
	calls := map[string]map[string]map[string]int{}
	for region, actions := range after.Calls {
		calls[region] = map[string]map[string]int{}
		for action, outcomes := range actions {
			calls[region][action] = map[string]int{}
			for outcome, n := range outcomes {
				calls[region][action][outcome] = n - before.Calls[region][action][outcome]
			}
		}
	}
	return ec2sim.Stats{Calls: calls, PeakCopiesInFlight: after.PeakCopiesInFlight}
}
