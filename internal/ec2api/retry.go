package ec2api

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Retry settings: enough patience to ride out a RequestLimitExceeded storm (the SDK backs off
// exponentially from 1 s for throttling, so 20 attempts wait several minutes in all), and no
// retry quota, which would otherwise turn a long storm into failed requests.
const (
	maxAttempts = 20
	maxBackoff  = 30 * time.Second
	// boundedAttempts and boundedBackoff bound one request on Velero's serial paths (Bounded).
	boundedAttempts = 3
	boundedBackoff  = time.Second
	// unansweredAttempts is how many times a request that gets no answer, or a 5xx that is not
	// throttling, is tried: a region that is down (an outage, a blocked network) answers
	// nothing for minutes, and no caller should wait out 20 attempts of it.
	unansweredAttempts = 3
)

// newRetryer returns the SDK's adaptive retry mode: exponential backoff plus a client-side
// rate that drops when EC2 throttles and recovers when it stops; throttling is retried
// patiently, requests that get no answer at most unansweredAttempts times.
func newRetryer() aws.Retryer {
	return unansweredFew{retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
		o.StandardOptions = append(o.StandardOptions, func(so *retry.StandardOptions) {
			so.MaxAttempts = maxAttempts
			so.MaxBackoff = maxBackoff
			so.RateLimiter = ratelimit.None
		})
	})}
}

// unansweredFew stops retrying a request that got no answer (or a 5xx other than throttling)
// after unansweredAttempts: the SDK's retry loop ends with the error RetryDelay returns.
type unansweredFew struct{ aws.RetryerV2 }

func (r unansweredFew) RetryDelay(attempt int, err error) (time.Duration, error) {
	if attempt >= unansweredAttempts && IsAmbiguous(err) {
		return 0, err
	}
	return r.RetryerV2.RetryDelay(attempt, err)
}

// RetryThrottlingOnly is a per-call option for requests EC2 cannot deduplicate (CreateSnapshot,
// CopySnapshot): the SDK retries only throttling, which EC2 answers before doing anything, and
// leaves every ambiguous failure to the caller, who must look the resource up before trying again.
func RetryThrottlingOnly(o *ec2.Options) {
	o.Retryer = throttlingOnly{o.Retryer}
}

type throttlingOnly struct{ aws.Retryer }

func (r throttlingOnly) IsErrorRetryable(err error) bool {
	return IsThrottle(err) && r.Retryer.IsErrorRetryable(err)
}

func (r throttlingOnly) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if v2, ok := r.Retryer.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return r.Retryer.GetInitialToken(), nil
}

// Bounded is a per-call option for calls on Velero's serial paths (Progress, Cancel): Velero
// polls every operation one after another, so no call may wait out a throttling storm there.
// It retries at most boundedAttempts times with at most boundedBackoff between attempts, and
// without the adaptive client-side rate, which would pace each attempt at EC2's rate. The
// plugin reports what is left and tries again at the next poll. Put it before
// RetryThrottlingOnly, which narrows whatever retryer it finds.
func Bounded(o *ec2.Options) {
	o.Retryer = boundedRetryer()
}

// boundedRetryer is the retryer of Bounded calls, and of every STS call.
func boundedRetryer() aws.Retryer {
	return retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = boundedAttempts
		so.MaxBackoff = boundedBackoff
		so.RateLimiter = ratelimit.None
	})
}
