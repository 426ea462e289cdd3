package ebs

// newRestorer is a Restorer for cfg on the fixture's regions and clock.
func newRestorer(f *fixture, cfg Config, extra ...Option) *Restorer {
	return NewRestorer(cfg, f.clients(), f.opts(extra...)...)
}
