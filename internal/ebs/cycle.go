package ebs

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

// refresh runs describe when the last description is older than ttl, and returns the error of
// the description that stands.
func (c *cycle) refresh(ttl time.Duration, describe func() error) error {
	if c.fresh(ttl) {
		return c.loadErr
	}
	c.loadErr = describe()
	if c.loadErr != nil {
		c.loadFailed = c.clock.Now()
	} else {
		c.fetched = c.clock.Now()
	}
	return c.loadErr
}
