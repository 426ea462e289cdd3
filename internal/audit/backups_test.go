package audit_test

import (
	"strings"
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/audittest"
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

// What could not be read is unknown, never ready: each place the backup asked for a copy in
// that the audit could not read makes its DR-readiness unknown, naming the place and why.
func TestDRReadyUnknown(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []audittest.Option
		down string
		// want is what the backup's line says of its readiness and the unread place.
		want []string
	}{
		{name: "a copy region that does not answer leaves a backup DR-ready unknown, naming the region",
			down: audittest.CopyRegion, want: []string{"DR-ready unknown", "copies in us-west-2", "region us-west-2 is down"}},
		{name: "a vault whose credentials EC2 refuses leaves a backup DR-ready unknown, naming the vault account",
			opts: []audittest.Option{audittest.WithAllowed(nil, []string{"CopySnapshot", "CreateTags", "LockSnapshot"})},
			want: []string{"DR-ready unknown", "vault 222222222222 us-west-2", "UnauthorizedOperation"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := audittest.New(t, tc.opts...)
			w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
			start := w.Clock.Now()
			w.Backup("b1", audittest.ScheduleName, start, velerov1.BackupPhaseCompleted, w.Take("b1", w.Vols[0], audittest.Outcome{}))
			if tc.down != "" {
				w.Down[tc.down] = true
			}
			rep := w.Audit(false)
			out := audittest.Text(t, rep)
			if len(rep.Backups) != 1 || rep.Backups[0].DRReady || rep.Backups[0].DRUnknown == "" {
				t.Fatalf("backups %+v: want b1 not DR-ready, its readiness unknown\n%s", rep.Backups, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("want %q in\n%s", want, out)
				}
			}
			if rep.Exit() != audit.ExitError {
				t.Errorf("exit %d, want %d: the audit could not read everything", rep.Exit(), audit.ExitError)
			}
			for _, p := range rep.RecoveryPoints {
				if p.Backup != "" && strings.Contains(tc.want[1], p.Place) {
					t.Errorf("recovery point %+v in a place that was not read", p)
				}
			}
		})
	}
}

// Places are told apart by the credentials they are read with: two locations of two accounts
// in one region, one account's read failing, leave that account's backups unknown, never
// missing, and the other's as read.
func TestPlacesOfTwoAccountsInOneRegion(t *testing.T) {
	w := audittest.New(t)
	w.Cluster(audittest.ClusterAUID, map[string]string{model.ConfigRegion: audittest.SourceRegion, model.ConfigProfile: audittest.SourceProfile})
	w.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: "ebs-b"},
		Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider,
			Config: map[string]string{model.ConfigRegion: audittest.SourceRegion, model.ConfigProfile: audittest.VaultProfile}}})
	start := w.Clock.Now()
	w.Backup("a1", "", start, velerov1.BackupPhaseCompleted, w.Take("a1", w.Vols[0], audittest.Outcome{Copy: "missing", Vault: "missing"}))
	w.Put(&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: "b1", Labels: map[string]string{velerov1.StorageLocationLabel: audittest.BSLName}},
		Spec:   velerov1.BackupSpec{StorageLocation: audittest.BSLName, VolumeSnapshotLocations: []string{"ebs-b"}},
		Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted, StartTimestamp: &metav1.Time{Time: start}, VolumeSnapshotsAttempted: 1, VolumeSnapshotsCompleted: 1}})
	w.Records["b1"] = []audit.RecordedSnapshot{{ID: "snap-0000000000000000b", Location: "ebs-b", PV: "pv-b"}}
	w.Down[audittest.VaultProfile+"/"+audittest.SourceRegion] = true
	rep := w.Audit(false)
	out := audittest.Text(t, rep)
	for _, b := range rep.Backups {
		src := b.Places[0]
		switch {
		case b.Name == "a1" && (src.Completed != 1 || src.Unread != ""):
			t.Errorf("a1's sources %+v: want 1 completed, read\n%s", src, out)
		case b.Name == "b1" && (src.Missing != 0 || !strings.Contains(src.Unread, "region us-east-1 is down")):
			t.Errorf("b1's sources %+v: want unknown, naming why, not missing\n%s", src, out)
		}
	}
	if rep.Exit() != audit.ExitError {
		t.Errorf("exit %d, want %d\n%s", rep.Exit(), audit.ExitError, out)
	}
}

// A schedule's recovery point in each recovery place, against its interval.
func TestRecoveryPoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		// newestUncopied leaves the newest backup without its copy; sinceNewest is the time
		// from the newest backup to the audit.
		newestUncopied bool
		// newestPartial makes the newest backup PartiallyFailed, its copies completed.
		newestPartial bool
		sinceNewest   time.Duration
		stale         bool
	}{
		{name: "a schedule whose newest backup is DR-ready has a fresh recovery point", sinceNewest: time.Hour},
		{name: "a schedule whose newest backup has no copy falls back to the one before, still within the interval", newestUncopied: true, sinceNewest: time.Hour},
		{name: "a schedule whose newest DR-ready backup is older than its interval is stale", newestUncopied: true, sinceNewest: 6 * time.Hour, stale: true},
		{name: "a PartiallyFailed backup is never a recovery point, its copies completed or not", newestPartial: true, sinceNewest: time.Hour},
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
			phase := velerov1.BackupPhaseCompleted
			if tc.newestPartial {
				phase = velerov1.BackupPhasePartiallyFailed
			}
			w.Backup("nightly-2", audittest.ScheduleName, second, phase, w.Take("nightly-2", w.Vols[0], o))
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
			if tc.newestUncopied || tc.newestPartial {
				want = "nightly-1"
			}
			if point.Backup != want || point.Stale != tc.stale || point.Interval.Duration() != audittest.SchedulePeriod {
				t.Errorf("recovery point %+v, want backup %s, stale %v, interval %v\n%s", *point, want, tc.stale, audittest.SchedulePeriod, audittest.Text(t, rep))
			}
		})
	}
}
