package ebs

// newDeleter is a Deleter for cfg on the fixture's regions and clock.
func newDeleter(f *fixture, cfg Config, extra ...Option) *Deleter {
	return NewDeleter(cfg, f.clients(), f.opts(extra...)...)
}
