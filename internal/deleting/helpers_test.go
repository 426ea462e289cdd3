package deleting

import (
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// newDeleter is a Deleter for cfg on the fixture's regions and clock.
func newDeleter(f *mockec2.Fixture, cfg model.Config, extra ...ebs.Option) *Deleter {
	return NewDeleter(cfg, f.Clients(), f.Opts(extra...)...)
}
