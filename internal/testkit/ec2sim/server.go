package ec2sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// action serves one EC2 action in a region. It runs with s.mu held.
type action func(s *Simulator, r *region, q *request) ([]byte, *apiError)

// actions are the EC2 actions the simulator serves.
var actions = map[string]action{
	"CreateSnapshot":            (*Simulator).createSnapshot,
	"DescribeSnapshots":         (*Simulator).describeSnapshots,
	"CopySnapshot":              (*Simulator).copySnapshot,
	"DeleteSnapshot":            (*Simulator).deleteSnapshot,
	"DescribeVolumes":           (*Simulator).describeVolumes,
	"DescribeVolumeStatus":      (*Simulator).describeVolumeStatus,
	"CreateVolume":              (*Simulator).createVolume,
	"DeleteVolume":              (*Simulator).deleteVolume,
	"CreateTags":                (*Simulator).createTags,
	"DeleteTags":                (*Simulator).deleteTags,
	"DescribeAvailabilityZones": (*Simulator).describeAvailabilityZones,
	"ModifySnapshotAttribute":   (*Simulator).modifySnapshotAttribute,
	"DescribeSnapshotAttribute": (*Simulator).describeSnapshotAttribute,
	"LockSnapshot":              (*Simulator).lockSnapshot,
	"UnlockSnapshot":            (*Simulator).unlockSnapshot,
	"DescribeLockedSnapshots":   (*Simulator).describeLockedSnapshots,
}

// maxRequestBody is the largest request body read, as http.Request.ParseForm limits it.
const maxRequestBody = 10 << 20

// ServeHTTP serves the EC2 and STS Query APIs at "/", S3's bucket reads (s3.go), the EKS Pod Identity endpoint at
// "/v1/credentials" and the admin endpoints under "/_sim/".
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/_sim/"):
		s.serveAdmin(w, r)
		return
	case r.URL.Path == podIdentityPath:
		s.servePodIdentity(w, r)
		return
	case isS3Request(r):
		s.serveS3(w, r)
		return
	}
	var raw []byte
	if s.ids.on { // keep the body as received for the signature check
		var err error
		if raw, err = io.ReadAll(io.LimitReader(r.Body, maxRequestBody)); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if d := s.latency(); d > 0 {
		time.Sleep(d)
	}
	if isSTSRequest(r.Form) {
		s.serveSTS(w, r, raw)
		return
	}
	q := &request{
		action:  r.Form.Get("Action"),
		region:  regionOf(r),
		params:  r.Form,
		account: s.ids.defaultAccount,
	}
	if s.ids.on {
		var caller credential
		caller, q.authErr = s.authenticate(r, raw, q.region)
		q.account, q.role = caller.account, caller.role
	}
	if !s.holdIfSilent(r.Context(), q) {
		return
	}
	body, status, dropped := s.handle(q)
	if dropped == dropConnection {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		body, status = errorDocument(errInternal, "dropped"), errInternal.status
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// handle runs one request: authentication's verdict, the allow-lists, throttling and injected
// faults, then the action in the caller's account.
func (s *Simulator) handle(q *request) ([]byte, int, drop) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqSeq++
	q.requestID = fmt.Sprintf("00000000-0000-4000-8000-%012x", s.reqSeq)
	q.now = s.clock.Now()
	if q.authErr != nil {
		s.count(q.account, q.region, q.action, q.authErr.code)
		return errorDocument(q.authErr, q.requestID), q.authErr.status, noDrop
	}
	if err, d, down := s.refuseIfDown(q); down {
		if err == nil {
			return nil, 0, d
		}
		return errorDocument(err, q.requestID), err.status, noDrop
	}
	r := s.region(q.account, q.region)
	r.reap(q.now)
	body, err := s.run(r, q)
	if err != nil {
		s.count(q.account, q.region, q.action, err.code)
		return errorDocument(err, q.requestID), err.status, noDrop
	}
	switch d := s.dropAfterEffect(q.action); d {
	case drop500:
		s.count(q.account, q.region, q.action, errInternal.code)
		return errorDocument(errInternal, q.requestID), errInternal.status, d
	case dropConnection:
		s.count(q.account, q.region, q.action, "ConnectionClosed")
		return nil, 0, d
	}
	s.count(q.account, q.region, q.action, "ok")
	return body, http.StatusOK, noDrop
}

// tagOnCreateAction is the IAM action a request that tags what it creates also needs.
const tagOnCreateAction = "CreateTags"

// unauthorized is IAM's refusal of action.
func unauthorized(action string) *apiError {
	return &apiError{status: http.StatusForbidden, code: "UnauthorizedOperation",
		message: "You are not authorized to perform this operation. User is not authorized to perform: ec2:" + action}
}

func (s *Simulator) run(r *region, q *request) ([]byte, *apiError) {
	fn, ok := actions[q.action]
	switch {
	case !ok:
		return nil, clientError("InvalidAction", "The action %s is not valid for this web service.", q.action)
	case !s.authorized(q.account, q.role, q.action):
		return nil, unauthorized(q.action)
	case q.has("TagSpecification.1.ResourceType") && !s.authorized(q.account, q.role, tagOnCreateAction):
		return nil, unauthorized(tagOnCreateAction) // IAM asks for ec2:CreateTags to tag on create
	case !r.buckets.allow(q, q.now):
		return nil, errThrottled
	case s.serverError():
		return nil, errInternal
	case q.bool("DryRun"):
		return nil, dryRun(q)
	}
	return fn(s, r, q)
}

// Server is a Simulator listening on a loopback port.
type Server struct {
	URL  string // "http://127.0.0.1:PORT"
	Sim  *Simulator
	http *http.Server
}

// Start serves a new Simulator on a free port of 127.0.0.1.
func Start(cfg Config, opts ...Option) (*Server, error) {
	return Listen("127.0.0.1:0", cfg, opts...)
}

// Listen serves a new Simulator on addr, such as "127.0.0.1:8080", once cfg is valid.
func Listen(addr string, cfg Config, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	sim := New(cfg, opts...)
	srv := &Server{
		URL:  "http://" + ln.Addr().String(),
		Sim:  sim,
		http: &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second},
	}
	go func() { _ = srv.http.Serve(ln) }()
	return srv, nil
}

// Close stops the server, waiting briefly for requests in progress.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.http.Shutdown(ctx)
}
