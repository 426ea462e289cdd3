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
	clock           clock.Clock
	log             logrus.FieldLogger
	cacheTTL        time.Duration
	copyLimit       int
	copyGrace       time.Duration
	notFoundGrace   time.Duration
	createPatience  time.Duration
	ambiguityWindow time.Duration
	clusterName     string
}

func newSettings(opts []Option) settings {
	s := settings{
		clock:           clock.RealClock{},
		log:             logrus.New(),
		cacheTTL:        5 * time.Second,
		copyLimit:       20,
		copyGrace:       2 * time.Minute,
		notFoundGrace:   15 * time.Minute,
		createPatience:  10 * time.Minute,
		ambiguityWindow: 30 * time.Second,
		clusterName:     os.Getenv("AWS_CLUSTER_NAME"),
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

// WithCopyGrace sets how long a requested copy that EC2 does not list yet is waited for before
// it is requested again (default 2 min; EC2's listings lag by seconds).
func WithCopyGrace(d time.Duration) Option { return func(s *settings) { s.copyGrace = d } }

// WithNotFoundGrace sets how long after its operation was issued a snapshot that EC2 does not
// list is waited for, when Velero's backup status cannot tell that it was never taken (default 15 min).
func WithNotFoundGrace(d time.Duration) Option { return func(s *settings) { s.notFoundGrace = d } }

// WithCreatePatience bounds how long CreateSnapshot rides out EC2's per-volume limits (default 10 min).
func WithCreatePatience(d time.Duration) Option { return func(s *settings) { s.createPatience = d } }

// WithAmbiguityWindow sets how long, after a CreateSnapshot whose outcome is unknown, the
// snapshot is looked for before it is requested again (default 30 s: longer than EC2's listing
// lag, and than its 15 s per-volume interval, so a second request cannot race the first).
func WithAmbiguityWindow(d time.Duration) Option { return func(s *settings) { s.ambiguityWindow = d } }
