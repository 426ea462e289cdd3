// Package ec2sim is a local EC2 endpoint for the EBS snapshot actions this plugin uses. It speaks
// the EC2 Query protocol as aws-sdk-go-v2 does, keeps state per account and region, runs
// snapshot, copy and volume lifecycles on an injectable clock, enforces EC2's request and
// resource limits, optionally checks SigV4 signatures against configured accounts, issues STS
// sessions of roles to whom their trust names (web identity, AssumeRole, EKS Pod Identity),
// injects faults and counts every response.
package ec2sim

import (
	"cmp"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// Clock tells the simulator the time; lifecycles and token buckets run on it.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

type options struct{ clock Clock }

// Option configures New and Start.
type Option func(*options)

// WithClock makes the simulator run on c instead of real time.
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// Simulator is an in-memory, multi-account, multi-region EC2 endpoint. It is safe for
// concurrent use.
type Simulator struct {
	mu           sync.Mutex
	cfg          Config
	faults       Faults
	clock        Clock
	rng          *rand.Rand
	allowed      map[string]bool
	ids          identities
	keys         keyring // customer KMS keys by ARN
	regions      map[regionKey]*region
	idSeq        uint64
	reqSeq       uint64
	calls        callCounts
	accountCalls map[string]callCounts
	outages      map[string]outage // region name -> its outage, while it is down
	s3           s3Store
}

// regionKey names the state of one account in one region.
type regionKey struct{ account, name string }

// region is the state of one account in one region.
type region struct {
	account    string
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
	shared     map[string]*snapshot                       // snapshots shared with another account or all
	peakCopies int
	buckets    buckets
}

// Snapshot is a snapshot or a copy as the simulator holds it.
type Snapshot struct {
	ID      string `json:"id"`
	Account string `json:"account"`
	Region  string `json:"region"`
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
	// SharedWith lists, sorted, the accounts the snapshot is shared with, and "all" when it is
	// public (its createVolumePermission).
	SharedWith []string `json:"sharedWith,omitempty"`
	// LockMode is "compliance" or "governance" while the snapshot has a lock, even an expired one.
	LockMode string `json:"lockMode,omitempty"`
	// LockState is the lock's state now: "compliance-cooloff", "governance", "compliance" or
	// "expired".
	LockState string `json:"lockState,omitempty"`
	// LockExpiresOn is when the lock expires.
	LockExpiresOn time.Time `json:"lockExpiresOn,omitzero"`
}

// Volume is a volume as the simulator holds it.
type Volume struct {
	ID               string            `json:"id"`
	Account          string            `json:"account"`
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
	OutpostArn       string            `json:"outpostArn,omitempty"` // the AWS Outpost the volume is on; "" in the region
}

// New returns a simulator for cfg, seeded with cfg.Regions' volumes. It does not validate cfg
// (see Config.Validate): of duplicate accounts, keys or roles the first wins, and roles with a
// malformed ARN are left out.
func New(cfg Config, opts ...Option) *Simulator {
	o := options{clock: realClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	cfg = cfg.withDefaults()
	s := &Simulator{
		cfg:          cfg,
		faults:       cfg.Faults,
		clock:        o.clock,
		rng:          rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed)),
		allowed:      actionSet(cfg.AllowedActions),
		ids:          newIdentities(cfg),
		keys:         newKeyring(cfg.KMSKeys),
		regions:      map[regionKey]*region{},
		calls:        callCounts{},
		accountCalls: map[string]callCounts{},
		s3:           newS3Store(),
	}
	names := make([]string, 0, len(cfg.Regions))
	for name := range cfg.Regions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s.region(s.ids.defaultAccount, name)
		for _, v := range cfg.Regions[name].Volumes {
			s.seedVolume(s.region(s.accountOr(v.Account), name), v)
		}
	}
	return s
}

// region returns the state of account in the named region, creating it on first use. Callers
// hold s.mu.
func (s *Simulator) region(account, name string) *region {
	key := regionKey{account, name}
	r, ok := s.regions[key]
	if !ok {
		azs := defaultAZs(name)
		if rc := s.cfg.Regions[name].AvailabilityZones; len(rc) > 0 {
			azs = append([]string(nil), rc...)
		}
		r = &region{
			account:    account,
			name:       name,
			azs:        azs,
			volumes:    map[string]*volume{},
			snaps:      map[string]*snapshot{},
			tagIndex:   map[string]map[string]map[string]*snapshot{},
			byVolume:   map[string]map[string]*snapshot{},
			lastCreate: map[string]time.Time{},
			deleting:   map[string]*snapshot{},
			copies:     map[string]*snapshot{},
			shared:     map[string]*snapshot{},
			buckets:    newBuckets(s.cfg.ThrottleScale),
		}
		s.regions[key] = r
	}
	return r
}

// AddVolumes seeds volumes into region, already available, and returns their IDs. Each volume
// belongs to its spec's Account, or to the default account.
func (s *Simulator) AddVolumes(regionName string, vols ...VolumeSpec) []string {
	return s.AddVolumesTo("", regionName, vols...)
}

// AddVolumesTo seeds volumes into account's state in region, like AddVolumes; a spec's own
// Account takes precedence, and "" means the default account. Any account ID works, configured
// or not.
func (s *Simulator) AddVolumesTo(account, regionName string, vols ...VolumeSpec) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(vols))
	for _, v := range vols {
		acct := v.Account
		if acct == "" {
			acct = s.accountOr(account)
		}
		ids = append(ids, s.seedVolume(s.region(acct, regionName), v))
	}
	return ids
}

// AddSnapshotsTo seeds snapshots and copies into account's state in region ("" means the
// default account) as SnapshotSpec describes them, and returns their IDs. No request is made
// or counted, and no limit applies.
func (s *Simulator) AddSnapshotsTo(account, regionName string, snaps ...SnapshotSpec) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.region(s.accountOr(account), regionName)
	now := s.clock.Now()
	ids := make([]string, 0, len(snaps))
	for _, spec := range snaps {
		id, seq := s.newID("snap")
		if spec.ID != "" {
			id = spec.ID
		}
		start := cmp.Or(spec.Started, now)
		sn := &snapshot{
			id: id, owner: r.account, seq: seq, volumeID: spec.VolumeID, description: spec.Description,
			start: start, done: cmp.Or(spec.Completed, start), visibleAt: start, sizeGiB: cmp.Or(spec.SizeGiB, 8),
			tags: copyTags(spec.Tags), sourceID: spec.SourceID, sourceRegion: spec.SourceRegion,
		}
		if l := spec.Lock; l != nil {
			sn.lock = &snapshotLock{mode: l.Mode, created: start, days: l.Days}
		}
		r.addSnapshot(sn)
		if sn.isCopy() && now.Before(sn.done) {
			r.copies[id] = sn
		}
		ids = append(ids, id)
	}
	return ids
}

// SetFaults replaces the injected faults from now on.
func (s *Simulator) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f.withDefaults()
}

// Snapshots returns every snapshot of the default account in region that still exists, sources
// and copies, including those whose deletion is pending, in creation order.
func (s *Simulator) Snapshots(regionName string) []Snapshot { return s.SnapshotsIn("", regionName) }

// SnapshotsIn returns the snapshots of account in region, like Snapshots; "" means the default
// account.
func (s *Simulator) SnapshotsIn(account, regionName string) []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.regionNow(regionName, s.clock.Now())
	r := s.region(s.accountOr(account), regionName)
	r.reap(now)
	out := make([]Snapshot, 0, len(r.snapOrder))
	for _, sn := range r.snapOrder {
		out = append(out, sn.view(r, now))
	}
	return out
}

// Volumes returns every volume of the default account in region in creation order.
func (s *Simulator) Volumes(regionName string) []Volume { return s.VolumesIn("", regionName) }

// VolumesIn returns the volumes of account in region, like Volumes; "" means the default account.
func (s *Simulator) VolumesIn(account, regionName string) []Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.regionNow(regionName, s.clock.Now())
	r := s.region(s.accountOr(account), regionName)
	out := make([]Volume, 0, len(r.volOrder))
	for _, v := range r.volOrder {
		out = append(out, v.view(r, now))
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
