package bench

import (
	"math"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// EC2 limits the lower bounds depend on, as AWS documents them (ThrottleScale 1): the request
// buckets (size and refill per second) of CreateSnapshot and CreateVolume, and the account's
// copies in flight per destination region. CopySnapshot's bucket is ec2api's.
const (
	createSnapshotBurst = 100
	createSnapshotRate  = 5
	createVolumeBurst   = 100
	createVolumeRate    = 5
	copySlots           = 20
	// describeBurst and describeRate are the bucket of filtered or paginated Describe requests.
	describeBurst = 100
	describeRate  = 20
)

// bucket is one of EC2's request buckets at a throttle scale: its size and refill per second,
// both infinite when EC2 does not throttle.
type bucket struct {
	burst, rate float64
}

// newBucket is the bucket of AWS's size and rate at scale (0 or less: not throttled).
func newBucket(burst, rate int, scale float64) bucket {
	if scale <= 0 {
		return bucket{math.Inf(1), math.Inf(1)}
	}
	return bucket{float64(burst) * scale, float64(rate) * scale}
}

func (b bucket) unthrottled() bool { return math.IsInf(b.rate, 1) }

// issueTime is the shortest time to issue n requests from the full bucket: the burst at once,
// the rest at the refill rate.
func (b bucket) issueTime(n int) time.Duration {
	if b.unthrottled() {
		return 0
	}
	return Seconds(math.Max(0, float64(n)-b.burst) / b.rate).Duration()
}

// refillTime is how long the bucket takes to fill up from empty.
func (b bucket) refillTime() time.Duration {
	if b.unthrottled() {
		return 0
	}
	return Seconds(b.burst / b.rate).Duration()
}

// serialIssue is the earliest end of each of a sequence of item phases that draw from the
// bucket, full at time 0: phase k starts at starts[k] or when phase k-1 ends, whichever is
// later (Velero's backup controller runs one backup at a time), and issues sizes[k] requests.
func (b bucket) serialIssue(starts []time.Duration, sizes []int) []time.Duration {
	ends := make([]time.Duration, len(sizes))
	tokens, clock := b.burst, 0.0 // tokens in the bucket at clock, in seconds
	for k, n := range sizes {
		start := math.Max(starts[k].Seconds(), clock)
		if b.unthrottled() {
			ends[k], clock = Seconds(start).Duration(), start
			continue
		}
		tokens = math.Min(b.burst, tokens+b.rate*(start-clock))
		wait := math.Max(0, float64(n)-tokens) / b.rate
		tokens = math.Max(0, tokens-float64(n))
		clock = start + wait
		ends[k] = Seconds(clock).Duration()
	}
	return ends
}

// copyPhase is the shortest time n copies take from the end of their backup's item phase: the
// longest snapshot plus ceil(n/20) waves of the mean copy duration through the account's copy
// slots or, when longer, the time to issue them at the CopySnapshot rate (sources completed
// during the item phase can be copied at once) plus the mean copy duration.
func copyPhase(n int, snapshots, copies ec2sim.DurationRange, scale float64) time.Duration {
	waves := time.Duration((n + copySlots - 1) / copySlots)
	rate := newBucket(ec2api.CopySnapshotBurst, ec2api.CopySnapshotRefill, scale)
	return max(longest(snapshots)+waves*mean(copies), rate.issueTime(n)+mean(copies))
}

func longest(r ec2sim.DurationRange) time.Duration {
	return max(r.Min.Duration, r.Max.Duration)
}

func mean(r ec2sim.DurationRange) time.Duration {
	if r.Max.Duration == 0 {
		return r.Min.Duration
	}
	return (r.Min.Duration + r.Max.Duration) / 2
}
