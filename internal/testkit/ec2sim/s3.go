package ec2sim

import (
	"cmp"
	"context"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// S3 as the plugin reads a vault bucket and as the upstream plugin reads a BackupStorageLocation
// on it: path-style requests to "/BUCKET" and "/BUCKET/KEY", SigV4-signed for the service "s3"
// (in the Authorization header, or in the query of a presigned URL) and checked as EC2's are. Buckets belong to an account (another account's
// requests are refused, as without a bucket policy granting them), live in a region (a request
// signed for another is refused naming the bucket's), may have Object Lock with a default
// retention, and may be the source of a replication rule that copies each new object into a
// destination bucket after a lag, as S3 Replication does; deleting an object puts a delete
// marker, which is not replicated. Objects are put through the API by callers allowed
// s3:PutObject, and put and deleted through the Go API.
const (
	s3Service              = "s3"
	headerAmzContentSHA256 = "X-Amz-Content-Sha256"
	s3UnsignedPayload      = "UNSIGNED-PAYLOAD"
	s3XMLNS                = "http://s3.amazonaws.com/doc/2006-03-01/"
	// s3MaxKeys is the most keys one ListObjectsV2 page returns, as S3's.
	s3MaxKeys = 1000
	// The IAM actions of the S3 requests served.
	s3ActionListBucket        = "s3:ListBucket"
	s3ActionGetObjectLock     = "s3:GetBucketObjectLockConfiguration"
	s3ActionGetObject         = "s3:GetObject"
	s3ActionPutObject         = "s3:PutObject"
	s3ActionGetBucketLocation = "s3:GetBucketLocation"
	// The query parameters of a presigned URL's signature.
	s3QueryCredential = "X-Amz-Credential"
	s3QuerySignature  = "X-Amz-Signature"
	s3QueryExpires    = "X-Amz-Expires"
)

// ObjectLock is a bucket's Object Lock configuration: enabled, with a default retention when
// Mode is set ("GOVERNANCE" or "COMPLIANCE") for Days or Years.
type ObjectLock struct {
	Mode        string
	Days, Years int32
}

// s3Object is one object's current version.
type s3Object struct {
	body         []byte
	lastModified time.Time
}

// s3Bucket is a bucket and its current objects by key.
type s3Bucket struct {
	account, region string
	lock            *ObjectLock
	objects         map[string]s3Object
}

// s3Replica is an object on its way to a replication rule's destination.
type s3Replica struct {
	due         time.Time
	bucket, key string
	object      s3Object
}

// s3Replication is a replication rule: new objects of its source reach dst after lag.
type s3Replication struct {
	dst string
	lag time.Duration
}

// s3Store holds the buckets, the replication rules by source bucket, and the replicas not yet
// arrived. Guarded by Simulator.mu.
type s3Store struct {
	buckets  map[string]*s3Bucket
	rules    map[string][]s3Replication
	inFlight []s3Replica
}

func newS3Store() s3Store {
	return s3Store{buckets: map[string]*s3Bucket{}, rules: map[string][]s3Replication{}}
}

// CreateBucket creates a bucket of account (the default account when "") in region, with Object
// Lock when lock is not nil.
func (s *Simulator) CreateBucket(account, name, region string, lock *ObjectLock) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	account = s.accountOr(account)
	if !s.ids.known(account) {
		return fmt.Errorf("account %s is not configured", account)
	}
	if _, ok := s.s3.buckets[name]; ok {
		return fmt.Errorf("bucket %s already exists", name)
	}
	s.s3.buckets[name] = &s3Bucket{account: account, region: region, lock: lock, objects: map[string]s3Object{}}
	return nil
}

// DeleteBucket deletes a bucket with whatever it holds, and its replication rules.
func (s *Simulator) DeleteBucket(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.s3.buckets[name]; !ok {
		return fmt.Errorf("bucket %s does not exist", name)
	}
	delete(s.s3.buckets, name)
	delete(s.s3.rules, name)
	return nil
}

// ReplicateBucket adds a replication rule: every object put into src from now on reaches dst
// lag later, keeping its last-modified time.
func (s *Simulator) ReplicateBucket(src, dst string, lag time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range []string{src, dst} {
		if _, ok := s.s3.buckets[b]; !ok {
			return fmt.Errorf("bucket %s does not exist", b)
		}
	}
	s.s3.rules[src] = append(s.s3.rules[src], s3Replication{dst: dst, lag: lag})
	return nil
}

// PutObject puts an object into a bucket as its owner does, and on its way to the destinations
// of the bucket's replication rules.
func (s *Simulator) PutObject(bucket, key string, body []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.s3.buckets[bucket]
	if !ok {
		return fmt.Errorf("bucket %s does not exist", bucket)
	}
	s.s3.put(b, bucket, key, body, s.clock.Now())
	return nil
}

// put stores an object's new version in b (named bucket) and sends it on its way to the
// destinations of the bucket's replication rules. Callers hold s.mu.
func (st *s3Store) put(b *s3Bucket, bucket, key string, body []byte, now time.Time) {
	o := s3Object{body: slices.Clone(body), lastModified: now}
	b.objects[key] = o
	for _, r := range st.rules[bucket] {
		st.inFlight = append(st.inFlight, s3Replica{due: now.Add(r.lag), bucket: r.dst, key: key, object: o})
	}
}

// DeleteObject deletes an object as a versioned bucket does, with a delete marker, which
// replication does not carry: the destinations keep their replica.
func (s *Simulator) DeleteObject(bucket, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.s3.buckets[bucket]
	if !ok {
		return fmt.Errorf("bucket %s does not exist", bucket)
	}
	delete(b.objects, key)
	return nil
}

// ObjectKeys returns the keys a bucket holds now, sorted.
func (s *Simulator) ObjectKeys(bucket string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.s3.deliver(s.clock.Now())
	b, ok := s.s3.buckets[bucket]
	if !ok {
		return nil
	}
	keys := make([]string, 0, len(b.objects))
	for k := range b.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// deliver puts the replicas due by now into their destination, when it still exists.
func (st *s3Store) deliver(now time.Time) {
	kept := st.inFlight[:0]
	for _, r := range st.inFlight {
		if now.Before(r.due) {
			kept = append(kept, r)
			continue
		}
		if b, ok := st.buckets[r.bucket]; ok {
			b.objects[r.key] = r.object
		}
	}
	st.inFlight = kept
}

// isS3Request reports whether a request is signed for S3, in its header or its query.
func isS3Request(r *http.Request) bool {
	if a, ok := parseAuthorization(r.Header.Get("Authorization")); ok {
		return a.service == s3Service
	}
	scope := strings.Split(r.URL.Query().Get(s3QueryCredential), "/")
	return len(scope) == 5 && scope[3] == s3Service
}

// s3Error is an S3 error answer.
type s3Error struct {
	status        int
	code, message string
	// region, for a request signed for the wrong region, is the bucket's.
	region string
}

var (
	errS3AccessDenied = &s3Error{status: http.StatusForbidden, code: "AccessDenied", message: "Access Denied"}
	errS3UnknownKey   = &s3Error{status: http.StatusForbidden, code: "InvalidAccessKeyId",
		message: "The AWS Access Key Id you provided does not exist in our records."}
	errS3Signature = &s3Error{status: http.StatusForbidden, code: "SignatureDoesNotMatch",
		message: "The request signature we calculated does not match the signature you provided. Check your key and signing method."}
	errS3Expired        = &s3Error{status: http.StatusBadRequest, code: "ExpiredToken", message: "The provided token has expired."}
	errS3NoSuchBucket   = &s3Error{status: http.StatusNotFound, code: "NoSuchBucket", message: "The specified bucket does not exist"}
	errS3URLExpired     = &s3Error{status: http.StatusForbidden, code: "AccessDenied", message: "Request has expired"}
	errS3NoSuchKey      = &s3Error{status: http.StatusNotFound, code: "NoSuchKey", message: "The specified key does not exist."}
	errS3NoLockConfig   = &s3Error{status: http.StatusNotFound, code: "ObjectLockConfigurationNotFoundError", message: "Object Lock configuration does not exist for this bucket"}
	errS3NotImplemented = &s3Error{status: http.StatusNotImplemented, code: "NotImplemented",
		message: "A header or query you provided implies functionality that is not implemented."}
)

// s3Caller authenticates an S3 request, signed in its header or presigned in its query: the
// caller's account and role, and the region it was signed for. body is the request's, as received.
func (s *Simulator) s3Caller(r *http.Request, body []byte) (credential, string, *s3Error) {
	a, inHeader := parseAuthorization(r.Header.Get("Authorization"))
	if !inHeader {
		a = presignedAuthorization(r.URL.Query())
	}
	if !s.ids.on {
		return credential{account: s.ids.defaultAccount}, a.region, nil
	}
	var cred credential
	var check signatureCheck
	if inHeader {
		cred, _, check = s.verifySignature(r, body, s3Service)
	} else if cred, check = s.verifyPresigned(r, a); check == signatureExpired {
		return cred, a.region, errS3URLExpired
	}
	switch check {
	case signatureMissing:
		return cred, a.region, errS3AccessDenied
	case signatureUnknownKey:
		return cred, a.region, errS3UnknownKey
	case signatureMismatch:
		return cred, a.region, errS3Signature
	case signatureExpired:
		return cred, a.region, errS3Expired
	}
	return cred, a.region, nil
}

// presignedAuthorization reads the signature of a presigned URL from its query.
func presignedAuthorization(q url.Values) sigV4Auth {
	a := sigV4Auth{signedHeaders: q.Get("X-Amz-SignedHeaders"), signature: q.Get(s3QuerySignature)}
	if scope := strings.Split(q.Get(s3QueryCredential), "/"); len(scope) == 5 && scope[4] == sigV4Terminator {
		a.accessKeyID, a.date, a.region, a.service = scope[0], scope[1], scope[2], scope[3]
	}
	return a
}

// verifyPresigned checks a presigned URL as S3 does: its key or session, its signature (the
// SDK's presigner run again on the URL less its signature), and that it has not expired.
func (s *Simulator) verifyPresigned(r *http.Request, a sigV4Auth) (credential, signatureCheck) {
	q := r.URL.Query()
	signed, err := time.Parse(sigV4DateFormat, q.Get(headerAmzDate))
	expires, expErr := strconv.Atoi(q.Get(s3QueryExpires))
	if a.accessKeyID == "" || q.Get("X-Amz-Algorithm") != sigV4Algorithm || err != nil || expErr != nil {
		return credential{account: unknownAccount}, signatureMissing
	}
	cred, _, check := s.checkKey(a.accessKeyID, q.Get(headerAmzToken), func(c credential) bool {
		unsigned := url.Values{}
		for k, v := range q {
			if k != s3QuerySignature {
				unsigned[k] = v
			}
		}
		cp := &http.Request{Method: r.Method, Host: r.Host, Header: http.Header{},
			URL: &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: unsigned.Encode()}}
		creds := aws.Credentials{AccessKeyID: a.accessKeyID, SecretAccessKey: c.secret, SessionToken: c.token}
		uri, _, err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).
			PresignHTTP(context.Background(), creds, cp, s3UnsignedPayload, s3Service, a.region, signed)
		if err != nil {
			return false
		}
		u, err := url.Parse(uri)
		return err == nil && hmac.Equal([]byte(u.Query().Get(s3QuerySignature)), []byte(a.signature))
	})
	s.mu.Lock()
	now := s.clock.Now()
	s.mu.Unlock()
	if check == signatureOK && now.After(signed.Add(time.Duration(expires)*time.Second)) {
		return cred, signatureExpired
	}
	return cred, check
}

// s3Request is one S3 request as served: its action and IAM action, the bucket and key, the
// query, and the body of a PutObject.
type s3Request struct {
	action, iamAction string
	bucket, key       string
	query             url.Values
	body              []byte
}

// s3Route names the S3 action of a request on "/BUCKET" or "/BUCKET/KEY"; "unsupported" for
// any other.
func s3Route(method, bucket, key string, q url.Values) (action, iamAction string) {
	switch {
	case key == "" && method == http.MethodHead:
		return "HeadBucket", s3ActionListBucket
	case key == "" && method == http.MethodGet && q.Has("object-lock"):
		return "GetObjectLockConfiguration", s3ActionGetObjectLock
	case key == "" && method == http.MethodGet && q.Has("location"):
		return "GetBucketLocation", s3ActionGetBucketLocation
	case key == "" && method == http.MethodGet && q.Get("list-type") == "2":
		return "ListObjectsV2", s3ActionListBucket
	case key != "" && method == http.MethodGet:
		return "GetObject", s3ActionGetObject
	case key != "" && method == http.MethodHead:
		return "HeadObject", s3ActionGetObject
	case key != "" && method == http.MethodPut:
		return "PutObject", s3ActionPutObject
	}
	return "unsupported", ""
}

// serveS3 answers the S3 requests s3Route names.
func (s *Simulator) serveS3(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	req := s3Request{bucket: bucket, key: key, query: q}
	req.action, req.iamAction = s3Route(r.Method, bucket, key, q)
	var authErr *s3Error
	if r.Method == http.MethodPut {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.body = body
		if strings.HasPrefix(r.Header.Get(headerAmzContentSHA256), "STREAMING-") {
			// aws-chunked uploads (an SDK's checksum trailer over HTTPS) are not served.
			authErr = errS3NotImplemented
		}
	}
	caller, signedRegion, e := s.s3Caller(r, req.body)
	authErr = cmp.Or(authErr, e) // an aws-chunked upload's signature is not checked: it is refused as such
	s.mu.Lock()
	s.s3.deliver(s.clock.Now())
	body, modified, e := s.s3Answer(caller, signedRegion, authErr, req)
	code := "ok"
	if e != nil {
		code = e.code
	}
	s.count(caller.account, signedRegion, req.action, code)
	s.mu.Unlock()
	if e != nil {
		if e.region != "" {
			w.Header().Set("X-Amz-Bucket-Region", e.region)
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(e.status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(s3ErrorDocument(e, bucket))
		}
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	if key != "" {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// s3Answer decides one S3 request: the body of its answer and, for an object, when it was last
// modified. Callers hold s.mu.
func (s *Simulator) s3Answer(caller credential, signedRegion string, authErr *s3Error, req s3Request) ([]byte, time.Time, *s3Error) {
	if authErr != nil {
		return nil, time.Time{}, authErr
	}
	if req.action == "unsupported" {
		return nil, time.Time{}, errS3NotImplemented
	}
	b, ok := s.s3.buckets[req.bucket]
	switch {
	case !ok:
		return nil, time.Time{}, errS3NoSuchBucket
	case b.account != caller.account || !s.authorized(caller.account, caller.role, req.iamAction):
		return nil, time.Time{}, errS3AccessDenied
	case b.region != signedRegion && req.action != "GetBucketLocation":
		return nil, time.Time{}, &s3Error{status: http.StatusBadRequest, code: "AuthorizationHeaderMalformed", region: b.region,
			message: fmt.Sprintf("The authorization header is malformed; the region '%s' is wrong; expecting '%s'", signedRegion, b.region)}
	}
	switch req.action {
	case "GetObjectLockConfiguration":
		if b.lock == nil {
			return nil, time.Time{}, errS3NoLockConfig
		}
		return objectLockDocument(*b.lock), time.Time{}, nil
	case "GetBucketLocation":
		return bucketLocationDocument(b.region), time.Time{}, nil
	case "ListObjectsV2":
		body, e := listObjectsV2(req.bucket, b, req.query)
		return body, time.Time{}, e
	case "GetObject", "HeadObject":
		o, ok := b.objects[req.key]
		if !ok {
			return nil, time.Time{}, errS3NoSuchKey
		}
		return o.body, o.lastModified, nil
	case "PutObject":
		now := s.clock.Now()
		s.s3.put(b, req.bucket, req.key, req.body, now)
		return nil, now, nil
	}
	return nil, time.Time{}, nil
}

// bucketLocationDocument is GetBucketLocation's answer: empty for us-east-1, as S3's.
func bucketLocationDocument(region string) []byte {
	if region == "us-east-1" {
		region = ""
	}
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<LocationConstraint xmlns="` + s3XMLNS + `">`)
	w.WriteString(region)
	w.WriteString("</LocationConstraint>")
	return w.Bytes()
}

// objectLockDocument is GetObjectLockConfiguration's answer.
func objectLockDocument(l ObjectLock) []byte {
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ObjectLockConfiguration xmlns="` + s3XMLNS + `">`)
	w.elem("ObjectLockEnabled", "Enabled")
	if l.Mode != "" {
		w.WriteString("<Rule><DefaultRetention>")
		w.elem("Mode", l.Mode)
		if l.Days > 0 {
			w.elem("Days", strconv.Itoa(int(l.Days)))
		}
		if l.Years > 0 {
			w.elem("Years", strconv.Itoa(int(l.Years)))
		}
		w.WriteString("</DefaultRetention></Rule>")
	}
	w.WriteString("</ObjectLockConfiguration>")
	return w.Bytes()
}

// listObjectsV2 answers one page of a bucket's keys under prefix, in key order, after the
// continuation token (an encoded key or common prefix) or start-after; with a delimiter, the
// keys holding it past the prefix are rolled up into common prefixes, each listed once.
func listObjectsV2(name string, b *s3Bucket, q url.Values) ([]byte, *s3Error) {
	prefix, delimiter, after := q.Get("prefix"), q.Get("delimiter"), q.Get("start-after")
	if tok := q.Get("continuation-token"); tok != "" {
		k, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, &s3Error{status: http.StatusBadRequest, code: "InvalidArgument", message: "The continuation token provided is incorrect"}
		}
		after = string(k)
	}
	limit := s3MaxKeys
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, &s3Error{status: http.StatusBadRequest, code: "InvalidArgument", message: "Provided max-keys not an integer or within integer range"}
		}
		limit = min(n, s3MaxKeys)
	}
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	// entries are the page's keys and common prefixes, in order; isPrefix marks the latter.
	var entries []string
	isPrefix := map[string]bool{}
	for _, k := range keys {
		i := -1
		if delimiter != "" {
			i = strings.Index(k[len(prefix):], delimiter)
		}
		if i < 0 {
			entries = append(entries, k)
			continue
		}
		cp := k[:len(prefix)+i+len(delimiter)]
		if cp == after || isPrefix[cp] {
			continue // a common prefix listed on an earlier page, or already on this one
		}
		isPrefix[cp] = true
		entries = append(entries, cp)
	}
	truncated := len(entries) > limit
	entries = entries[:min(len(entries), limit)]
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ListBucketResult xmlns="` + s3XMLNS + `">`)
	w.elem("Name", name)
	w.elem("Prefix", prefix)
	w.elemNonEmpty("Delimiter", delimiter)
	w.elem("KeyCount", strconv.Itoa(len(entries)))
	w.elem("MaxKeys", strconv.Itoa(limit))
	w.elem("IsTruncated", strconv.FormatBool(truncated))
	if truncated {
		w.elem("NextContinuationToken", base64.RawURLEncoding.EncodeToString([]byte(entries[len(entries)-1])))
	}
	for _, k := range entries {
		if isPrefix[k] {
			continue
		}
		o := b.objects[k]
		w.open("Contents")
		w.elem("Key", k)
		w.elem("LastModified", o.lastModified.UTC().Format("2006-01-02T15:04:05.000Z"))
		w.elem("Size", strconv.Itoa(len(o.body)))
		w.elem("StorageClass", "STANDARD")
		w.close("Contents")
	}
	for _, k := range entries {
		if isPrefix[k] {
			w.open("CommonPrefixes")
			w.elem("Prefix", k)
			w.close("CommonPrefixes")
		}
	}
	w.WriteString("</ListBucketResult>")
	return w.Bytes(), nil
}

// s3ErrorDocument is S3's error answer.
func s3ErrorDocument(e *s3Error, bucket string) []byte {
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<Error>")
	w.elem("Code", e.code)
	w.elem("Message", e.message)
	w.elemNonEmpty("BucketName", bucket)
	w.elemNonEmpty("Region", e.region)
	w.WriteString("</Error>")
	return w.Bytes()
}
