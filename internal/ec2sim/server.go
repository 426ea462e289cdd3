package ec2sim

import (
	"context"
	"fmt"
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
	"CreateVolume":              (*Simulator).createVolume,
	"DeleteVolume":              (*Simulator).deleteVolume,
	"CreateTags":                (*Simulator).createTags,
	"DeleteTags":                (*Simulator).deleteTags,
	"DescribeAvailabilityZones": (*Simulator).describeAvailabilityZones,
}

// ServeHTTP serves the EC2 Query API at "/" and the admin endpoints under "/_sim/".
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		s.serveAdmin(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if d := s.latency(); d > 0 {
		time.Sleep(d)
	}
	body, status, dropped := s.handle(&request{
		action: r.Form.Get("Action"),
		region: regionOf(r),
		params: r.Form,
	})
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

// handle runs one request: the allow-list, throttling and injected faults, then the action.
func (s *Simulator) handle(q *request) ([]byte, int, drop) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqSeq++
	q.requestID = fmt.Sprintf("00000000-0000-4000-8000-%012x", s.reqSeq)
	q.now = s.clock.Now()
	r := s.region(q.region)
	r.reap(q.now)
	body, err := s.run(r, q)
	if err != nil {
		s.count(q.region, q.action, err.code)
		return errorDocument(err, q.requestID), err.status, noDrop
	}
	switch d := s.dropAfterEffect(q.action); d {
	case drop500:
		s.count(q.region, q.action, errInternal.code)
		return errorDocument(errInternal, q.requestID), errInternal.status, d
	case dropConnection:
		s.count(q.region, q.action, "ConnectionClosed")
		return nil, 0, d
	}
	s.count(q.region, q.action, "ok")
	return body, http.StatusOK, noDrop
}

func (s *Simulator) run(r *region, q *request) ([]byte, *apiError) {
	fn, ok := actions[q.action]
	switch {
	case !ok:
		return nil, clientError("InvalidAction", "The action %s is not valid for this web service.", q.action)
	case s.allowed != nil && !s.allowed[q.action]:
		return nil, &apiError{status: http.StatusForbidden, code: "UnauthorizedOperation",
			message: "You are not authorized to perform this operation. User is not authorized to perform: ec2:" + q.action}
	case !r.buckets.allow(q, q.now):
		return nil, errThrottled
	case s.serverError():
		return nil, errInternal
	case q.bool("DryRun"):
		return nil, &apiError{status: http.StatusPreconditionFailed, code: "DryRunOperation",
			message: "Request would have succeeded, but DryRun flag is set."}
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

// Listen serves a new Simulator on addr, such as "127.0.0.1:8080".
func Listen(addr string, cfg Config, opts ...Option) (*Server, error) {
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
