package bench

import (
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
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
}

// Seconds is a duration written as seconds in JSON.
type Seconds float64

// Duration converts back to a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

func seconds(d time.Duration) Seconds { return Seconds(d.Seconds()) }

// fill sets the figures a scenario and the simulator's counters give, scaling calls by
// Volumes/Measured.
func (r *Result) fill(sc Scenario, st ec2sim.Stats, makespan time.Duration) {
	factor := float64(r.Volumes) / float64(r.Measured)
	r.Makespan = seconds(time.Duration(float64(makespan) * factor))
	r.Bound = seconds(sc.LowerBound())
	r.Ratio = float64(r.Makespan) / float64(r.Bound)
	r.Calls = map[string]int{}
	for action, n := range rig.CallsByAction(st) {
		r.Calls[action] = int(float64(n) * factor)
		r.TotalCalls += r.Calls[action]
	}
	r.Throttled = int(float64(rig.CallsByOutcome(st)[rig.Throttled]) * factor)
	r.PeakCopies = st.PeakCopiesInFlight[sc.CopyRegion]
}
