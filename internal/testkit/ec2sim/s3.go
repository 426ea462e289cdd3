package ec2sim

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// S3 as the plugin reads a vault bucket: path-style requests to "/BUCKET", SigV4-signed for the
// service "s3" and checked as EC2's are. Buckets belong to an account (another account's
// requests are refused, as without a bucket policy granting them), live in a region (a request
// signed for another is refused naming the bucket's), may have Object Lock with a default
// retention, and may be the source of a replication rule that copies each new object into a
// destination bucket after a lag, as S3 Replication does; deleting an object puts a delete
// marker, which is not replicated. Objects are put and deleted through the Go API.
const (
	s3Service              = "s3"
	headerAmzContentSHA256 = "X-Amz-Content-Sha256"
	s3UnsignedPayload      = "UNSIGNED-PAYLOAD"
	s3XMLNS                = "http://s3.amazonaws.com/doc/2006-03-01/"
	// s3MaxKeys is the most keys one ListObjectsV2 page returns, as S3's.
	s3MaxKeys = 1000
	// The IAM actions of the S3 requests served.
	s3ActionListBucket    = "s3:ListBucket"
	s3ActionGetObjectLock = "s3:GetBucketObjectLockConfiguration"
)

// ObjectLock is a bucket's Object Lock configuration: enabled, with a default retention when
// Mode is set ("GOVERNANCE" or "COMPLIANCE") for Days or Years.
type ObjectLock struct {
	Mode        string
	Days, Years int32
}

// s3Object is one object's current version.
type s3Object struct {
	size         int
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
	now := s.clock.Now()
	o := s3Object{size: len(body), lastModified: now}
	b.objects[key] = o
	for _, r := range s.s3.rules[bucket] {
		s.s3.inFlight = append(s.s3.inFlight, s3Replica{due: now.Add(r.lag), bucket: r.dst, key: key, object: o})
	}
	return nil
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

// isS3Request reports whether a request is signed for S3.
func isS3Request(r *http.Request) bool {
	a, ok := parseAuthorization(r.Header.Get("Authorization"))
	return ok && a.service == s3Service
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
	errS3NoLockConfig   = &s3Error{status: http.StatusNotFound, code: "ObjectLockConfigurationNotFoundError", message: "Object Lock configuration does not exist for this bucket"}
	errS3NotImplemented = &s3Error{status: http.StatusNotImplemented, code: "NotImplemented",
		message: "A header or query you provided implies functionality that is not implemented."}
)

// s3Caller authenticates an S3 request: the caller's account and role, and the region it was
// signed for.
func (s *Simulator) s3Caller(r *http.Request) (credential, string, *s3Error) {
	a, _ := parseAuthorization(r.Header.Get("Authorization"))
	if !s.ids.on {
		return credential{account: s.ids.defaultAccount}, a.region, nil
	}
	cred, _, check := s.verifySignature(r, nil, s3Service)
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

// serveS3 answers HeadBucket, GetObjectLockConfiguration and ListObjectsV2 on "/BUCKET".
func (s *Simulator) serveS3(w http.ResponseWriter, r *http.Request) {
	caller, signedRegion, authErr := s.s3Caller(r)
	name := strings.Trim(r.URL.Path, "/")
	q := r.URL.Query()
	action, iamAction := "HeadBucket", s3ActionListBucket
	switch {
	case r.Method == http.MethodGet && q.Has("object-lock"):
		action, iamAction = "GetObjectLockConfiguration", s3ActionGetObjectLock
	case r.Method == http.MethodGet && q.Get("list-type") == "2":
		action = "ListObjectsV2"
	case r.Method != http.MethodHead || strings.Contains(name, "/"):
		action = "unsupported"
	}
	s.mu.Lock()
	s.s3.deliver(s.clock.Now())
	body, e := s.s3Answer(caller, signedRegion, authErr, name, action, iamAction, q)
	code := "ok"
	if e != nil {
		code = e.code
	}
	s.count(caller.account, signedRegion, action, code)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/xml")
	if e == nil {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return
	}
	if e.region != "" {
		w.Header().Set("X-Amz-Bucket-Region", e.region)
	}
	w.WriteHeader(e.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(s3ErrorDocument(e, name))
	}
}

// s3Answer decides one S3 request. Callers hold s.mu.
func (s *Simulator) s3Answer(caller credential, signedRegion string, authErr *s3Error, name, action, iamAction string, q map[string][]string) ([]byte, *s3Error) {
	if authErr != nil {
		return nil, authErr
	}
	if action == "unsupported" {
		return nil, errS3NotImplemented
	}
	b, ok := s.s3.buckets[name]
	switch {
	case !ok:
		return nil, errS3NoSuchBucket
	case b.account != caller.account || !s.authorized(caller.account, caller.role, iamAction):
		return nil, errS3AccessDenied
	case b.region != signedRegion:
		return nil, &s3Error{status: http.StatusBadRequest, code: "AuthorizationHeaderMalformed", region: b.region,
			message: fmt.Sprintf("The authorization header is malformed; the region '%s' is wrong; expecting '%s'", signedRegion, b.region)}
	}
	switch action {
	case "GetObjectLockConfiguration":
		if b.lock == nil {
			return nil, errS3NoLockConfig
		}
		return objectLockDocument(*b.lock), nil
	case "ListObjectsV2":
		return listObjectsV2(name, b, q)
	}
	return nil, nil
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
// continuation token (an encoded key) or start-after.
func listObjectsV2(name string, b *s3Bucket, q map[string][]string) ([]byte, *s3Error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	prefix, after := get("prefix"), get("start-after")
	if tok := get("continuation-token"); tok != "" {
		k, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, &s3Error{status: http.StatusBadRequest, code: "InvalidArgument", message: "The continuation token provided is incorrect"}
		}
		after = string(k)
	}
	limit := s3MaxKeys
	if v := get("max-keys"); v != "" {
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
	truncated := len(keys) > limit
	keys = keys[:min(len(keys), limit)]
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ListBucketResult xmlns="` + s3XMLNS + `">`)
	w.elem("Name", name)
	w.elem("Prefix", prefix)
	w.elem("KeyCount", strconv.Itoa(len(keys)))
	w.elem("MaxKeys", strconv.Itoa(limit))
	w.elem("IsTruncated", strconv.FormatBool(truncated))
	if truncated {
		w.elem("NextContinuationToken", base64.RawURLEncoding.EncodeToString([]byte(keys[len(keys)-1])))
	}
	for _, k := range keys {
		o := b.objects[k]
		w.open("Contents")
		w.elem("Key", k)
		w.elem("LastModified", o.lastModified.UTC().Format("2006-01-02T15:04:05.000Z"))
		w.elem("Size", strconv.Itoa(o.size))
		w.elem("StorageClass", "STANDARD")
		w.close("Contents")
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
