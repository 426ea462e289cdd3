package drill_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
)

// What `drill` answers to flags it cannot run with, before it reads or creates anything.
func TestMainRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "without --confirm nothing is created: a drill's volumes are billed", args: []string{"--backup", "b1"}, want: "add --confirm"},
		{name: "without --backup there is nothing to drill", args: []string{"--confirm"}, want: "--backup NAME is required"},
		{name: "a timeout a leftover could be taken for is refused", args: []string{"--backup", "b1", "--confirm", "--timeout", "7h"}, want: "--timeout 7h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := drill.Main(context.Background(), tc.args, io.Discard, &stderr); code != drill.ExitError {
				t.Errorf("exit %d, want %d", code, drill.ExitError)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.want)
			}
		})
	}
}
