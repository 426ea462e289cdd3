package ec2api

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
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
	CodeUnauthorized                          = "UnauthorizedOperation"
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

// IsAmbiguous reports whether a failed mutating request may still have taken effect: it was
// sent and got no answer (a dropped connection, a timeout), or a server-side (5xx) error other
// than throttling. A definite refusal (a 4xx answer, throttling) is not ambiguous, and neither is
// a failure before anything was sent (invalid parameters, no credentials, presigning).
func IsAmbiguous(err error) bool {
	if err == nil || IsThrottle(err) {
		return false
	}
	var resp *awshttp.ResponseError
	if errors.As(err, &resp) {
		// Status 0: the SDK sent the request and got no answer.
		status := resp.HTTPStatusCode()
		return status == 0 || status >= 500
	}
	var send *smithyhttp.RequestSendError
	var netErr net.Error
	return errors.As(err, &send) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// IsTransient reports whether err is worth another try later: throttling, a request that may
// or may not have worked, or a failure that is not EC2's answer at all (credentials not
// reachable yet, for example). EC2's definite refusals and invalid parameters are not.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var apiErr smithy.APIError
	var invalid *smithy.InvalidParamsError
	return IsThrottle(err) || IsAmbiguous(err) || !errors.As(err, &apiErr) && !errors.As(err, &invalid)
}
