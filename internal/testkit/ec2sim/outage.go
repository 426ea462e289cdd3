package ec2sim

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

// OutageMode is how EC2 in a region that is down looks to a client.
type OutageMode string

const (
	// OutageNoAnswer closes every connection without an answer: what the SDK sees of an
	// endpoint that is gone (a connection reset, no HTTP status). It is the default.
	OutageNoAnswer OutageMode = "no-answer"
	// OutageUnavailable answers every request 503 Unavailable.
	OutageUnavailable OutageMode = "unavailable"
	// OutageSilent accepts every request and never answers while the region is down: what a
	// black-holed network path or a hung proxy looks like. A request held when the region
	// comes back is served then, unless its client has given up; one whose client gives up
	// has no effect.
	OutageSilent OutageMode = "silent"
)

// Outage describes a region that is down.
type Outage struct {
	// Mode is how requests fail (default OutageNoAnswer).
	Mode OutageMode `json:"mode,omitempty"`
	// Frozen makes time stand still in the region while it is down: its pending snapshots,
	// copies and volumes make no progress, and end later by the outage's length. Otherwise
	// they go on as if nothing happened and are found done when the region returns.
	Frozen bool `json:"frozen,omitempty"`
}

// outage is a region that is down since when.
type outage struct {
	Outage
	since time.Time
	// back is closed when the region comes back, releasing the requests a silent outage holds.
	back chan struct{}
}

// outcomeRegionDown counts, in the stats, the requests a region that is down did not serve.
const outcomeRegionDown = "RegionDown"

var errUnavailable = &apiError{status: http.StatusServiceUnavailable, code: "Unavailable",
	message: "The service is unavailable. Please try again shortly."}

// TakeDown takes EC2 in the region down, for every account, until BringUp: each request to it
// fails as o says and counts as "RegionDown" in the stats. Taking a region down that is down
// already changes nothing.
func (s *Simulator) TakeDown(region string, o Outage) error {
	switch o.Mode {
	case "":
		o.Mode = OutageNoAnswer
	case OutageNoAnswer, OutageUnavailable, OutageSilent:
	default:
		return fmt.Errorf("outage mode %q: want %q, %q or %q", o.Mode, OutageNoAnswer, OutageUnavailable, OutageSilent)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outages == nil {
		s.outages = map[string]outage{}
	}
	if _, down := s.outages[region]; !down {
		s.outages[region] = outage{Outage: o, since: s.clock.Now(), back: make(chan struct{})}
	}
	return nil
}

// BringUp ends the region's outage. After a frozen one, everything that was under way there
// ends later by the outage's length.
func (s *Simulator) BringUp(region string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, down := s.outages[region]
	if !down {
		return
	}
	delete(s.outages, region)
	close(o.back)
	if !o.Frozen {
		return
	}
	shift := s.clock.Now().Sub(o.since)
	for key, r := range s.regions {
		if key.name == region {
			r.postpone(o.since, shift)
		}
	}
}

// Down lists the regions that are down, in order.
func (s *Simulator) Down() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.outages))
}

// holdIfSilent holds a request to a region that is silently down until the region comes back
// or the request's client gives up (ctx ends), counting it as "RegionDown". It reports whether
// the request is to be served.
func (s *Simulator) holdIfSilent(ctx context.Context, q *request) bool {
	s.mu.Lock()
	o, down := s.outages[q.region]
	if !down || o.Mode != OutageSilent {
		s.mu.Unlock()
		return true
	}
	s.count(q.account, q.region, q.action, outcomeRegionDown)
	s.mu.Unlock()
	select {
	case <-o.back:
		return true
	case <-ctx.Done():
		return false
	}
}

// refuseIfDown answers a request to a region that is down, or returns nil. Callers hold s.mu.
func (s *Simulator) refuseIfDown(q *request) (*apiError, drop, bool) {
	o, down := s.outages[q.region]
	if !down {
		return nil, noDrop, false
	}
	s.count(q.account, q.region, q.action, outcomeRegionDown)
	if o.Mode == OutageUnavailable {
		return errUnavailable, noDrop, true
	}
	return nil, dropConnection, true
}

// regionNow is the time of the named region: the sim's clock, or, while a frozen outage lasts,
// the time it began. Callers hold s.mu.
func (s *Simulator) regionNow(region string, now time.Time) time.Time {
	if o, down := s.outages[region]; down && o.Frozen {
		return o.since
	}
	return now
}

// postpone moves everything under way at since later by shift: what was pending then stays as
// far along as it was.
func (r *region) postpone(since time.Time, shift time.Duration) {
	later := func(t *time.Time) {
		if t.After(since) {
			*t = t.Add(shift)
		}
	}
	for _, sn := range r.snaps {
		if sn.done.After(since) {
			sn.start = sn.start.Add(shift)
			sn.done = sn.done.Add(shift)
			sn.xml = nil
		}
		later(&sn.visibleAt)
	}
	for _, v := range r.volumes {
		if v.ready.After(since) {
			v.created = v.created.Add(shift)
			v.ready = v.ready.Add(shift)
		}
		later(&v.visibleAt)
	}
	for id, at := range r.lastCreate {
		if at.After(since) {
			r.lastCreate[id] = at.Add(shift)
		}
	}
}
