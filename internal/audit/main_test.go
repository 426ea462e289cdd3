package audit

import (
	"context"
	"io"
	"strings"
	"testing"
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
			if code := Main(context.Background(), tc.args, io.Discard, &stderr); code != ExitError {
				t.Errorf("exit %d, want %d", code, ExitError)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.want)
			}
		})
	}
}
