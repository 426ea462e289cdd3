package ebs

import "testing"

func TestParseConfigVolumeInitializationRate(t *testing.T) {
	tests := []struct {
		name    string
		rate    string // "" leaves the key out
		want    int32
		wantErr []string
	}{
		{name: "off by default"},
		{name: "lowest rate EC2 takes", rate: "100", want: 100},
		{name: "highest rate EC2 takes", rate: "300", want: 300},
		{name: "below EC2's range", rate: "99", wantErr: []string{`"volumeInitializationRate"`, `"99"`, "100 to 300"}},
		{name: "above EC2's range", rate: "301", wantErr: []string{`"301"`, "100 to 300"}},
		{name: "not a number", rate: "fast", wantErr: []string{`"fast"`, "MiB/s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{ConfigRegion: srcRegion}
			if tt.rate != "" {
				m[ConfigVolumeInitializationRate] = tt.rate
			}
			c, err := ParseConfig(m)
			wantErr(t, err, tt.wantErr...)
			if c.Restore.InitializationRate != tt.want {
				t.Errorf("rate %d, want %d", c.Restore.InitializationRate, tt.want)
			}
		})
	}
}
