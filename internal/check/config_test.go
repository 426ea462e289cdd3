package check

import (
	"strings"
	"testing"
)

// A config key the plugin does not know is corrected when it looks like one it knows; the fix
// names keys, never values.
func TestMisspeltConfigKeys(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]string
		fix    string
	}{
		{"letters swapped", map[string]string{"region": "us-east-1", "copyToRegoin": "us-west-2"},
			"did you mean `copyToRegion`? rename \"copyToRegoin\" to \"copyToRegion\" in spec.config of the VolumeSnapshotLocation"},
		{"another letter case", map[string]string{"Region": "us-east-1"}, "did you mean `region`?"},
		{"a letter missing", map[string]string{"region": "us-east-1", "vaultAcountId": "222222222222"}, "did you mean `vaultAccountId`?"},
		{"two misspelt keys, each corrected", map[string]string{"regin": "us-east-1", "copytoregion": "us-west-2"},
			"did you mean `copyToRegion`? rename \"copytoregion\" to \"copyToRegion\"; did you mean `region`? rename \"regin\" to \"region\""},
		{"a key like none: where the keys are listed", map[string]string{"region": "us-east-1", "bucket": "secret-value"}, configFixDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fix := configFix(tt.config)
			if !strings.Contains(fix, tt.fix) {
				t.Errorf("fix %q, want it to hold %q", fix, tt.fix)
			}
			for _, v := range tt.config {
				if strings.Contains(fix, v) {
					t.Errorf("fix %q names the value %q", fix, v)
				}
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"region", "region", 0}, {"regoin", "region", 2}, {"", "abc", 3}, {"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
