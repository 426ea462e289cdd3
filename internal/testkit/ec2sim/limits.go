package ec2sim

import (
	"math"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// bucketClass names a token bucket of EC2's request rate limiting.
type bucketClass string

// The buckets AWS documents for the actions the simulator serves.
const (
	classDescribe           bucketClass = "describe"            // Describe* filtered, by ID or paginated
	classDescribeUnfiltered bucketClass = "describe-unfiltered" // DescribeSnapshots/DescribeVolumes with none of those
	classCreateSnapshot     bucketClass = "CreateSnapshot"
	classDeleteSnapshot     bucketClass = "DeleteSnapshot"
	classCreateVolume       bucketClass = "CreateVolume"
	classCreateTags         bucketClass = "CreateTags"
	classMutating           bucketClass = "mutating" // every other mutating action
)

// bucketSizes are AWS's documented bucket size and refill rate per second for each class.
var bucketSizes = map[bucketClass]struct{ size, refill float64 }{
	classDescribe:           {100, 20},
	classDescribeUnfiltered: {50, 10},
	classCreateSnapshot:     {100, 5},
	classDeleteSnapshot:     {100, 5},
	classCreateVolume:       {100, 5},
	classCreateTags:         {100, 10},
	classMutating:           {50, 5},
}

// buckets are the token buckets of one region; nil when throttling is off.
type buckets map[bucketClass]*rate.Limiter

func newBuckets(scale float64) buckets {
	if scale <= 0 {
		return nil
	}
	b := buckets{}
	for class, sz := range bucketSizes {
		burst := max(1, int(math.Round(sz.size*scale)))
		b[class] = rate.NewLimiter(rate.Limit(sz.refill*scale), burst)
	}
	return b
}

// allow takes a token for the request's class at now; false means RequestLimitExceeded.
func (b buckets) allow(q *request, now time.Time) bool {
	if b == nil {
		return true
	}
	return b[classOf(q)].AllowN(now, 1)
}

// classOf sorts a request into its bucket.
func classOf(q *request) bucketClass {
	switch q.action {
	case "CreateSnapshot":
		return classCreateSnapshot
	case "DeleteSnapshot":
		return classDeleteSnapshot
	case "CreateVolume":
		return classCreateVolume
	case "CreateTags":
		return classCreateTags
	case "DescribeSnapshots", "DescribeVolumes":
		if q.has("Filter.1.Name") || q.has("SnapshotId.1") || q.has("VolumeId.1") || q.has("MaxResults") {
			return classDescribe
		}
		return classDescribeUnfiltered
	}
	if strings.HasPrefix(q.action, "Describe") {
		return classDescribe
	}
	return classMutating
}

var errThrottled = &apiError{status: 503, code: "RequestLimitExceeded", message: "Request limit exceeded."}
