package audit

import (
	"strings"
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
)

// Each backup's verdict, as `audit` prints it.
func TestBackupVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcomes []outcome
		ready    bool
		finding  string // a finding's text; "" for none
	}{
		{name: "a backup whose every copy and vault copy completed is DR-ready", outcomes: []outcome{{}, {}}, ready: true},
		{name: "a backup with a copy still pending is not DR-ready", outcomes: []outcome{{}, {copy: "pending"}},
			finding: "not DR-ready: 1 pending of copies in us-west-2"},
		{name: "a backup with a vault copy missing is not DR-ready", outcomes: []outcome{{vault: "missing"}, {}},
			finding: "not DR-ready: 1 missing of vault 222222222222 us-west-2"},
		{name: "a backup whose copies ended in error is not DR-ready", outcomes: []outcome{{}, {}, {}},
			finding: "not DR-ready: 1 in error of copies in us-west-2"},
		{name: "a backup whose vault copy is not locked though asked is reported", outcomes: []outcome{{unlocked: true}},
			ready: true, finding: "1 of 1 copies in vault 222222222222 us-west-2 are not locked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.cluster(clusterAUID, locationConfig)
			start := w.clock.Now()
			var snaps []taken
			for i, o := range tc.outcomes {
				snaps = append(snaps, w.take("b1", w.vols[i], o))
			}
			w.backup("b1", "", start, velerov1.BackupPhaseCompleted, snaps...)
			rep := w.audit(false)
			if len(rep.Backups) != 1 {
				t.Fatalf("backups: %+v", rep.Backups)
			}
			b := rep.Backups[0]
			if b.DRReady != tc.ready {
				t.Errorf("DR-ready = %v, want %v\n%s", b.DRReady, tc.ready, text(t, rep))
			}
			found := strings.Join(b.Findings, "\n")
			if tc.finding == "" && found != "" || !strings.Contains(found, tc.finding) {
				t.Errorf("findings %q, want %q", found, tc.finding)
			}
			if want := ExitOK; tc.finding != "" {
				if rep.Exit() != ExitFindings {
					t.Errorf("exit %d, want %d", rep.Exit(), ExitFindings)
				}
			} else if rep.Exit() != want {
				t.Errorf("exit %d, want %d\n%s", rep.Exit(), want, text(t, rep))
			}
			if want := int64(len(tc.outcomes)) * volumeGiB << 30 / 2; b.Bytes != want {
				t.Errorf("size %d, want %d (EC2's full snapshot sizes)", b.Bytes, want)
			}
		})
	}
}

// A schedule's recovery point in each recovery place, against its interval.
func TestRecoveryPoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		// newestUncopied leaves the newest backup without its copy; sinceNewest is the time
		// from the newest backup to the audit.
		newestUncopied bool
		sinceNewest    time.Duration
		stale          bool
	}{
		{name: "a schedule whose newest backup is DR-ready has a fresh recovery point", sinceNewest: time.Hour},
		{name: "a schedule whose newest backup has no copy falls back to the one before, still within the interval", newestUncopied: true, sinceNewest: time.Hour},
		{name: "a schedule whose newest DR-ready backup is older than its interval is stale", newestUncopied: true, sinceNewest: 6 * time.Hour, stale: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.cluster(clusterAUID, locationConfig)
			first := w.clock.Now()
			w.backup("nightly-1", scheduleName, first, velerov1.BackupPhaseCompleted, w.take("nightly-1", w.vols[0], outcome{}))
			w.clock.SetTime(first.Add(schedulePeriod))
			second := w.clock.Now()
			o := outcome{}
			if tc.newestUncopied {
				o.copy = "missing"
			}
			w.backup("nightly-2", scheduleName, second, velerov1.BackupPhaseCompleted, w.take("nightly-2", w.vols[0], o))
			w.clock.SetTime(second.Add(tc.sinceNewest))
			rep := w.audit(false)
			var point *RecoveryPoint
			for i, p := range rep.RecoveryPoints {
				if p.Place == "copies in "+copyRegion {
					point = &rep.RecoveryPoints[i]
				}
			}
			if point == nil {
				t.Fatalf("no recovery point in %s: %+v", copyRegion, rep.RecoveryPoints)
			}
			want := "nightly-2"
			if tc.newestUncopied {
				want = "nightly-1"
			}
			if point.Backup != want || point.Stale != tc.stale || point.Interval != schedulePeriod {
				t.Errorf("recovery point %+v, want backup %s, stale %v, interval %v\n%s", *point, want, tc.stale, schedulePeriod, text(t, rep))
			}
		})
	}
}
