package model_test

import (
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

func TestParseConfigRestoreKeys(t *testing.T) {
	tests := []struct {
		name    string
		keys    map[string]string // added to a location of srcRegion
		want    model.RestoreConfig
		wantErr []string
	}{
		{name: "off by default"},
		{name: "lowest rate EC2 takes", keys: map[string]string{model.ConfigVolumeInitializationRate: "100"}, want: model.RestoreConfig{InitializationRate: 100}},
		{name: "highest rate EC2 takes", keys: map[string]string{model.ConfigVolumeInitializationRate: "300"}, want: model.RestoreConfig{InitializationRate: 300}},
		{name: "rate below EC2's range", keys: map[string]string{model.ConfigVolumeInitializationRate: "99"}, wantErr: []string{`"volumeInitializationRate"`, `"99"`, "100 to 300"}},
		{name: "rate above EC2's range", keys: map[string]string{model.ConfigVolumeInitializationRate: "301"}, wantErr: []string{`"301"`, "100 to 300"}},
		{name: "rate not a number", keys: map[string]string{model.ConfigVolumeInitializationRate: "fast"}, wantErr: []string{`"fast"`, "MiB/s"}},
		{name: "restore waits for initialization", keys: map[string]string{model.ConfigWaitForVolumeInitialization: "true"}, want: model.RestoreConfig{WaitForInitialization: true}},
		{name: "restore waits for initialization at a provisioned rate",
			keys: map[string]string{model.ConfigVolumeInitializationRate: "300", model.ConfigWaitForVolumeInitialization: "true"},
			want: model.RestoreConfig{InitializationRate: 300, WaitForInitialization: true}},
		{name: "restore does not wait", keys: map[string]string{model.ConfigWaitForVolumeInitialization: "false"}},
		{name: "wait not true or false", keys: map[string]string{model.ConfigWaitForVolumeInitialization: "always"},
			wantErr: []string{`"waitForVolumeInitialization"`, `"always"`, "true or false"}},
		{name: "fallback allowed", keys: map[string]string{model.ConfigVolumeInitializationRate: "200", model.ConfigVolumeInitializationFallback: "true"},
			want: model.RestoreConfig{InitializationRate: 200, InitializationFallback: true}},
		{name: "fallback refused", keys: map[string]string{model.ConfigVolumeInitializationRate: "200", model.ConfigVolumeInitializationFallback: "false"},
			want: model.RestoreConfig{InitializationRate: 200}},
		{name: "fallback not true or false", keys: map[string]string{model.ConfigVolumeInitializationRate: "200", model.ConfigVolumeInitializationFallback: "maybe"},
			wantErr: []string{`"volumeInitializationFallback"`, `"maybe"`, "true or false"}},
		{name: "fallback without a rate", keys: map[string]string{model.ConfigVolumeInitializationFallback: "true"},
			wantErr: []string{`"volumeInitializationFallback"`, `"true"`, `needs "volumeInitializationRate"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{model.ConfigRegion: mockec2.SrcRegion}
			for k, v := range tt.keys {
				m[k] = v
			}
			c, err := model.ParseConfig(m)
			mockec2.WantErr(t, err, tt.wantErr...)
			if c.Restore != tt.want {
				t.Errorf("restore config %+v, want %+v", c.Restore, tt.want)
			}
		})
	}
}
