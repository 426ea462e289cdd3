// Package clitest tests what the plugin's commands for people answer to command lines they
// cannot run with.
package clitest

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
)

// Refusal is a command line a command refuses before it reads or creates anything.
type Refusal struct {
	// Name says what the user sees.
	Name string
	Args []string
	// Want is what the command's standard error says.
	Want string
}

// Main is a command's Main.
type Main func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Refuses runs main with each refusal's arguments, one subtest each, and wants cli.ExitError and
// the refusal's words on standard error.
func Refuses(t *testing.T, main Main, refusals []Refusal) {
	t.Helper()
	for _, r := range refusals {
		t.Run(r.Name, func(t *testing.T) {
			var stderr strings.Builder
			if code := main(context.Background(), r.Args, io.Discard, &stderr); code != cli.ExitError {
				t.Errorf("exit %d, want %d", code, cli.ExitError)
			}
			if !strings.Contains(stderr.String(), r.Want) {
				t.Errorf("stderr %q, want %q", stderr.String(), r.Want)
			}
		})
	}
}
