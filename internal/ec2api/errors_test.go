package ec2api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api/ec2apitest"
)

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		name                                     string
		err                                      error
		code                                     string
		throttle, notFound, ambiguous, transient bool
	}{
		{name: "nil", err: nil},
		{name: "RequestLimitExceeded 503", err: httpErr(503, CodeRequestLimitExceeded), code: CodeRequestLimitExceeded, throttle: true, transient: true},
		{name: "RequestLimitExceeded wrapped", err: fmt.Errorf("creating: %w", httpErr(503, CodeRequestLimitExceeded)), code: CodeRequestLimitExceeded, throttle: true, transient: true},
		{name: "Throttling", err: httpErr(400, "Throttling"), code: "Throttling", throttle: true, transient: true},
		{name: "InternalError 500", err: httpErr(500, "InternalError"), code: "InternalError", ambiguous: true, transient: true},
		{name: "Unavailable 503", err: httpErr(503, "Unavailable"), code: "Unavailable", ambiguous: true, transient: true},
		{name: "snapshot not found", err: httpErr(400, CodeSnapshotNotFound), code: CodeSnapshotNotFound, notFound: true},
		{name: "volume not found", err: httpErr(400, CodeVolumeNotFound), code: CodeVolumeNotFound, notFound: true},
		{name: "wrapped not found", err: fmt.Errorf("x: %w", httpErr(400, CodeSnapshotNotFound)), code: CodeSnapshotNotFound, notFound: true},
		{name: "IncorrectState", err: httpErr(400, CodeIncorrectState), code: CodeIncorrectState},
		{name: "ResourceLimitExceeded", err: httpErr(400, CodeResourceLimitExceeded), code: CodeResourceLimitExceeded},
		{name: "per-volume rate is not throttling", err: httpErr(400, CodeSnapshotCreationPerVolumeRateExceeded), code: CodeSnapshotCreationPerVolumeRateExceeded},
		{name: "concurrent limit is not throttling", err: httpErr(400, CodeConcurrentSnapshotLimitExceeded), code: CodeConcurrentSnapshotLimitExceeded},
		{name: "UnauthorizedOperation 403", err: httpErr(403, "UnauthorizedOperation"), code: "UnauthorizedOperation"},
		{name: "no answer", err: netErr(), ambiguous: true, transient: true},
		{name: "deadline", err: fmt.Errorf("op: %w", context.DeadlineExceeded), ambiguous: true, transient: true},
		{name: "invalid parameters, never sent", err: &smithy.InvalidParamsError{Context: "CreateSnapshotInput"}},
		{name: "no credentials, never sent", err: ec2apitest.NotSent(), transient: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []any{Code(tt.err), IsThrottle(tt.err), IsNotFound(tt.err), IsAmbiguous(tt.err), IsTransient(tt.err)}
			want := []any{tt.code, tt.throttle, tt.notFound, tt.ambiguous, tt.transient}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Code, IsThrottle, IsNotFound, IsAmbiguous, IsTransient = %v, want %v", got, want)
			}
		})
	}
}

// A request that got no answer reaches the caller as the SDK wraps it: a ResponseError with
// no HTTP status. It may have taken effect, and is worth another try.
func TestNoAnswerThroughTheSDK(t *testing.T) {
	for _, answer := range []error{errors.New("connection reset"), context.DeadlineExceeded} {
		h := &fakeHTTP{answers: []fakeAnswer{{err: answer}}}
		_, err := testClient(h, quickRetryer()).CreateSnapshot(context.Background(),
			&ec2.CreateSnapshotInput{VolumeId: aws.String("vol-01234567")}, RetryThrottlingOnly)
		if err == nil || !IsAmbiguous(err) || !IsTransient(err) {
			t.Errorf("%v: ambiguous %v, transient %v; want both", err, IsAmbiguous(err), IsTransient(err))
		}
	}
}
