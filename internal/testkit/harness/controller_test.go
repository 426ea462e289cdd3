package harness

import (
	"testing"
	"time"
)

func TestNextTick(t *testing.T) {
	origin := time.Unix(1000, 0)
	const period = 10 * time.Second
	tests := []struct {
		name  string
		after time.Duration
		want  time.Duration
	}{
		{"from the origin", 0, period},
		{"within the first period", 3 * time.Second, period},
		{"on a tick: the next one", period, 2 * period},
		{"a pass that outlasted two ticks", 25 * time.Second, 30 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextTick(origin, period, origin.Add(tc.after)); !got.Equal(origin.Add(tc.want)) {
				t.Errorf("next tick at %s, want %s", got.Sub(origin), tc.want)
			}
		})
	}
}

func TestCreationOrderAndNames(t *testing.T) {
	scheduled := []ScheduledBackup{
		{At: 2 * time.Second, BackupRequest: BackupRequest{Name: "c"}},
		{At: 0, BackupRequest: BackupRequest{Name: "a"}},
		{At: 2 * time.Second, BackupRequest: BackupRequest{Name: "d"}},
		{At: time.Second, BackupRequest: BackupRequest{Name: "b"}},
	}
	got := creationOrder(scheduled)
	want := []int{1, 3, 0, 2} // ties keep the order given
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("creation order %v, want %v", got, want)
		}
	}
	if err := distinctNames(scheduled); err != nil {
		t.Errorf("distinct names refused: %v", err)
	}
	if err := distinctNames(append(scheduled, ScheduledBackup{BackupRequest: BackupRequest{Name: "b"}})); err == nil {
		t.Error("two backups named b accepted")
	}
}
