package ebs

import (
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"
)

// Option adjusts a Snapshotter or Tracker.
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
}

func newSettings(opts []Option) settings {
	s := settings{
		clock:          clock.RealClock{},
		log:            logrus.New(),
		cacheTTL:       5 * time.Second,
		copyLimit:      20,
		notFoundGrace:  15 * time.Minute,
		createPatience: 10 * time.Minute,
		listingLag:     30 * time.Second,
		clusterName:    os.Getenv("AWS_CLUSTER_NAME"),
	}
	for _, o := range opts {
		o(&s)
	}
	return s
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

// WithCreatePatience bounds how long CreateSnapshot rides out EC2's per-volume limits (default 10 min).
func WithCreatePatience(d time.Duration) Option { return func(s *settings) { s.createPatience = d } }

// WithListingLag sets how long EC2 may take to list a snapshot or copy it has just made
// (default 30 s; EC2's listings lag by seconds). After a CreateSnapshot or CopySnapshot whose
// outcome is unknown, or a copy request a restarted plugin finds marked but not listed, the
// plugin looks for that long before asking again; 30 s also outlasts EC2's 15 s per-volume
// interval, so a second CreateSnapshot cannot race the first.
func WithListingLag(d time.Duration) Option { return func(s *settings) { s.listingLag = d } }
