package restoring

import (
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// newRestorer is a Restorer for cfg on the fixture's regions and clock.
func newRestorer(f *mockec2.Fixture, cfg model.Config, extra ...ebs.Option) *Restorer {
	return NewRestorer(cfg, f.Clients(), f.Opts(extra...)...)
}
