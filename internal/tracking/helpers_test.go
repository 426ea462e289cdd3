package tracking

import (
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// newSnapshotter is a Snapshotter for cfg on the fixture's regions and clock.
func newSnapshotter(f *mockec2.Fixture, cfg model.Config, extra ...ebs.Option) *Snapshotter {
	return NewSnapshotter(cfg, f.Clients(), f.Opts(extra...)...)
}

// newTracker is a Tracker on the fixture's regions and clock.
func newTracker(f *mockec2.Fixture, extra ...ebs.Option) *Tracker {
	return NewTracker(f.Clients(), f.Opts(extra...)...)
}
