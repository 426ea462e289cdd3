package ec2api

import (
	"errors"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Errors as the SDK surfaces them.

func apiErr(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "EC2 says " + code}
}

func httpErr(status int, code string) error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      apiErr(code),
	}}
}

func netErr() error { return errors.New("connection reset") }
