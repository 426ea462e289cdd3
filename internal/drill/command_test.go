package drill_test

import (
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli/clitest"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
)

// What `drill` answers to flags it cannot run with, before it reads or creates anything.
func TestMainRefusesBadFlags(t *testing.T) {
	clitest.Refuses(t, drill.Main, []clitest.Refusal{
		{Name: "without --confirm nothing is created: a drill's volumes are billed", Args: []string{"--backup", "b1"}, Want: "add --confirm"},
		{Name: "without --backup or --schedule there is nothing to drill", Args: []string{"--confirm"}, Want: "name the backup: --backup NAME, or --schedule NAME"},
		{Name: "--backup and --schedule together are ambiguous", Args: []string{"--confirm", "--backup", "b1", "--schedule", "nightly"}, Want: "name the backup: --backup NAME, or --schedule NAME"},
		{Name: "an unknown --from is named with the places there are", Args: []string{"--backup", "b1", "--confirm", "--from", "replica"}, Want: `--from "replica": want copy, source or vault`},
		{Name: "a timeout a leftover could be taken for is refused", Args: []string{"--backup", "b1", "--confirm", "--timeout", "7h"}, Want: "--timeout 7h0m0s"},
	})
}
