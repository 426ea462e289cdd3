package ec2sim

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes JSON as a Go duration string such as "1m30s".
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a string like "5s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string like "5s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// DurationRange is a duration drawn uniformly from [Min, Max]; a zero Max means always Min.
type DurationRange struct {
	Min Duration `json:"min"`
	Max Duration `json:"max"`
}

// Fixed returns a DurationRange that always yields d.
func Fixed(d time.Duration) DurationRange { return DurationRange{Min: Duration{d}} }

// Range returns a DurationRange that yields a duration between min and max.
func Range(min, max time.Duration) DurationRange {
	return DurationRange{Min: Duration{min}, Max: Duration{max}}
}

func (r DurationRange) isZero() bool { return r.Min.Duration == 0 && r.Max.Duration == 0 }

// String formats the range as Set reads it: "3s-6s", or "5s" for a fixed duration.
func (r *DurationRange) String() string {
	if r == nil || r.isZero() {
		return ""
	}
	if r.Max.Duration == 0 || r.Max == r.Min {
		return r.Min.String()
	}
	return r.Min.String() + "-" + r.Max.String()
}

// Set parses "MIN-MAX" or "D", so that a *DurationRange is a command-line flag (flag.Value).
func (r *DurationRange) Set(s string) error {
	lo, hi, found := strings.Cut(s, "-")
	min, err := time.ParseDuration(lo)
	if err != nil {
		return err
	}
	max := min
	if found {
		if max, err = time.ParseDuration(hi); err != nil {
			return err
		}
	}
	if max < min {
		return fmt.Errorf("range %s: max below min", s)
	}
	*r = Range(min, max)
	return nil
}

// VolumeSpec describes a volume to seed into a region.
type VolumeSpec struct {
	ID               string `json:"id,omitempty"` // "" => generated vol-…
	AvailabilityZone string `json:"availabilityZone,omitempty"`
	Type             string `json:"type,omitempty"` // gp2|gp3|io1|io2|st1|sc1|standard
	SizeGiB          int32  `json:"sizeGiB,omitempty"`
	IOPS             int32  `json:"iops,omitempty"`
	Throughput       int32  `json:"throughput,omitempty"`
	Encrypted        bool   `json:"encrypted,omitempty"`
	// KmsKeyID encrypts the volume, and so its snapshots, under this key (Encrypted is then
	// implied); default, when Encrypted, the owner's AWS managed key.
	KmsKeyID string            `json:"kmsKeyId,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
	// Account owns the volume; "" => the default account (see Simulator.DefaultAccount).
	Account string `json:"account,omitempty"`
	// OutpostArn, when set, puts the volume on that AWS Outpost; DescribeVolumes reports it.
	OutpostArn string `json:"outpostArn,omitempty"`
}

// SnapshotSpec describes a snapshot or a copy to seed into a region as if EC2 had made it
// earlier, without its requests: a world of many backups for a benchmark or a test.
type SnapshotSpec struct {
	ID          string // "" => generated snap-…
	VolumeID    string // the origin volume, also for a copy; it need not exist
	SizeGiB     int32  // default 8
	Description string
	Tags        map[string]string
	// Started is its start time (default now); Completed when it completes (default Started).
	Started, Completed time.Time
	// SourceID and SourceRegion make it a copy of that snapshot.
	SourceID, SourceRegion string
	// Lock, when set, is the lock it was given as it started.
	Lock *LockSpec
}

// LockSpec is a lock of a seeded snapshot: its mode (compliance or governance, never in its
// cooling-off period) and how many days it lasts from the snapshot's completion, as a lock of a
// pending snapshot does.
type LockSpec struct {
	Mode string
	Days int32
}

// RegionConfig seeds one region; AvailabilityZones default to REGION+"a", "b" and "c".
type RegionConfig struct {
	AvailabilityZones []string     `json:"availabilityZones,omitempty"`
	Volumes           []VolumeSpec `json:"volumes,omitempty"`
}

// Faults are the injectable failures; the zero value injects none.
type Faults struct {
	// InvisibleFor keeps a new snapshot, copy or volume out of Describe* answers for this long.
	InvisibleFor DurationRange `json:"invisibleFor"`
	// ServerErrorRate is the fraction of requests answered 500 InternalError before any effect.
	ServerErrorRate float64 `json:"serverErrorRate,omitempty"`
	// DropAfterEffectRate is the fraction of DropActions requests that take effect and then
	// fail anyway, with a 500 or a closed connection.
	DropAfterEffectRate float64 `json:"dropAfterEffectRate,omitempty"`
	// DropActions lists the actions DropAfterEffectRate applies to; default CreateSnapshot, CopySnapshot.
	DropActions []string `json:"dropActions,omitempty"`
	// Latency is added to every request as a real sleep.
	Latency DurationRange `json:"latency"`
	// ErrorVolumes lists volume IDs whose snapshots end in state "error".
	ErrorVolumes []string `json:"errorVolumes,omitempty"`
	// ErrorCopyVolumes lists volume IDs whose snapshots' copies end in state "error".
	ErrorCopyVolumes []string `json:"errorCopyVolumes,omitempty"`
	// SnapshotErrorRate is the fraction of new snapshots that end in state "error".
	SnapshotErrorRate float64 `json:"snapshotErrorRate,omitempty"`
	// CopyErrorRate is the fraction of new copies that end in state "error".
	CopyErrorRate float64 `json:"copyErrorRate,omitempty"`
	// IdentityProviderError, when not empty, is the STS error code (such as
	// "IDPCommunicationError" or "InvalidIdentityToken") every AssumeRoleWithWebIdentity
	// answers with, HTTP 400.
	IdentityProviderError string `json:"identityProviderError,omitempty"`
}

// Config configures a Simulator. The zero value is usable: defaults fill the gaps.
type Config struct {
	// Regions seeds regions; regions not listed still work, empty and with default AZs.
	Regions map[string]RegionConfig `json:"regions,omitempty"`
	// SnapshotDuration is how long a snapshot stays pending; default 3s–6s.
	SnapshotDuration DurationRange `json:"snapshotDuration"`
	// CopyDuration is how long a copy stays pending; default 5s–10s.
	CopyDuration DurationRange `json:"copyDuration"`
	// VolumeCreateDuration is how long a new volume stays creating; default 1s.
	VolumeCreateDuration DurationRange `json:"volumeCreateDuration"`
	// InitializationTimeScale divides the time a volume made from a snapshot takes to
	// initialize once available (EBS's size × 1024 ÷ rate seconds), and nothing else, so that
	// a run can watch hours of initialization in minutes; default 1, EBS's own time.
	InitializationTimeScale float64 `json:"initializationTimeScale,omitempty"`
	// ThrottleScale multiplies AWS's bucket sizes and refill rates; default 1, AWS's own.
	ThrottleScale float64 `json:"throttleScale,omitempty"`
	// Unthrottled turns request-rate throttling off, for tests that want speed and say so.
	Unthrottled bool `json:"unthrottled,omitempty"`
	// CopyLimit is the number of concurrent (pending) copies per destination region; default 20.
	CopyLimit int `json:"copyLimit,omitempty"`
	// Faults are the injected failures.
	Faults Faults `json:"faults"`
	// AllowedActions, when not empty, answers every other EC2 action with 403
	// UnauthorizedOperation, for every account (see also Account.AllowedActions and
	// Role.AllowedActions).
	AllowedActions []string `json:"allowedActions,omitempty"`
	// Seed makes durations drawn from ranges and fault decisions reproducible.
	Seed int64 `json:"seed,omitempty"`
	// Accounts, when not empty, turn authentication on: every EC2 request must be SigV4-signed
	// by one of their access keys or by STS session credentials, and every resource belongs to
	// one account. Empty: credentials are not checked and everything belongs to DefaultAccountID.
	Accounts []Account `json:"accounts,omitempty"`
	// KMSKeys are the customer managed KMS keys and the accounts they are granted to. Keys not
	// listed (and every account's AWS managed key) may be used by their own account only.
	KMSKeys []KMSKey `json:"kmsKeys,omitempty"`
	// Roles are the IAM roles STS issues sessions of, to whom their trust names.
	Roles []Role `json:"roles,omitempty"`
	// PodIdentityAssociations give the pods of a service account the sessions of a role, through
	// the EKS Pod Identity endpoint (GET /v1/credentials).
	PodIdentityAssociations []PodIdentityAssociation `json:"podIdentityAssociations,omitempty"`
	// SessionDuration is how long STS session credentials last when the request does not say;
	// default 1h.
	SessionDuration Duration `json:"sessionDuration"`
}

// LoadConfig reads a Config from a JSON file and validates it.
func LoadConfig(path string) (Config, error) {
	var cfg Config
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

func (c Config) withDefaults() Config {
	if c.SnapshotDuration.isZero() {
		c.SnapshotDuration = Range(3*time.Second, 6*time.Second)
	}
	if c.CopyDuration.isZero() {
		c.CopyDuration = Range(5*time.Second, 10*time.Second)
	}
	if c.VolumeCreateDuration.isZero() {
		c.VolumeCreateDuration = Fixed(time.Second)
	}
	if c.CopyLimit <= 0 {
		c.CopyLimit = 20
	}
	if c.InitializationTimeScale == 0 {
		c.InitializationTimeScale = 1
	}
	switch {
	case c.Unthrottled:
		c.ThrottleScale = 0
	case c.ThrottleScale <= 0:
		c.ThrottleScale = 1
	}
	if c.SessionDuration.Duration <= 0 {
		c.SessionDuration.Duration = defaultSessionDuration
	}
	c.Faults = c.Faults.withDefaults()
	return c
}

// validateTimeScales rejects a negative or infinite time scale, which would make time run
// backwards or stop.
func (c Config) validateTimeScales() error {
	if c.InitializationTimeScale < 0 || math.IsInf(c.InitializationTimeScale, 0) || math.IsNaN(c.InitializationTimeScale) {
		return fmt.Errorf("initializationTimeScale %g: want a positive divisor of initialization times (0 or unset: 1, EBS's own)", c.InitializationTimeScale)
	}
	return nil
}

func (f Faults) withDefaults() Faults {
	if f.DropActions == nil {
		f.DropActions = []string{"CreateSnapshot", "CopySnapshot"}
	}
	return f
}

func defaultAZs(region string) []string {
	return []string{region + "a", region + "b", region + "c"}
}
