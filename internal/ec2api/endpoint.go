package ec2api

import (
	"context"
	"errors"
	"sync"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// NoAnswerError is a call whose last attempt got no answer from the endpoint it was sent to (a
// time limit passed, the connection was refused or dropped): it names the endpoint, which the
// SDK's own error leaves out when a deadline cuts the call. It wraps the SDK's error, so that
// IsAmbiguous and IsTransient see it as the request without an answer it is.
type NoAnswerError struct {
	// Endpoint is the scheme and host the request went to.
	Endpoint string
	Err      error
}

func (e *NoAnswerError) Error() string { return "no answer from " + e.Endpoint + ": " + e.Err.Error() }

// Unwrap returns the SDK's error.
func (e *NoAnswerError) Unwrap() error { return e.Err }

// endpointKey is the context key of a call's endpointSeen.
type endpointKey struct{}

// endpointSeen is the endpoint a call's attempts were sent to.
type endpointSeen struct {
	mu  sync.Mutex
	url string
}

func (s *endpointSeen) set(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.url = url
}

func (s *endpointSeen) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// nameEndpoint is an API option of every EC2 and STS client: each attempt records the endpoint
// it is sent to, and a call that ends without an answer says which endpoint did not answer.
func nameEndpoint(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("NameEndpointOfUnanswered",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			seen := &endpointSeen{}
			out, md, err := next.HandleInitialize(context.WithValue(ctx, endpointKey{}, seen), in)
			if url := seen.get(); err != nil && url != "" && unanswered(err) {
				err = &NoAnswerError{Endpoint: url, Err: err}
			}
			return out, md, err
		}), middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("RecordEndpoint",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			req, ok := in.Request.(*smithyhttp.Request)
			if seen, found := ctx.Value(endpointKey{}).(*endpointSeen); ok && found && req.URL != nil {
				seen.set(req.URL.Scheme + "://" + req.URL.Host)
			}
			return next.HandleFinalize(ctx, in)
		}), "ResolveEndpointV2", middleware.After)
}

// unanswered reports whether err is a request that got no HTTP answer: neither an answer with a
// status nor a failure to obtain credentials.
func unanswered(err error) bool {
	var resp *awshttp.ResponseError
	answered := errors.As(err, &resp) && resp.HTTPStatusCode() != 0
	return !answered && !IsCredentialsFailure(err)
}
