package audit_test

import (
	"strings"
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/audit/audittest"
)

// Each backup's verdict, as `audit` prints it.
func TestBackupVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcomes []audittest.Outcome
		ready    bool
		finding  string // a finding's text; "" for none
	}{
		{name: "a backup whose every copy and vault copy completed is DR-ready", outcomes: []audittest.Outcome{{}, {}}, ready: true},
		{name: "a backup with a copy still pending is not DR-ready", outcomes: []audittest.Outcome{{}, {Copy: "pending"}},
			finding: "not DR-ready: 1 pending of copies in us-west-2"},
		{name: "a backup with a vault copy missing is not DR-ready", outcomes: []audittest.Outcome{{Vault: "missing"}, {}},
			finding: "not DR-ready: 1 missing of vault 222222222222 us-west-2"},
		{name: "a backup whose copies ended in error is not DR-ready", outcomes: []audittest.Outcome{{}, {}, {}},
			finding: "not DR-ready: 1 in error of copies in us-west-2"},
		{name: "a backup whose vault copy is not locked though asked is reported", outcomes: []audittest.Outcome{{Unlocked: true}},
			ready: true, finding: "1 of 1 copies in vault 222222222222 us-west-2 are not locked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := audittest.New(t)
			w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
			start := w.Clock.Now()
			var snaps []audittest.Taken
			for i, o := range tc.outcomes {
				snaps = append(snaps, w.Take("b1", w.Vols[i], o))
			}
			w.Backup("b1", "", start, velerov1.BackupPhaseCompleted, snaps...)
			rep := w.Audit(false)
			if len(rep.Backups) != 1 {
				t.Fatalf("backups: %+v", rep.Backups)
			}
			b := rep.Backups[0]
			if b.DRReady != tc.ready {
				t.Errorf("DR-ready = %v, want %v\n%s", b.DRReady, tc.ready, audittest.Text(t, rep))
			}
			found := strings.Join(b.Findings, "\n")
			if tc.finding == "" && found != "" || !strings.Contains(found, tc.finding) {
				t.Errorf("findings %q, want %q", found, tc.finding)
			}
			if want := audit.ExitOK; tc.finding != "" {
				if rep.Exit() != audit.ExitFindings {
					t.Errorf("exit %d, want %d", rep.Exit(), audit.ExitFindings)
				}
			} else if rep.Exit() != want {
				t.Errorf("exit %d, want %d\n%s", rep.Exit(), want, audittest.Text(t, rep))
			}
			if want := int64(len(tc.outcomes)) * audittest.VolumeGiB << 30 / 2; b.Bytes != want {
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
			w := audittest.New(t)
			w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
			first := w.Clock.Now()
			w.Backup("nightly-1", audittest.ScheduleName, first, velerov1.BackupPhaseCompleted, w.Take("nightly-1", w.Vols[0], audittest.Outcome{}))
			w.Clock.SetTime(first.Add(audittest.SchedulePeriod))
			second := w.Clock.Now()
			o := audittest.Outcome{}
			if tc.newestUncopied {
				o.Copy = "missing"
			}
			w.Backup("nightly-2", audittest.ScheduleName, second, velerov1.BackupPhaseCompleted, w.Take("nightly-2", w.Vols[0], o))
			w.Clock.SetTime(second.Add(tc.sinceNewest))
			rep := w.Audit(false)
			var point *audit.RecoveryPoint
			for i, p := range rep.RecoveryPoints {
				if p.Place == "copies in "+audittest.CopyRegion {
					point = &rep.RecoveryPoints[i]
				}
			}
			if point == nil {
				t.Fatalf("no recovery point in %s: %+v", audittest.CopyRegion, rep.RecoveryPoints)
			}
			want := "nightly-2"
			if tc.newestUncopied {
				want = "nightly-1"
			}
			if point.Backup != want || point.Stale != tc.stale || point.Interval.Duration() != audittest.SchedulePeriod {
				t.Errorf("recovery point %+v, want backup %s, stale %v, interval %v\n%s", *point, want, tc.stale, audittest.SchedulePeriod, audittest.Text(t, rep))
			}
		})
	}
}
