package explore

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"time"
	_ "unsafe" // go:linkname of the SDK's sleep, below

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// sdkSleep is the SDK's sleep between retries (its internal sdk.SleepWithContext, which the SDK
// documents as the value to override in tests). The explorer runs on a fake clock, so a retry
// takes no real time: init makes it return at once.
//
//go:linkname sdkSleep github.com/aws/aws-sdk-go-v2/internal/sdk.SleepWithContext
var sdkSleep func(context.Context, time.Duration) error

func init() { sdkSleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() } }

// clientAttempts is how many times the explorer's EC2 clients try a request (per-call options of
// the plugin, such as ec2api.Bounded, replace it as they do in the plugin).
const clientAttempts = 5

// endpoint is the simulator's address as the clients see it: requests never leave the process.
const endpoint = "http://ec2sim.explore"

// mutating are the EC2 actions that change something.
var mutating = map[string]bool{
	"CreateSnapshot": true, "CopySnapshot": true, "DeleteSnapshot": true, "CreateTags": true, "DeleteTags": true,
	"ModifySnapshotAttribute": true, "LockSnapshot": true, "UnlockSnapshot": true, "CreateVolume": true,
}

// request is one EC2 request as the explorer saw it.
type request struct {
	role, signer, region, action string
	// apiRefused says the Kubernetes API had refused the plugin process a read (Forbidden).
	apiRefused bool
	// answered says EC2 answered it with success.
	answered bool
	// completed is its place among the requests in the order EC2 answered them: another actor's
	// step inside a call runs before the request it interleaves with is served.
	completed int
}

// credentialScope finds the region in a SigV4 Authorization header.
var credentialScope = regexp.MustCompile(`Credential=[^/]+/[^/]+/([^/]+)/`)

// transport carries one identity's requests to the simulator in memory, injecting the world's
// current faults on the way.
type transport struct {
	w      *world
	role   string // what the requests are for: "source", "vault", "recovery", "other", …
	signer string // the account whose keys sign them
	faulty bool   // whether the world's faults apply (other installs and tools see a healthy EC2)
}

// RoundTrip serves req with the simulator, or fails it as the world's faults say, and notes
// whether it was answered.
func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
	}
	form, _ := url.ParseQuery(string(body))
	q := request{role: tr.role, signer: tr.signer, action: cmp.Or(s3Action(req), form.Get("Action")), region: "us-east-1", apiRefused: tr.w.kubeRefused}
	if m := credentialScope.FindStringSubmatch(req.Header.Get("Authorization")); m != nil {
		q.region = m[1]
	}
	w := tr.w
	i := len(w.requests)
	w.requests = append(w.requests, q)
	res, err := tr.serve(req, body, form, q)
	w.answered++
	w.requests[i].answered, w.requests[i].completed = err == nil && res.StatusCode == http.StatusOK, w.answered
	w.noteMarks(w.requests[i], form)
	w.noteVaultListing(w.requests[i])
	return res, err
}

// serve serves req (its body and form already read) with the simulator, or fails it as the
// world's faults say.
func (tr *transport) serve(req *http.Request, body []byte, form url.Values, q request) (*http.Response, error) {
	w := tr.w
	w.interleave()
	if err := req.Context().Err(); err != nil {
		return nil, err // its call was cut short while another actor's step ran (race.go)
	}
	var rule *faultRule
	if tr.faulty {
		w.checkCancelRequest(q, form)
		w.checkCopyRequest(q, form)
		w.checkCopyOfDeleting(q, form)
		if d := w.costOf(q.action); d > 0 {
			w.clk.Step(d)
		}
		if w.down[q.region] {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused (region " + q.region + " is down)")}
		}
		if s3Action(req) != "" && w.vaultBucketFault != "" {
			return s3ErrorResponse(req, w.vaultBucketFault), nil
		}
		if w.setup.stsUnavailable && q.action == "GetCallerIdentity" {
			return errorResponse(req, http.StatusServiceUnavailable, "ServiceUnavailable", "STS is unavailable"), nil
		}
		if w.refuses(q) {
			w.noteRefusal(q, form)
			return errorResponse(req, http.StatusForbidden, "UnauthorizedOperation", "You are not authorized to perform this operation: the "+w.setup.refusedCopy+" is refused by its account's policy"), nil
		}
		if w.queues(q) {
			return errorResponse(req, http.StatusBadRequest, "ResourceLimitExceeded", "You have reached the maximum number of concurrent snapshot copies into "+q.region), nil
		}
		if w.refusesMark(q, form) {
			return errorResponse(req, http.StatusForbidden, "UnauthorizedOperation", "You are not authorized to perform this operation. User is not authorized to perform: ec2:CreateTags"), nil
		}
		if s3Action(req) == "" { // S3 fails as the vault bucket's fault says, above
			rule = w.faults.match(q.action, q.role)
		}
		switch {
		case rule == nil:
		case rule.effect == faultThrottle:
			return errorResponse(req, http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded."), nil
		case rule.effect == faultServerError:
			return errorResponse(req, http.StatusInternalServerError, "InternalError", "An internal error has occurred"), nil
		case rule.effect == faultRefuse:
			return errorResponse(req, http.StatusForbidden, "UnauthorizedOperation", "You are not authorized to perform this operation. User is not authorized to perform: ec2:"+q.action), nil
		case rule.effect == faultSlow:
			w.slowAnswered = true
			w.clk.Step(slowAnswer)
		}
	}
	in := req.Clone(req.Context())
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.RequestURI = in.URL.RequestURI()
	if in.Host == "" {
		in.Host = in.URL.Host
	}
	rec := &recorder{ResponseRecorder: httptest.NewRecorder()}
	w.sim.ServeHTTP(rec, in)
	if rec.hijacked {
		return nil, fmt.Errorf("reading the answer to %s: %w", q.action, io.ErrUnexpectedEOF)
	}
	res := rec.Result()
	res.Request = req
	if rule != nil && res.StatusCode == http.StatusOK {
		switch rule.effect {
		case faultLoseAnswer:
			return nil, fmt.Errorf("reading the answer to %s: %w", q.action, io.ErrUnexpectedEOF)
		case faultLoseThenDown:
			w.down[q.region] = true
			w.downForCall = append(w.downForCall, q.region)
			return nil, fmt.Errorf("reading the answer to %s: %w", q.action, io.ErrUnexpectedEOF)
		}
	}
	return res, nil
}

// recorder is an httptest.ResponseRecorder the simulator can hijack to drop a connection.
type recorder struct {
	*httptest.ResponseRecorder
	hijacked bool
}

// Hijack hands the simulator a connection to close: the answer is lost.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijacked = true
	server, client := net.Pipe()
	_ = client.Close()
	return server, bufio.NewReadWriter(bufio.NewReader(server), bufio.NewWriter(server)), nil
}

// errorResponse is EC2's error document for code.
func errorResponse(req *http.Request, status int, code, message string) *http.Response {
	doc := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>explore</RequestID></Response>`, code, message)
	return documentResponse(req, status, "text/xml;charset=UTF-8", doc)
}

// documentResponse is an answer of status carrying doc.
func documentResponse(req *http.Request, status int, contentType, doc string) *http.Response {
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header:        http.Header{"Content-Type": []string{contentType}},
		Body:          io.NopCloser(strings.NewReader(doc)),
		ContentLength: int64(len(doc)),
		Request:       req,
		Proto:         "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
}

// newClient is an EC2 client in region whose requests tr carries, signing with key.
func newClient(tr *transport, key accessKey, region string) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		HTTPClient:   &http.Client{Transport: tr},
		Credentials:  staticCredentials(key),
		Retryer:      quickRetryer(),
	})
}

// accountOf returns what the plugin's locator asks STS: the account of key's credentials,
// through tr.
func accountOf(tr *transport, key accessKey) func(ctx context.Context) (string, error) {
	c := sts.New(sts.Options{
		Region:       sourceRegion,
		BaseEndpoint: aws.String(endpoint),
		HTTPClient:   &http.Client{Transport: tr},
		Credentials:  staticCredentials(key),
		Retryer:      quickRetryer(),
	})
	return func(ctx context.Context) (string, error) {
		out, err := c.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.Account), nil
	}
}

// staticCredentials signs with key.
func staticCredentials(key accessKey) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: key.id, SecretAccessKey: key.secret}, nil
	})
}

// quickRetryer retries as the SDK's standard retryer does, clientAttempts times, with no retry
// quota.
func quickRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = clientAttempts
		o.RateLimiter = ratelimit.None
	})
}
