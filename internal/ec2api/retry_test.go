package ec2api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/middleware"
)

const (
	createSnapshotOK   = `<CreateSnapshotResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><snapshotId>snap-01234567</snapshotId><status>pending</status></CreateSnapshotResponse>`
	copySnapshotOK     = `<CopySnapshotResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><snapshotId>snap-89abcdef</snapshotId></CopySnapshotResponse>`
	describeVolumesOK  = `<DescribeVolumesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><volumeSet/></DescribeVolumesResponse>`
	ec2ErrorBodyFormat = `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>m</Message></Error></Errors><RequestID>r</RequestID></Response>`
)

type fakeAnswer struct {
	status int
	body   string // an EC2 error code when status is not 200
	err    error  // no answer at all
}

// fakeHTTP answers requests from answers in turn (the last repeats) and counts them.
type fakeHTTP struct {
	mu       sync.Mutex
	answers  []fakeAnswer
	attempts int
}

func (f *fakeHTTP) Do(*http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.answers[min(f.attempts, len(f.answers)-1)]
	f.attempts++
	if a.err != nil {
		return nil, a.err
	}
	body := a.body
	if a.status != 200 {
		body = fmt.Sprintf(ec2ErrorBodyFormat, a.body)
	}
	return &http.Response{StatusCode: a.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}, nil
}

// testClient is an EC2 client on fake HTTP with retryer (or the SDK's default) and apiOptions.
func testClient(h *fakeHTTP, retryer aws.Retryer, apiOptions ...func(*middleware.Stack) error) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:     "us-east-1",
		HTTPClient: h,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}, nil
		}),
		Retryer:    retryer,
		APIOptions: apiOptions,
	})
}

// quickRetryer retries like the SDK's standard mode, 3 attempts, without waiting.
func quickRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 3
		o.RateLimiter = ratelimit.None
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}

func TestRetryThrottlingOnly(t *testing.T) {
	throttled := fakeAnswer{status: 503, body: CodeRequestLimitExceeded}
	internal := fakeAnswer{status: 500, body: "InternalError"}
	ok := fakeAnswer{status: 200, body: createSnapshotOK}
	tests := []struct {
		name         string
		answers      []fakeAnswer
		throttleOnly bool
		wantAttempts int
		wantCode     string // "" for success
		wantNoAnswer bool   // an error without an EC2 code
		ambiguous    bool
	}{
		{name: "throttling retried", answers: []fakeAnswer{throttled, throttled, ok}, throttleOnly: true, wantAttempts: 3},
		{name: "throttling beyond the attempts", answers: []fakeAnswer{throttled}, throttleOnly: true, wantAttempts: 3, wantCode: CodeRequestLimitExceeded},
		{name: "500 not retried", answers: []fakeAnswer{internal, ok}, throttleOnly: true, wantAttempts: 1, wantCode: "InternalError", ambiguous: true},
		{name: "no answer not retried", answers: []fakeAnswer{{err: errors.New("connection reset")}, ok}, throttleOnly: true, wantAttempts: 1, wantNoAnswer: true},
		{name: "per-volume rate not retried", answers: []fakeAnswer{{status: 400, body: CodeSnapshotCreationPerVolumeRateExceeded}, ok}, throttleOnly: true,
			wantAttempts: 1, wantCode: CodeSnapshotCreationPerVolumeRateExceeded},
		{name: "without the option a 500 is retried", answers: []fakeAnswer{internal, ok}, wantAttempts: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHTTP{answers: tt.answers}
			c := testClient(h, quickRetryer())
			var opts []func(*ec2.Options)
			if tt.throttleOnly {
				opts = append(opts, RetryThrottlingOnly)
			}
			_, err := c.CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{VolumeId: aws.String("vol-01234567")}, opts...)
			if h.attempts != tt.wantAttempts {
				t.Errorf("%d attempts, want %d", h.attempts, tt.wantAttempts)
			}
			if Code(err) != tt.wantCode || (err != nil) != (tt.wantCode != "" || tt.wantNoAnswer) {
				t.Errorf("error %v, want code %q", err, tt.wantCode)
			}
			if tt.wantCode != "" && IsAmbiguous(err) != tt.ambiguous {
				t.Errorf("%v: ambiguous %v, want %v", err, IsAmbiguous(err), tt.ambiguous)
			}
		})
	}
}

// The wrapper keeps the plugin's retryer (adaptive mode, 20 attempts) for throttling only.
func TestRetryerSettings(t *testing.T) {
	r := newRetryer()
	if r.MaxAttempts() != maxAttempts {
		t.Errorf("MaxAttempts %d, want %d", r.MaxAttempts(), maxAttempts)
	}
	w := throttlingOnly{r}
	for _, tt := range []struct {
		err        error
		base, only bool
	}{
		{httpErr(503, CodeRequestLimitExceeded), true, true},
		{httpErr(500, "InternalError"), true, false},
		{httpErr(400, CodeSnapshotCreationPerVolumeRateExceeded), false, false},
	} {
		if r.IsErrorRetryable(tt.err) != tt.base || w.IsErrorRetryable(tt.err) != tt.only {
			t.Errorf("%v: retryable %v / %v with the wrapper, want %v / %v", tt.err, r.IsErrorRetryable(tt.err), w.IsErrorRetryable(tt.err), tt.base, tt.only)
		}
	}
	release, err := w.GetAttemptToken(context.Background())
	if err != nil || release == nil {
		t.Errorf("GetAttemptToken: %v", err)
	}
}

// TestUnansweredTriedFew shows the plugin's retryer riding out throttling with all its attempts
// but giving up on a region that answers nothing (an outage) after unansweredAttempts.
func TestUnansweredTriedFew(t *testing.T) {
	patient := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.RateLimiter = ratelimit.None
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
	tests := []struct {
		name         string
		answer       fakeAnswer
		wantAttempts int
	}{
		{"throttling", fakeAnswer{status: 503, body: CodeRequestLimitExceeded}, maxAttempts},
		{"connection refused", fakeAnswer{err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}, unansweredAttempts},
		{"service unavailable", fakeAnswer{status: 503, body: "Unavailable"}, unansweredAttempts},
		{"internal error", fakeAnswer{status: 500, body: "InternalError"}, unansweredAttempts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHTTP{answers: []fakeAnswer{tt.answer}}
			c := testClient(h, unansweredFew{patient})
			_, err := c.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{})
			if err == nil || h.attempts != tt.wantAttempts {
				t.Errorf("%d attempts, error %v; want %d attempts and an error", h.attempts, err, tt.wantAttempts)
			}
		})
	}
	if _, ok := newRetryer().(unansweredFew); !ok {
		t.Errorf("the plugin's retryer is a %T, not unansweredFew", newRetryer())
	}
}
