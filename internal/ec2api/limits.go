package ec2api

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/middleware"
	"golang.org/x/time/rate"
)

// actionClass is one of EC2's request-rate buckets.
type actionClass int

const (
	describeFiltered actionClass = iota
	describeUnfiltered
	createSnapshot
	deleteSnapshot
	createVolume
	createTags
	otherMutating
)

// EC2's request bucket for CopySnapshot (with the other mutating actions): its size and refill
// rate per second.
const (
	CopySnapshotBurst  = 50
	CopySnapshotRefill = 5
)

// awsRates are the bucket sizes and refill rates (per second) AWS documents for each class.
var awsRates = map[actionClass]struct {
	burst  int
	refill rate.Limit
}{
	describeFiltered:   {100, 20},
	describeUnfiltered: {50, 10},
	createSnapshot:     {100, 5},
	deleteSnapshot:     {100, 5},
	createVolume:       {100, 5},
	createTags:         {100, 10},
	otherMutating:      {CopySnapshotBurst, CopySnapshotRefill},
}

// classify names the bucket a request draws from. Describe calls with no filter, ID or page
// size draw from the smaller "unfiltered" bucket; DescribeVolumeStatus is classed as
// DescribeVolumes is.
func classify(params any) actionClass {
	switch in := params.(type) {
	case *ec2.DescribeSnapshotsInput:
		if len(in.Filters) == 0 && len(in.SnapshotIds) == 0 && in.MaxResults == nil {
			return describeUnfiltered
		}
	case *ec2.DescribeVolumesInput:
		if len(in.Filters) == 0 && len(in.VolumeIds) == 0 && in.MaxResults == nil {
			return describeUnfiltered
		}
	case *ec2.DescribeVolumeStatusInput:
		if len(in.Filters) == 0 && len(in.VolumeIds) == 0 && in.MaxResults == nil {
			return describeUnfiltered
		}
	case *ec2.DescribeAvailabilityZonesInput, *ec2.DescribeLockedSnapshotsInput, *ec2.DescribeSnapshotAttributeInput:
	case *ec2.CreateSnapshotInput:
		return createSnapshot
	case *ec2.DeleteSnapshotInput:
		return deleteSnapshot
	case *ec2.CreateVolumeInput:
		return createVolume
	case *ec2.CreateTagsInput:
		return createTags
	default:
		return otherMutating
	}
	return describeFiltered
}

// requestLimiter spends a region's requests at the rates AWS grants, so one plugin process does
// not drain the account's buckets and make EC2 throttle everyone.
type requestLimiter struct {
	buckets map[actionClass]*rate.Limiter
}

func newRequestLimiter() *requestLimiter {
	l := &requestLimiter{buckets: map[actionClass]*rate.Limiter{}}
	for class, r := range awsRates {
		l.buckets[class] = rate.NewLimiter(r.refill, r.burst)
	}
	return l
}

type classKey struct{}

// retryStep is the ID of the SDK's retry loop in the Finalize step.
const retryStep = "Retry"

// addTo installs the limiter in an operation's middleware stack: the request is classified once,
// and every attempt, retries included, waits for a token of its class. A stack without attempts
// (the SDK presigning CopySnapshot's source-region request) sends nothing and is left alone.
func (l *requestLimiter) addTo(stack *middleware.Stack) error {
	if _, ok := stack.Finalize.Get(retryStep); !ok {
		return nil
	}
	classifyStep := middleware.InitializeMiddlewareFunc("RequestClass",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(middleware.WithStackValue(ctx, classKey{}, classify(in.Parameters)), in)
		})
	if err := stack.Initialize.Add(classifyStep, middleware.After); err != nil {
		return err
	}
	waitStep := middleware.FinalizeMiddlewareFunc("RequestRateLimit",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			class, _ := middleware.GetStackValue(ctx, classKey{}).(actionClass)
			if err := l.buckets[class].Wait(ctx); err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
			return next.HandleFinalize(ctx, in)
		})
	return stack.Finalize.Insert(waitStep, retryStep, middleware.After)
}
