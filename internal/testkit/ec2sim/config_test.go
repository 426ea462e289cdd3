package ec2sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDurationRangeFlag(t *testing.T) {
	tests := []struct {
		in       string
		min, max time.Duration
		wantErr  bool
	}{
		{"3s-6s", 3 * time.Second, 6 * time.Second, false},
		{"500ms", 500 * time.Millisecond, 500 * time.Millisecond, false},
		{"6s-3s", 0, 0, true},
		{"x", 0, 0, true},
	}
	for _, tc := range tests {
		var r DurationRange
		err := r.Set(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error %v", tc.in, err)
			continue
		}
		if err == nil && (r.Min.Duration != tc.min || r.Max.Duration != tc.max) {
			t.Errorf("%s: got %s-%s", tc.in, r.Min, r.Max)
		}
		if err == nil && r.String() != tc.in {
			t.Errorf("%s: String() = %q", tc.in, r.String())
		}
	}
}

// The initialization time scale reads from JSON like the other knobs; unset it is EBS's own
// time, and a negative one is refused naming the key.
func TestInitializationTimeScaleConfig(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		want    float64
		wantErr string
	}{
		{name: "unset: EBS's time", json: `{}`, want: 1},
		{name: "sixty times faster", json: `{"initializationTimeScale": 60}`, want: 60},
		{name: "negative refused", json: `{"initializationTimeScale": -2}`, wantErr: "initializationTimeScale -2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sim.json")
			if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadConfig(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LoadConfig: %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.withDefaults().InitializationTimeScale; got != tc.want {
				t.Errorf("scale %g, want %g", got, tc.want)
			}
		})
	}
}
