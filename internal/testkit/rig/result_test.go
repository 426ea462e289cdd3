package rig

import "testing"

func TestResultOK(t *testing.T) {
	tests := []struct {
		name string
		res  Result
		want bool
	}{
		{"clean", Result{Operations: 10}, true},
		{"intended failures", Result{Operations: 10, Failed: 2, WantFailed: 2}, true},
		{"unintended failure", Result{Operations: 10, Failed: 1}, false},
		{"intended failure missing", Result{Operations: 10, WantFailed: 1}, false},
		{"duplicate", Result{Duplicates: 1}, false},
		{"leak", Result{Leaked: 1}, false},
		{"problem", Result{Problems: []string{"x"}}, false},
		{"not deleted", Result{NotDeleted: true}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.res.OK(); got != tc.want {
				t.Errorf("OK() = %v, want %v", got, tc.want)
			}
		})
	}
}
