package tracking

import (
	"time"

	"k8s.io/utils/clock"
)

// cycle is the description cycle of a cached view of EC2: when its last description succeeded,
// or why and when it failed. A failure is kept as a success is, so the other Progress calls of
// a reconcile hear the same answer instead of each asking a throttling EC2 again.
type cycle struct {
	clock      clock.Clock
	fetched    time.Time // when the last description succeeded
	began      time.Time // when the last successful description began: what it saw is as old as that
	loadErr    error     // why the last description failed, if it did
	loadFailed time.Time
}

// fresh reports whether the last description, or its failure, is younger than ttl.
func (c *cycle) fresh(ttl time.Duration) bool {
	if c.loadErr != nil {
		return c.clock.Since(c.loadFailed) < ttl
	}
	return !c.fetched.IsZero() && c.clock.Since(c.fetched) < ttl
}

// seenAt is when the description that stands began: a snapshot made a listing lag before then
// and not in it does not exist; one made later may not be listed yet.
func (c *cycle) seenAt() time.Time { return c.began }

// refresh runs describe when the last description is older than ttl, and returns the error of
// the description that stands.
func (c *cycle) refresh(ttl time.Duration, describe func() error) error {
	if c.fresh(ttl) {
		return c.loadErr
	}
	began := c.clock.Now()
	c.loadErr = describe()
	if c.loadErr != nil {
		c.loadFailed = c.clock.Now()
	} else {
		c.fetched, c.began = c.clock.Now(), began
	}
	return c.loadErr
}
