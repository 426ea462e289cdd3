package audit_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
)

// What `audit` answers to flags it cannot run with, before it reads anything.
func TestMainRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "--confirm alone is refused: it confirms a deletion", args: []string{"--confirm"}, want: "--confirm confirms --delete-orphans"},
		{name: "an unknown output format is refused", args: []string{"--output", "yaml"}, want: `--output "yaml"`},
		{name: "stray arguments are refused", args: []string{"extra"}, want: "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := audit.Main(context.Background(), tc.args, io.Discard, &stderr); code != audit.ExitError {
				t.Errorf("exit %d, want %d", code, audit.ExitError)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.want)
			}
		})
	}
}
