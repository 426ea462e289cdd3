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
	stsService      = "sts"
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

// signatureCheck is the verdict on a request's SigV4 signature.
type signatureCheck int

const (
	signatureOK signatureCheck = iota
	// signatureMissing: no SigV4 Authorization header for the service.
	signatureMissing
	// signatureUnknownKey: the access key ID is neither configured nor issued, or a session's
	// token is missing or wrong.
	signatureUnknownKey
	// signatureMismatch: the signature is not the key's.
	signatureMismatch
	// signatureExpired: the session's credentials have expired.
	signatureExpired
)

// verifySignature checks a request's SigV4 signature for service against the configured keys and
// the issued sessions, returning the key's credential (its account unknownAccount when the key
// names none) and its ID. body is the request body as received.
func (s *Simulator) verifySignature(r *http.Request, body []byte, service string) (credential, string, signatureCheck) {
	a, ok := parseAuthorization(r.Header.Get("Authorization"))
	if !ok || a.service != service {
		return credential{account: unknownAccount}, "", signatureMissing
	}
	return s.checkKey(a.accessKeyID, r.Header.Get(headerAmzToken), func(c credential) bool { return signatureValid(r, body, a, c) })
}

// checkKey checks a signature made with accessKeyID and token, which valid verifies with the
// key's credential: the key is configured or issued (and its account not closed), the token is
// the session's, the signature valid and the session not expired.
func (s *Simulator) checkKey(accessKeyID, token string, valid func(credential) bool) (credential, string, signatureCheck) {
	s.mu.Lock()
	cred, found := s.ids.lookup(accessKeyID)
	now := s.clock.Now()
	s.mu.Unlock()
	switch {
	case !found:
		return credential{account: unknownAccount}, accessKeyID, signatureUnknownKey
	case token != cred.token:
		return cred, accessKeyID, signatureUnknownKey
	case !valid(cred):
		return cred, accessKeyID, signatureMismatch
	case !cred.expires.IsZero() && !now.Before(cred.expires):
		return cred, accessKeyID, signatureExpired
	}
	return cred, accessKeyID, signatureOK
}

// authenticate checks an EC2 request's signature and that the caller's account may use region.
// It returns the caller's credential (its account unknownAccount when the key names none) and
// nil, AuthFailure or RequestExpired. body is the request body as received.
func (s *Simulator) authenticate(r *http.Request, body []byte, region string) (credential, *apiError) {
	cred, _, check := s.verifySignature(r, body, ec2Service)
	switch {
	case check != signatureOK && check != signatureExpired, !s.ids.enabled(cred.account, region):
		return cred, errAuthFailure
	case check == signatureExpired:
		return cred, errRequestExpired
	}
	return cred, nil
}

// STS's answers to requests it cannot authenticate.
var (
	errSTSMissingAuth = &apiError{status: http.StatusForbidden, code: "MissingAuthenticationToken",
		message: "Request is missing Authentication Token"}
	errSTSInvalidToken = &apiError{status: http.StatusForbidden, code: "InvalidClientTokenId",
		message: "The security token included in the request is invalid."}
	errSTSSignature = &apiError{status: http.StatusForbidden, code: "SignatureDoesNotMatch",
		message: "The request signature we calculated does not match the signature you provided. " +
			"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."}
	errSTSExpired = &apiError{status: http.StatusForbidden, code: "ExpiredToken",
		message: "The security token included in the request is expired"}
)

// authenticateSTS checks a signed STS request as STS does, returning the caller's credential and
// access key ID. Without configured accounts every request is the default account's.
func (s *Simulator) authenticateSTS(r *http.Request, body []byte) (credential, string, *apiError) {
	if !s.ids.on {
		a, _ := parseAuthorization(r.Header.Get("Authorization"))
		return credential{account: s.ids.defaultAccount}, a.accessKeyID, nil
	}
	cred, keyID, check := s.verifySignature(r, body, stsService)
	switch check {
	case signatureMissing:
		return cred, keyID, errSTSMissingAuth
	case signatureUnknownKey:
		return cred, keyID, errSTSInvalidToken
	case signatureMismatch:
		return cred, keyID, errSTSSignature
	case signatureExpired:
		return cred, keyID, errSTSExpired
	}
	return cred, keyID, nil
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
	payload, signer := hex.EncodeToString(sum[:]), v4.NewSigner()
	if a.service == s3Service { // S3 signs the payload's hash as its header gives it, and the path unescaped
		if h := r.Header.Get(headerAmzContentSHA256); h != payload && h != s3UnsignedPayload {
			return false
		}
		payload = r.Header.Get(headerAmzContentSHA256)
		signer = v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	}
	creds := aws.Credentials{AccessKeyID: a.accessKeyID, SecretAccessKey: cred.secret, SessionToken: cred.token}
	if err := signer.SignHTTP(context.Background(), creds, cp, payload, a.service, a.region, t); err != nil {
		return false
	}
	want, ok := parseAuthorization(cp.Header.Get("Authorization"))
	return ok && want.signedHeaders == a.signedHeaders &&
		hmac.Equal([]byte(want.signature), []byte(a.signature))
}
