package bench

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

const (
	// patientAttempts and patientBackoff are the baselines' retries: as patient as the SDK allows.
	patientAttempts = 50
	patientBackoff  = 5 * time.Second
)

// newEC2 returns an EC2 client of the simulator at url in region with the adaptive retry mode,
// many attempts and no retry quota: the baselines ride out throttling as patiently as the SDK
// allows.
func newEC2(url, region string) *ec2.Client {
	return rig.NewEC2(url, region, func(o *ec2.Options) {
		o.RetryMaxAttempts = patientAttempts
		o.Retryer = retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
			o.StandardOptions = append(o.StandardOptions, func(so *retry.StandardOptions) {
				so.MaxAttempts = patientAttempts
				so.MaxBackoff = patientBackoff
				so.RateLimiter = ratelimit.None
			})
		})
	})
}
