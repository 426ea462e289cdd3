// Package ec2sim is a local EC2 endpoint for the EBS snapshot actions this plugin uses. It speaks
// the EC2 Query protocol as aws-sdk-go-v2 does, keeps state per region, runs snapshot, copy and
// volume lifecycles on an injectable clock, enforces EC2's request and resource limits, injects
// faults and counts every response.
package ec2sim

import (
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// accountID is the owner of every snapshot and volume.
const accountID = "123456789012"

// Clock tells the simulator the time; lifecycles and token buckets run on it.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

type options struct{ clock Clock }

// Option configures New and Start.
type Option func(*options)

// WithClock makes the simulator run on c instead of real time.
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// Simulator is an in-memory, multi-region EC2 endpoint. It is safe for concurrent use.
type Simulator struct {
	mu      sync.Mutex
	cfg     Config
	faults  Faults
	clock   Clock
	rng     *rand.Rand
	allowed map[string]bool
	regions map[string]*region
	idSeq   uint64
	reqSeq  uint64
	calls   map[string]map[string]map[string]int
}

// region is the state of one region.
type region struct {
	name       string
	azs        []string
	volumes    map[string]*volume
	volOrder   []*volume
	snaps      map[string]*snapshot
	snapOrder  []*snapshot
	tagIndex   map[string]map[string]map[string]*snapshot // key -> value -> id -> snapshot
	byVolume   map[string]map[string]*snapshot            // volume ID -> id -> source snapshot
	lastCreate map[string]time.Time                       // volume ID -> last accepted CreateSnapshot
	deleting   map[string]*snapshot                       // delete-pending snapshots
	copies     map[string]*snapshot                       // copies that may still be pending
	peakCopies int
	buckets    buckets
}

// Snapshot is a snapshot or a copy as the simulator holds it.
type Snapshot struct {
	ID     string `json:"id"`
	Region string `json:"region"`
	// VolumeID is the origin volume, also for copies (which EC2 itself reports as vol-ffffffff).
	VolumeID string `json:"volumeId"`
	// State is "pending", "completed" or "error".
	State string `json:"state"`
	// Progress runs from "0%" to "100%".
	Progress      string            `json:"progress"`
	StatusMessage string            `json:"statusMessage,omitempty"`
	Description   string            `json:"description,omitempty"`
	StartTime     time.Time         `json:"startTime"`
	SizeGiB       int32             `json:"sizeGiB"`
	Encrypted     bool              `json:"encrypted"`
	KmsKeyID      string            `json:"kmsKeyId,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
	// SourceSnapshotID and SourceRegion are set on copies only.
	SourceSnapshotID string `json:"sourceSnapshotId,omitempty"`
	SourceRegion     string `json:"sourceRegion,omitempty"`
	// DeletePending is set when a pending snapshot was deleted; it goes when it would complete.
	DeletePending bool `json:"deletePending,omitempty"`
}

// Volume is a volume as the simulator holds it.
type Volume struct {
	ID               string            `json:"id"`
	Region           string            `json:"region"`
	AvailabilityZone string            `json:"availabilityZone"`
	State            string            `json:"state"` // "creating" or "available"
	Type             string            `json:"type"`
	SnapshotID       string            `json:"snapshotId,omitempty"`
	SizeGiB          int32             `json:"sizeGiB"`
	IOPS             int32             `json:"iops,omitempty"`
	Throughput       int32             `json:"throughput,omitempty"`
	Encrypted        bool              `json:"encrypted"`
	KmsKeyID         string            `json:"kmsKeyId,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// New returns a simulator for cfg, seeded with cfg.Regions' volumes.
func New(cfg Config, opts ...Option) *Simulator {
	o := options{clock: realClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	cfg = cfg.withDefaults()
	s := &Simulator{
		cfg:     cfg,
		faults:  cfg.Faults,
		clock:   o.clock,
		rng:     rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed)),
		regions: map[string]*region{},
		calls:   map[string]map[string]map[string]int{},
	}
	if len(cfg.AllowedActions) > 0 {
		s.allowed = map[string]bool{}
		for _, a := range cfg.AllowedActions {
			s.allowed[a] = true
		}
	}
	names := make([]string, 0, len(cfg.Regions))
	for name := range cfg.Regions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rc := cfg.Regions[name]
		r := s.region(name)
		if len(rc.AvailabilityZones) > 0 {
			r.azs = append([]string(nil), rc.AvailabilityZones...)
		}
		for _, v := range rc.Volumes {
			s.seedVolume(r, v)
		}
	}
	return s
}

// region returns the state of the named region, creating it on first use. Callers hold s.mu.
func (s *Simulator) region(name string) *region {
	r, ok := s.regions[name]
	if !ok {
		r = &region{
			name:       name,
			azs:        defaultAZs(name),
			volumes:    map[string]*volume{},
			snaps:      map[string]*snapshot{},
			tagIndex:   map[string]map[string]map[string]*snapshot{},
			byVolume:   map[string]map[string]*snapshot{},
			lastCreate: map[string]time.Time{},
			deleting:   map[string]*snapshot{},
			copies:     map[string]*snapshot{},
			buckets:    newBuckets(s.cfg.ThrottleScale),
		}
		s.regions[name] = r
	}
	return r
}

// AddVolumes seeds volumes into region, already available, and returns their IDs.
func (s *Simulator) AddVolumes(regionName string, vols ...VolumeSpec) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.region(regionName)
	ids := make([]string, 0, len(vols))
	for _, v := range vols {
		ids = append(ids, s.seedVolume(r, v))
	}
	return ids
}

// SetFaults replaces the injected faults from now on.
func (s *Simulator) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f.withDefaults()
}

// Snapshots returns every snapshot of region that still exists, sources and copies, including
// those whose deletion is pending, in creation order.
func (s *Simulator) Snapshots(regionName string) []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	r := s.region(regionName)
	r.reap(now)
	out := make([]Snapshot, 0, len(r.snapOrder))
	for _, sn := range r.snapOrder {
		out = append(out, sn.view(r.name, now))
	}
	return out
}

// Volumes returns every volume of region in creation order.
func (s *Simulator) Volumes(regionName string) []Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	r := s.region(regionName)
	out := make([]Volume, 0, len(r.volOrder))
	for _, v := range r.volOrder {
		out = append(out, v.view(r.name, now))
	}
	return out
}

func copyTags(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
