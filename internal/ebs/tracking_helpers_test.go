package ebs

// newSnapshotter is a Snapshotter for cfg on the fixture's regions and clock.
func newSnapshotter(f *fixture, cfg Config, extra ...Option) *Snapshotter {
	return NewSnapshotter(cfg, f.clients(), f.opts(extra...)...)
}

// newTracker is a Tracker on the fixture's regions and clock.
func newTracker(f *fixture, extra ...Option) *Tracker {
	return NewTracker(f.clients(), f.opts(extra...)...)
}
