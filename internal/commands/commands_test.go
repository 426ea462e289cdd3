package commands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	"github.com/velero-async/velero-plugin-for-aws/internal/version"
)

// What the binary does with its first argument: a person's command runs and exits; Velero's
// ways of starting it (no argument, its server's flags) serve the plugins; the plugin manager
// of its own audit, asking which plugins it compiled in, is served none.
func TestFirstArgument(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		serve  Serving
		stdout []string
		stderr []string
	}{
		{"Velero starts it with no argument", nil, exitOK, ServePlugins, nil, nil},
		{"Velero starts it with its server's flags", []string{"--log-level", "info", "--features=EnableCSI"}, exitOK, ServePlugins, nil, nil},
		{"the plugin manager of its own audit asks which plugins it compiled in", []string{"run-plugins", "--kubeconfig", "k"}, exitOK, ServeNone, nil, nil},
		{"--help lists the commands, then says what it serves", []string{"--help"}, exitOK, Exit,
			[]string{"Commands:\n  check ", "\n  audit ", "\n  drill ", "\n  version ", "With no command, the binary serves Velero its plugins velero-async.io/aws,"}, nil},
		{"-h is --help", []string{"-h"}, exitOK, Exit, []string{"Commands:\n  check "}, nil},
		{"help is --help", []string{"help"}, exitOK, Exit, []string{"Commands:\n  check "}, nil},
		{"version prints the version and commit", []string{"version"}, exitOK, Exit,
			[]string{"velero-plugin-for-aws-async " + version.Version + " (commit " + version.Commit + ")\n"}, nil},
		{"version takes no arguments", []string{"version", "extra"}, exitUsage, Exit, nil, []string{"takes no arguments"}},
		{"a misspelt command is named, with the usage", []string{"chek"}, exitUsage, Exit, nil, []string{`unknown command "chek"`, "Commands:"}},
		{"check --help is check's usage", []string{"check", "--help"}, check.ExitOK, Exit, nil, []string{"Usage: velero-plugin-for-aws-async check [flags]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code, serve := Run(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.code || serve != tt.serve {
				t.Errorf("exit %d, serve %v; want %d, %v", code, serve, tt.code, tt.serve)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout %q, want it to contain %q", stdout.String(), want)
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr %q, want it to contain %q", stderr.String(), want)
				}
			}
			if len(tt.stdout) == 0 && stdout.Len() > 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// The usage lists every command, first thing after its one-line description.
func TestUsageListsEveryCommandFirst(t *testing.T) {
	var b bytes.Buffer
	usage(&b)
	text := b.String()
	serves := strings.Index(text, "With no command")
	for _, c := range commands {
		i := strings.Index(text, "\n  "+c.name+" ")
		if i < 0 || i > serves {
			t.Errorf("command %s is not listed before what the binary serves:\n%s", c.name, text)
		}
	}
}
