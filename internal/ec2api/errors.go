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
	CodeTagLimitExceeded                      = "TagLimitExceeded"
)

// Code returns the EC2 error code carried by err, or "" when err is not an API error of EC2
// (a failure to obtain credentials carries STS's or the identity provider's code, not EC2's).
func Code(err error) string {
	if IsCredentialsFailure(err) {
		return ""
	}
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
	if err == nil || IsThrottle(err) || IsCredentialsFailure(err) {
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
// or may not have worked, a failure to obtain credentials (whatever STS, the identity provider
// or the metadata service answered: a new role's trust policy propagating, an identity
// provider that is down), or a failure that is not EC2's answer at all. EC2's definite refusals and invalid parameters are not.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var apiErr smithy.APIError
	var invalid *smithy.InvalidParamsError
	return IsCredentialsFailure(err) || IsThrottle(err) || IsAmbiguous(err) || !errors.As(err, &apiErr) && !errors.As(err, &invalid)
}

// CredentialsError is a failure to obtain AWS credentials: nothing was sent to EC2.
type CredentialsError struct{ Err error }

func (e *CredentialsError) Error() string { return "obtaining AWS credentials: " + e.Err.Error() }

// Unwrap returns the credential provider's error.
func (e *CredentialsError) Unwrap() error { return e.Err }

// IsCredentialsFailure reports whether err is a failure to obtain credentials, which is never
// EC2's answer and never ambiguous: no request went out.
func IsCredentialsFailure(err error) bool {
	var c *CredentialsError
	return errors.As(err, &c)
}
