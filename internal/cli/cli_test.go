package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		help    bool
		wantErr string
	}{
		{"no flags: text output, Velero's namespace", nil, false, ""},
		{"--output json is taken", []string{"--output", "json"}, false, ""},
		{"--help prints the usage and asks to stop", []string{"--help"}, true, ""},
		{"an unknown output format is named", []string{"--output", "yaml"}, false, `check: --output "yaml": want text or json`},
		{"stray arguments are named", []string{"extra"}, false, `check: unexpected arguments ["extra"]`},
		{"an unknown flag is refused", []string{"--nope"}, false, "unknown flag: --nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := New("check", "Usage: check\n", &stderr)
			err := cmd.Parse(tc.args)
			switch {
			case tc.help:
				if !IsHelp(err) || !strings.Contains(stderr.String(), "Usage: check") {
					t.Fatalf("err %v, stderr %q: want the usage and ErrHelp", err, stderr.String())
				}
			case tc.wantErr == "":
				if err != nil {
					t.Fatalf("err %v", err)
				}
			default:
				if err == nil || !strings.Contains(stderr.String(), tc.wantErr) {
					t.Fatalf("err %v, stderr %q: want %q", err, stderr.String(), tc.wantErr)
				}
			}
		})
	}
}
