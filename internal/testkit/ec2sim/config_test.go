package ec2sim

import (
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
