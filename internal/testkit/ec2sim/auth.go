package ec2sim

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SigV4 header authentication.
const (
	sigV4Algorithm  = "AWS4-HMAC-SHA256"
	sigV4Terminator = "aws4_request"
	sigV4DateFormat = "20060102T150405Z"
	ec2Service      = "ec2"
	headerAmzDate   = "X-Amz-Date"
	headerAmzToken  = "X-Amz-Security-Token"
)

// errAuthFailure is EC2's answer to a request whose credentials it cannot validate.
var errAuthFailure = &apiError{
	status: http.StatusUnauthorized, code: "AuthFailure",
	message: "AWS was not able to validate the provided access credentials",
}

// errRequestExpired is EC2's answer to a request signed with expired session credentials.
var errRequestExpired = clientError("RequestExpired", "Request has expired.")

// sigV4Auth is a parsed Authorization header:
// AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=hex
type sigV4Auth struct {
	accessKeyID, date, region, service string
	signedHeaders, signature           string
}

// parseAuthorization parses a SigV4 Authorization header; ok is false when it is not one.
func parseAuthorization(h string) (a sigV4Auth, ok bool) {
	rest, found := strings.CutPrefix(h, sigV4Algorithm+" ")
	if !found {
		return a, false
	}
	var cred string
	for _, field := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			a.signedHeaders = v
		case "Signature":
			a.signature = v
		}
	}
	scope := strings.Split(cred, "/")
	if len(scope) != 5 || scope[4] != sigV4Terminator || a.signedHeaders == "" || a.signature == "" {
		return a, false
	}
	a.accessKeyID, a.date, a.region, a.service = scope[0], scope[1], scope[2], scope[3]
	return a, a.accessKeyID != ""
}

// authenticate checks an EC2 request's signature against the configured keys and the issued
// sessions. It returns the caller's account (unknownAccount when the key names none) and nil,
// AuthFailure or RequestExpired. body is the request body as received.
func (s *Simulator) authenticate(r *http.Request, body []byte, region string) (string, *apiError) {
	a, ok := parseAuthorization(r.Header.Get("Authorization"))
	if !ok || a.service != ec2Service {
		return unknownAccount, errAuthFailure
	}
	s.mu.Lock()
	cred, found := s.ids.lookup(a.accessKeyID)
	now := s.clock.Now()
	s.mu.Unlock()
	switch {
	case !found:
		return unknownAccount, errAuthFailure
	case r.Header.Get(headerAmzToken) != cred.token,
		!signatureValid(r, body, a, cred),
		!s.ids.enabled(cred.account, region):
		return cred.account, errAuthFailure
	case !cred.expires.IsZero() && !now.Before(cred.expires):
		return cred.account, errRequestExpired
	}
	return cred.account, nil
}

// signatureValid signs a copy of the request, as received, with cred's secret using the SDK's
// signer, and compares the result with the request's own signature. The copy carries exactly
// the headers the client signed; the time is the request's X-Amz-Date, whatever the clock says.
func signatureValid(r *http.Request, body []byte, a sigV4Auth, cred credential) bool {
	t, err := time.Parse(sigV4DateFormat, r.Header.Get(headerAmzDate))
	if err != nil || t.Format("20060102") != a.date {
		return false
	}
	cp := &http.Request{
		Method: r.Method, Host: r.Host, Header: http.Header{},
		URL: &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery},
	}
	for _, name := range strings.Split(a.signedHeaders, ";") {
		switch name {
		case "host":
		case "content-length":
			cp.ContentLength = int64(len(body))
		default:
			key := http.CanonicalHeaderKey(name)
			if v, ok := r.Header[key]; ok {
				cp.Header[key] = v
			}
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: a.accessKeyID, SecretAccessKey: cred.secret, SessionToken: cred.token}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, cp, hex.EncodeToString(sum[:]),
		a.service, a.region, t); err != nil {
		return false
	}
	want, ok := parseAuthorization(cp.Header.Get("Authorization"))
	return ok && want.signedHeaders == a.signedHeaders &&
		hmac.Equal([]byte(want.signature), []byte(a.signature))
}
