package ec2api

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// EC2 error codes the plugin acts on.
const (
	CodeRequestLimitExceeded                  = "RequestLimitExceeded"
	CodeResourceLimitExceeded                 = "ResourceLimitExceeded"
	CodeSnapshotCreationPerVolumeRateExceeded = "SnapshotCreationPerVolumeRateExceeded"
	CodeConcurrentSnapshotLimitExceeded       = "ConcurrentSnapshotLimitExceeded"
	CodeIncorrectState                        = "IncorrectState"
	CodeSnapshotNotFound                      = "InvalidSnapshot.NotFound"
	CodeVolumeNotFound                        = "InvalidVolume.NotFound"
)

// Code returns the EC2 error code carried by err, or "" when err is not an API error.
func Code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// IsThrottle reports whether err is EC2 refusing a request for its rate (the request had no effect).
func IsThrottle(err error) bool {
	_, ok := retry.DefaultThrottleErrorCodes[Code(err)]
	return ok
}

// IsNotFound reports whether err says a snapshot or volume does not exist.
func IsNotFound(err error) bool {
	switch Code(err) {
	case CodeSnapshotNotFound, CodeVolumeNotFound:
		return true
	}
	return false
}

// IsAmbiguous reports whether a failed mutating request may still have taken effect: no EC2
// answer at all (timeout, dropped connection), or a server-side (5xx) error other than
// throttling. A definite refusal (a 4xx answer, throttling, a request the SDK never sent because
// its parameters were invalid) is not ambiguous.
func IsAmbiguous(err error) bool {
	if err == nil || IsThrottle(err) {
		return false
	}
	var invalid *smithy.InvalidParamsError
	if errors.As(err, &invalid) {
		return false
	}
	var resp *awshttp.ResponseError
	if errors.As(err, &resp) {
		// Status 0: the SDK sent the request and got no answer.
		status := resp.HTTPStatusCode()
		return status == 0 || status >= 500
	}
	return true
}

// IsTransient reports whether err is worth another try later: throttling, a server-side error,
// or no answer at all.
func IsTransient(err error) bool {
	return err != nil && (IsThrottle(err) || IsAmbiguous(err))
}
