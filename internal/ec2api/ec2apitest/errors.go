// Package ec2apitest builds EC2 errors the way aws-sdk-go-v2 surfaces them, for tests.
package ec2apitest

import (
	"errors"
	"net"
	"net/http"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// APIError is an EC2 error code with no HTTP response around it.
func APIError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "EC2 says " + code}
}

// HTTPError is an EC2 error code answered with an HTTP status.
func HTTPError(status int, code string) error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      APIError(code),
	}}
}

// NetError is a connection reset while waiting for an answer, outside any SDK wrapping.
func NetError() error {
	return &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

// NotSent is a failure before any request went out, such as credentials that cannot be had.
func NotSent() error { return errors.New("failed to refresh cached credentials") }

// NoAnswer is a request the SDK sent without getting an answer: a ResponseError without an
// HTTP status around the transport's error.
func NoAnswer() error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{}},
		Err:      &smithyhttp.RequestSendError{Err: NetError()},
	}}
}
