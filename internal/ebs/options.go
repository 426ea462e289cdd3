package ebs

import (
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// Defaults of the settings below, and the fixed margins the plugin works with.
const (
	// defaultCacheTTL is how long a description of a backup's snapshots answers Progress calls:
	// well below Velero's 10 s operation sync period.
	defaultCacheTTL = 5 * time.Second
	// defaultCopyLimit is EC2's quota of copies in flight per destination region.
	defaultCopyLimit = 20
	// defaultNotFoundGrace is how long a snapshot EC2 does not list is waited for.
	defaultNotFoundGrace = 15 * time.Minute
	// defaultCreatePatience bounds how long CreateSnapshot rides out EC2's per-volume limits.
	defaultCreatePatience = 10 * time.Minute
	// defaultListingLag is how long EC2 may take to list what it has just made.
	defaultListingLag = 30 * time.Second
	// clockSkew is the margin allowed between the clock of the Velero server's node and EC2's
	// when a snapshot's start time is compared with the time its operation was opened. Nodes
	// and EC2 keep time by NTP, within a second; a minute leaves room for a poorly synced node.
	clockSkew = time.Minute
	// fillBudget bounds the time one description of a backup spends starting copies. Checked
	// between requests, never cancelling one in flight; what is left waits for the next
	// description, so no reconcile lasts long at any EC2 request rate.
	fillBudget = 3 * time.Second
)

// Option adjusts a Snapshotter, Tracker or VolumeWatcher.
type Option func(*settings)

type settings struct {
	clock          clock.Clock
	log            logrus.FieldLogger
	cacheTTL       time.Duration
	copyLimit      int
	notFoundGrace  time.Duration
	createPatience time.Duration
	listingLag     time.Duration
	clusterName    string
	handoff        *Handoff
	locator        Locator
	vault          ec2api.Regional
	volumeTags     map[string]string
}

func newSettings(opts []Option) settings {
	s := settings{
		clock:          clock.RealClock{},
		log:            logrus.New(),
		cacheTTL:       defaultCacheTTL,
		copyLimit:      defaultCopyLimit,
		notFoundGrace:  defaultNotFoundGrace,
		createPatience: defaultCreatePatience,
		listingLag:     defaultListingLag,
		clusterName:    os.Getenv("AWS_CLUSTER_NAME"),
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// createWindow is how long after its operation was opened a snapshot may start: core asks for
// it right after, and CreateSnapshot may ride out EC2's limits and lost answers that long.
func (s settings) createWindow() time.Duration {
	return s.createPatience + s.listingLag + clockSkew
}

// WithClock sets the clock that waits and timestamps run on.
func WithClock(c clock.Clock) Option { return func(s *settings) { s.clock = c } }

// WithLogger sets the logger.
func WithLogger(l logrus.FieldLogger) Option { return func(s *settings) { s.log = l } }

// WithCacheTTL sets how long a backup's snapshots, once described, answer Progress calls
// (default 5 s, well below Velero's 10 s operation sync period).
func WithCacheTTL(d time.Duration) Option { return func(s *settings) { s.cacheTTL = d } }

// WithCopyLimit sets how many copies may be in flight per destination region (EC2's quota: 20).
func WithCopyLimit(n int) Option { return func(s *settings) { s.copyLimit = n } }

// WithNotFoundGrace sets how long after its operation was issued a snapshot that EC2 does not
// list is waited for, when Velero's backup status cannot tell that it was never taken (default 15 min).
func WithNotFoundGrace(d time.Duration) Option { return func(s *settings) { s.notFoundGrace = d } }

// WithCreatePatience bounds how long CreateSnapshot rides out EC2's per-volume limits and answers
// it cannot read (5xx, answers lost), looking the snapshot up between requests (default 10 min).
func WithCreatePatience(d time.Duration) Option { return func(s *settings) { s.createPatience = d } }

// WithListingLag sets how long EC2 may take to list a snapshot or copy it has just made
// (default 30 s; EC2's listings lag by seconds). After a CreateSnapshot or CopySnapshot whose
// outcome is unknown, or a copy request a restarted plugin finds marked but not listed, the
// plugin looks for that long before asking again; 30 s also outlasts EC2's 15 s per-volume
// interval, so a second CreateSnapshot cannot race the first.
func WithListingLag(d time.Duration) Option { return func(s *settings) { s.listingLag = d } }

// WithHandoff shares h between the BackupItemAction, which records each backup's UID, and the
// Snapshotter, which tags the snapshot with it.
func WithHandoff(h *Handoff) Option { return func(s *settings) { s.handoff = h } }

// WithLocator makes the Tracker and VolumeWatcher look for an operation's snapshots or volumes
// where l says the backup's locations are, with their credentials, instead of only through the
// clients they were made with.
func WithLocator(l Locator) Option { return func(s *settings) { s.locator = l } }

// WithVaultClients gives the EC2 clients of the vault account's credentials: a Snapshotter
// deletes vault copies with them, and a Tracker made without a Locator copies into the vault.
func WithVaultClients(c ec2api.Regional) Option { return func(s *settings) { s.vault = c } }

// WithVolumeTags makes every volume the Snapshotter restores carry tags from its creation, in
// CreateVolume's own request, before the snapshot's tags it keeps.
func WithVolumeTags(tags map[string]string) Option { return func(s *settings) { s.volumeTags = tags } }
