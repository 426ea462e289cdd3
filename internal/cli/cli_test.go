package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
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
			cmd := New("check", "[flags]", "Checks.", &stderr)
			err := cmd.parse(tc.args)
			switch {
			case tc.help:
				if !errors.Is(err, pflag.ErrHelp) || !strings.HasPrefix(stderr.String(), "Usage: velero-plugin-for-aws-async check [flags]\n\nChecks.\n\n") {
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

// A report's durations are written as seconds, and read back as they were written.
func TestSecondsInJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"whole hours as seconds", 6 * time.Hour, "21600"},
		{"a drill's time to the millisecond", 41*time.Second + 123456789*time.Nanosecond, "41.123"},
		{"zero as 0", 0, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(Seconds(tc.d))
			if err != nil || string(b) != tc.want {
				t.Fatalf("wrote %s (err %v), want %s", b, err, tc.want)
			}
			var back Seconds
			if err := json.Unmarshal(b, &back); err != nil || back.Duration() != tc.d.Round(time.Millisecond) {
				t.Errorf("read %s back as %v (err %v), want %v", b, back.Duration(), err, tc.d.Round(time.Millisecond))
			}
		})
	}
}
