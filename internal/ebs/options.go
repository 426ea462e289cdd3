// Package ebs is what every job of the plugin runs with: its settings (clock, logger, waits and
// limits), the places where an operation's snapshots and volumes may be (a location and the EC2
// clients of its credentials), the handoff of a backup's UID from the BackupItemAction to the
// VolumeSnapshotter, and the reads of EC2 the jobs share.
package ebs

import (
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Defaults of the settings below, and the fixed margins the plugin works with.
const (
	// DefaultCacheTTL is how long a description of a backup's snapshots answers Progress calls:
	// well below Velero's 10 s operation sync period.
	DefaultCacheTTL = 5 * time.Second
	// DefaultCopyLimit is EC2's quota of copies in flight per destination region.
	DefaultCopyLimit = 20
	// DefaultNotFoundGrace is how long a snapshot EC2 does not list is waited for.
	DefaultNotFoundGrace = 15 * time.Minute
	// defaultCreatePatience bounds how long CreateSnapshot rides out EC2's per-volume limits.
	defaultCreatePatience = 10 * time.Minute
	// DefaultListingLag is how long EC2 may take to list what it has just made.
	DefaultListingLag = 30 * time.Second
	// FillBudget bounds the time one description of a backup spends starting copies. Checked
	// between requests, never cancelling one in flight; what is left waits for the next
	// description, so no reconcile lasts long at any EC2 request rate.
	FillBudget = 3 * time.Second
)

// Option adjusts a job: a Snapshotter or Tracker (tracking), a Deleter (deleting), a Restorer or
// VolumeWatcher (restoring).
type Option func(*Settings)

type Settings struct {
	Clock          clock.Clock
	Log            logrus.FieldLogger
	CacheTTL       time.Duration
	CopyLimit      int
	NotFoundGrace  time.Duration
	CreatePatience time.Duration
	ListingLag     time.Duration
	ClusterName    string
	Handoff        *Handoff
	Locator        Locator
	Vault          ec2api.Regional
	VolumeTags     map[string]string
	Install        func() string
	RestoreSource  model.RestoreSource
}

func NewSettings(opts []Option) Settings {
	s := Settings{
		Clock:          clock.RealClock{},
		Log:            logrus.New(),
		CacheTTL:       DefaultCacheTTL,
		CopyLimit:      DefaultCopyLimit,
		NotFoundGrace:  DefaultNotFoundGrace,
		CreatePatience: defaultCreatePatience,
		ListingLag:     DefaultListingLag,
		ClusterName:    os.Getenv("AWS_CLUSTER_NAME"),
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// CreateWindow is how long after its operation was opened a snapshot may start: core asks for
// it right after, and CreateSnapshot may ride out EC2's limits and lost answers that long.
func (s Settings) CreateWindow() time.Duration {
	return s.CreatePatience + s.ListingLag + model.ClockSkew
}

// DefaultCreateWindow is the create window of the default settings, which the plugin runs with.
func DefaultCreateWindow() time.Duration {
	return Settings{CreatePatience: defaultCreatePatience, ListingLag: DefaultListingLag}.CreateWindow()
}

// WithClock sets the clock that waits and timestamps run on.
func WithClock(c clock.Clock) Option { return func(s *Settings) { s.Clock = c } }

// WithLogger sets the logger.
func WithLogger(l logrus.FieldLogger) Option { return func(s *Settings) { s.Log = l } }

// WithCacheTTL sets how long a backup's snapshots, once described, answer Progress calls
// (default 5 s, well below Velero's 10 s operation sync period).
func WithCacheTTL(d time.Duration) Option { return func(s *Settings) { s.CacheTTL = d } }

// WithCopyLimit sets how many copies may be in flight per destination region (EC2's quota: 20).
func WithCopyLimit(n int) Option { return func(s *Settings) { s.CopyLimit = n } }

// WithNotFoundGrace sets how long after its operation was issued a snapshot that EC2 does not
// list is waited for, when Velero's backup status cannot tell that it was never taken (default 15 min).
func WithNotFoundGrace(d time.Duration) Option { return func(s *Settings) { s.NotFoundGrace = d } }

// WithCreatePatience bounds how long CreateSnapshot rides out EC2's per-volume limits and answers
// it cannot read (5xx, answers lost), looking the snapshot up between requests (default 10 min).
func WithCreatePatience(d time.Duration) Option { return func(s *Settings) { s.CreatePatience = d } }

// WithListingLag sets how long EC2 may take to list a snapshot or copy it has just made
// (default 30 s; EC2's listings lag by seconds). After a CreateSnapshot or CopySnapshot whose
// outcome is unknown, or a copy request a restarted plugin finds marked but not listed, the
// plugin looks for that long before asking again; 30 s also outlasts EC2's 15 s per-volume
// interval, so a second CreateSnapshot cannot race the first.
func WithListingLag(d time.Duration) Option { return func(s *Settings) { s.ListingLag = d } }

// WithHandoff shares h between the BackupItemAction, which records each backup's UID, and the
// Snapshotter, which tags the snapshot with it.
func WithHandoff(h *Handoff) Option { return func(s *Settings) { s.Handoff = h } }

// WithLocator makes the Tracker and VolumeWatcher look for an operation's snapshots or volumes
// where l says the backup's locations are, with their credentials, instead of only through the
// clients they were made with.
func WithLocator(l Locator) Option { return func(s *Settings) { s.Locator = l } }

// WithVaultClients gives the EC2 clients of the vault account's credentials: a Deleter
// deletes vault copies with them, and a Tracker made without a Locator copies into the vault.
func WithVaultClients(c ec2api.Regional) Option { return func(s *Settings) { s.Vault = c } }

// WithVolumeTags makes every volume a Restorer restores carry tags from its creation, in
// CreateVolume's own request, before the snapshot's tags it keeps.
func WithVolumeTags(tags map[string]string) Option { return func(s *Settings) { s.VolumeTags = tags } }

// WithInstall gives a Tracker this Velero install's identity (model.TagInstall), read when a
// call first needs it; "" when it cannot be read. A snapshot without the backup's UID that
// another install took is then never one of the backup's.
func WithInstall(install func() string) Option { return func(s *Settings) { s.Install = install } }

// WithRestoreSource makes a Restorer make its volumes only from the snapshots src takes (by
// default, Velero's restore's: the recorded snapshot, else any copy of it in the region).
func WithRestoreSource(src model.RestoreSource) Option {
	return func(s *Settings) { s.RestoreSource = src }
}
