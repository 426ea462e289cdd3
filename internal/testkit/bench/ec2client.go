package bench

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// newEC2 returns an aws-sdk-go-v2 EC2 client for region, reaching the endpoint the harness set
// in the environment, with the adaptive retry mode, many attempts and no retry quota: the
// baselines ride out throttling as patiently as the SDK allows.
func newEC2(ctx context.Context, region string) (*ec2.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region), config.WithRetryer(func() aws.Retryer {
		return retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
			o.StandardOptions = append(o.StandardOptions, func(so *retry.StandardOptions) {
				so.MaxAttempts = 50
				so.MaxBackoff = 5 * time.Second
				so.RateLimiter = ratelimit.None
			})
		})
	}))
	if err != nil {
		return nil, err
	}
	return ec2.NewFromConfig(cfg), nil
}
