package audit_test

import (
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/cli/clitest"
)

// What `audit` answers to flags it cannot run with, before it reads anything (the flags every
// command has are cli's to refuse).
func TestMainRefusesBadFlags(t *testing.T) {
	clitest.Refuses(t, audit.Main, []clitest.Refusal{
		{Name: "--confirm alone is refused: it confirms a deletion", Args: []string{"--confirm"}, Want: "--confirm confirms --delete-orphans"},
	})
}
