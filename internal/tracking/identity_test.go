package tracking

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// pvOp is the v2 operation of volume vol's PV pv, opened at t0.
func pvOp(vol, pv string) string {
	return model.Operation{Region: mockec2.SrcRegion, VolumeID: vol, Issued: mockec2.T0, PV: pv}.String()
}

// withoutUID removes the backup-UID tag: a snapshot whose CreateSnapshot did not learn it.
func withoutUID() mockec2.SnapOpt { return mockec2.WithTags(model.TagBackupUID, "") }

// Each operation follows exactly the snapshot Velero recorded, whatever else in the account is
// tagged with the backup's name.
func TestProgressFollowsTheRecordedSnapshot(t *testing.T) {
	started := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 1)
	started.Status.StartTimestamp = &metav1.Time{Time: mockec2.T0}
	old := mockec2.Snapshot("snap-0000001d", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1"), mockec2.StartedAt(-24*time.Hour), mockec2.WithTags(model.TagBackupUID, "uid-of-an-earlier-backup"))
	oldCopy := mockec2.CopyOfSnap("snap-0000001c", old, types.SnapshotStateCompleted)
	tests := []struct {
		name       string
		op         string
		backup     *velerov1.Backup
		east, west []types.Snapshot
		elapsed    time.Duration // since the operation was opened
		install    string        // this install's identity, when the tracker knows it
		want       want
		wantCopies []string // sources copied
		wantGone   []string // snapshots deleted in the source region
	}{
		{name: "an earlier backup of the same name, with its copy", op: pvOp(mockec2.VolA, "pv-1"), backup: started,
			east: []types.Snapshot{old, mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStatePending, mockec2.ToDest(model.TagPV, "pv-1"), mockec2.Progress("40%"))},
			west: []types.Snapshot{oldCopy},
			want: want{n: 40, total: 200, desc: "snapshot snap-0000000a in us-east-1: 40%"}},
		{name: "an earlier backup of the same name, neither tagged with a UID", op: pvOp(mockec2.VolA, "pv-1"), backup: started,
			east: []types.Snapshot{
				mockec2.Snapshot("snap-0000001d", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1"), mockec2.StartedAt(-10*time.Minute), withoutUID()),
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1"), mockec2.StartedAt(2*time.Second), withoutUID()),
			},
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2: 0%"}, wantCopies: []string{"snap-0000000a"}},
		{name: "another install's backup of the same name at the same time", op: pvOp(mockec2.VolA, "pv-1"), backup: started,
			east: []types.Snapshot{
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1")),
				mockec2.Snapshot("snap-0000000f", volN(7), types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1"), mockec2.WithTags(model.TagBackupUID, "uid-of-another-cluster")),
			},
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2: 0%"}, wantCopies: []string{"snap-0000000a"}},
		{name: "two PVs on one EBS volume", op: pvOp(mockec2.VolA, "pv-2"), backup: started,
			east: []types.Snapshot{
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-1")),
				mockec2.Snapshot("snap-0000000b", mockec2.VolA, types.SnapshotStatePending, mockec2.WithTags(model.TagPV, "pv-2"), mockec2.Progress("10%")),
			},
			want: want{n: 10, total: 100, desc: "snapshot snap-0000000b in us-east-1: 10%"}},
		{name: "another snapshot of the same CreateSnapshot call is deleted", op: pvOp(mockec2.VolA, "pv-1"), backup: started,
			east: []types.Snapshot{
				mockec2.Snapshot("snap-0000000e", mockec2.VolA, types.SnapshotStatePending, mockec2.ToDest(model.TagPV, "pv-1", model.TagCreateToken, "t1")),
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1", model.TagCreateToken, "t1", model.TagRecorded, "true"), mockec2.StartedAt(time.Minute)),
			},
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2: 0%"}, wantCopies: []string{"snap-0000000a"}, wantGone: []string{"snap-0000000e"}},
		// Without the UID (the handoff lost), a snapshot this plugin made is the operation's
		// before one it did not make: this plugin was asked for the PV's snapshot, so the other
		// is another cluster's backup of the same name, through the upstream plugin.
		{name: "this plugin's snapshot without the UID, its CreateSnapshot not returned yet, beside another cluster's snapshot of the PV through the upstream plugin", op: pvOp(mockec2.VolA, "pv-1"), backup: started, elapsed: time.Minute,
			east: []types.Snapshot{
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1", model.TagCreateToken, "t1", model.TagRecorded, model.RecordedPending), withoutUID(), mockec2.StartedAt(2*time.Second)),
				mockec2.Snapshot("snap-0000000f", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-1"), withoutUID(), mockec2.StartedAt(time.Second)),
			},
			want: want{desc: "snapshot snap-0000000a in us-east-1: 100%; waiting for CreateSnapshot to return it to Velero"}},
		// An operation of the previous release names no PV: it follows a PV's snapshot of its
		// volume only once its own, if another static PV's is all EC2 lists, would be listed too.
		{name: "an operation of the previous release (v1 ID, no PV) waits while the snapshot it finds may be another static PV's", op: opID(mockec2.VolA), backup: started,
			east: []types.Snapshot{mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-1"), withoutUID())},
			want: want{desc: "names no persistent volume, and snapshot snap-0000000a of volume " + mockec2.VolA + " is of PV pv-1"}},
		{name: "an operation of the previous release (v1 ID, no PV)", op: opID(mockec2.VolA), backup: started, elapsed: 12 * time.Minute,
			east: []types.Snapshot{mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-1"), withoutUID())},
			want: want{completed: true, n: 100, total: 100, desc: "snapshot snap-0000000a in us-east-1 completed"}},
		// Before create tokens existed: neither snapshot carries one, so neither is the other's stray.
		{name: "two static PVs on one EBS volume across the upgrade: the other PV's snapshot is kept", op: opID(mockec2.VolA), backup: started, elapsed: 12 * time.Minute,
			east: []types.Snapshot{
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-1"), withoutUID(), mockec2.StartedAt(-30*time.Second)),
				mockec2.Snapshot("snap-0000000b", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-2"), withoutUID(), mockec2.StartedAt(2*time.Second)),
			},
			want: want{completed: true, n: 100, total: 100, desc: "snapshot snap-0000000b in us-east-1 completed"}},
		// Nor is another cluster's snapshot of the PV, on the earliest release, beside this
		// backup's marked returned: no create token ties the two to one call.
		{name: "an earlier release's snapshot marked returned, beside another cluster's of the same PV on the earliest release: the other is kept", op: opID(mockec2.VolA), backup: started, elapsed: 12 * time.Minute,
			east: []types.Snapshot{
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-1", model.TagVolumeType, "gp3", model.TagRecorded, model.RecordedTrue), withoutUID(), mockec2.StartedAt(2*time.Second)),
				mockec2.Snapshot("snap-0000000f", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-1", model.TagVolumeType, "gp3"), withoutUID(), mockec2.StartedAt(30*time.Second)),
			},
			want: want{completed: true, n: 100, total: 100, desc: "snapshot snap-0000000a in us-east-1 completed"}},
		{name: "an operation of the previous release (v1 ID, no PV) never follows another static PV's snapshot taken before it opened, even the only one marked recorded", op: opID(mockec2.VolA), backup: started, elapsed: 12 * time.Minute,
			east: []types.Snapshot{
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-1", model.TagRecorded, "true"), mockec2.StartedAt(-time.Minute)),
				mockec2.Snapshot("snap-0000000b", mockec2.VolA, types.SnapshotStatePending, mockec2.WithTags(model.TagPV, "pv-2"), mockec2.StartedAt(16*time.Second), mockec2.Progress("10%")),
			},
			want: want{n: 10, total: 100, desc: "snapshot snap-0000000b in us-east-1: 10%"}},
		// Another cluster's backup of the same name and PV, of the same static PV's EBS volume,
		// its handoff lost too: its CreateSnapshot's snapshot, marked pending, started within the
		// window of this operation, whose CreateSnapshot failed. The install tag tells it apart.
		{name: "another install's snapshot without the UID, marked pending, within the window of an operation whose CreateSnapshot failed: neither followed nor deleted",
			op: pvOp(mockec2.VolA, "pv-1"), backup: attempted(backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 0), 1), elapsed: 12 * time.Minute, install: "cluster-a/velero",
			east: []types.Snapshot{mockec2.Snapshot("snap-0000000f", mockec2.VolA, types.SnapshotStateCompleted, withoutUID(), mockec2.StartedAt(2*time.Second),
				mockec2.ToDest(model.TagPV, "pv-1", model.TagCreateToken, "theirs", model.TagRecorded, model.RecordedPending, model.TagInstall, "cluster-b/velero"))},
			want: want{completed: true, desc: "no native snapshot of volume " + mockec2.VolA + " was taken for this backup"}},
		{name: "this install's snapshot without the UID, marked pending, within the window of an operation whose CreateSnapshot failed: deleted",
			op: pvOp(mockec2.VolA, "pv-1"), backup: attempted(backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 0), 1), elapsed: 12 * time.Minute, install: "cluster-a/velero",
			east: []types.Snapshot{mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, withoutUID(), mockec2.StartedAt(2*time.Second),
				mockec2.ToDest(model.TagPV, "pv-1", model.TagCreateToken, "ours", model.TagRecorded, model.RecordedPending, model.TagInstall, "cluster-a/velero"))},
			want: want{completed: true, errTxt: "snapshot snap-0000000a it made all the same is deleted and not copied"}, wantGone: []string{"snap-0000000a"}},
		{name: "an operation of the previous release ignores an older backup's snapshot", op: opID(mockec2.VolA), backup: started,
			east: []types.Snapshot{mockec2.Snapshot("snap-0000001d", mockec2.VolA, types.SnapshotStateCompleted, mockec2.StartedAt(-time.Hour), withoutUID())},
			want: want{desc: "waiting for EC2 to list the snapshot"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(tt.east...)
			f.Dst().Add(tt.west...)
			m := serveTracker(f, nil)
			f.Clk.Step(tt.elapsed)
			p, err := newTracker(f, ebs.WithInstall(func() string { return tt.install })).Progress(context.Background(), tt.op, tt.backup)
			checkProgress(t, p, err, tt.want)
			var copied []string
			for _, in := range m.copies {
				copied = append(copied, *in.SourceSnapshotId)
			}
			if fmt.Sprint(copied) != fmt.Sprint(tt.wantCopies) && len(copied)+len(tt.wantCopies) > 0 {
				t.Errorf("copied %v, want %v", copied, tt.wantCopies)
			}
			if fmt.Sprint(f.Src().Deleted) != fmt.Sprint(tt.wantGone) && len(f.Src().Deleted)+len(tt.wantGone) > 0 {
				t.Errorf("deleted %v, want %v", f.Src().Deleted, tt.wantGone)
			}
		})
	}
}

// One source EC2 will not tag (another tool filled its 50 tags) fails only its own operation:
// the other 29 are marked and copied in the same reconcile.
func TestProgressOneUntaggableSourceHoldsUpNoOther(t *testing.T) {
	f := mockec2.NewFixture(t)
	for i := 0; i < 30; i++ {
		f.Src().Add(mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(time.Duration(i)*time.Second)))
	}
	f.TagRefusals = map[string]error{"snap-00000003": mockec2.HTTPErr(400, "TagLimitExceeded")}
	m := serveTracker(f, nil)
	tr := newTracker(f)
	backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 30)
	for i := 0; i < 30; i++ {
		p, err := tr.Progress(context.Background(), opID(volN(i)), backup)
		switch i {
		case 3:
			checkProgress(t, p, err, want{completed: true, n: 100, total: 200, errTxt: "marking snapshot snap-00000003 for its copy to us-west-2 refused"})
		default:
			checkProgress(t, p, err, want{n: 100, total: 200})
		}
	}
	if n := m.count("CopySnapshot"); n != 20 {
		t.Errorf("%d copies started, want the 20 slots filled by the other sources", n)
	}
	for _, in := range m.copies {
		if *in.SourceSnapshotId == "snap-00000003" {
			t.Errorf("the untaggable source was copied")
		}
	}
}

// Velero's item-operation timeout cancels an operation: its pending copy is deleted, and no later
// Progress call, in this process or a fresh one, starts it again.
func TestCancelIsFinal(t *testing.T) {
	f := mockec2.NewFixture(t)
	a := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest())
	b := mockec2.Snapshot("snap-0000000b", volN(2), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(50*time.Minute))
	f.Src().Add(a, b)
	f.Dst().Add(mockec2.CopyOfSnap("snap-0000000c", a, types.SnapshotStatePending))
	m := serveTracker(f, nil)
	backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 2)
	backup.Spec.ItemOperationTimeout = metav1.Duration{Duration: time.Hour}
	f.Clk.Step(time.Hour + time.Minute) // Velero's timeout of the first operation
	if err := newTracker(f).Cancel(context.Background(), opID(mockec2.VolA), backup); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.Dst().Deleted) != "[snap-0000000c]" {
		t.Fatalf("deleted %v in %s, want the pending copy", f.Dst().Deleted, mockec2.DstRegion)
	}
	f.Clk.Step(2 * time.Minute) // beyond the listing lag
	if _, err := newTracker(f).Progress(context.Background(), opID(volN(2)), backup); err != nil {
		t.Fatal(err)
	}
	for _, in := range m.copies {
		if *in.SourceSnapshotId == "snap-0000000a" {
			t.Errorf("the cancelled operation's copy was started again")
		}
	}
	if m.count("CopySnapshot") != 1 {
		t.Errorf("%d copies, want only the other operation's", m.count("CopySnapshot"))
	}
}

// A source whose deletion has begun is not copied, whether the deletion's mark is seen in the
// description or only in the re-read after marking the batch.
func TestProgressCopiesNoSourceBeingDeleted(t *testing.T) {
	for _, seen := range []string{"in the description", "after marking"} {
		t.Run(seen, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest()))
			if seen == "in the description" {
				f.Src().Snaps[0].Tags = append(f.Src().Snaps[0].Tags, tagOf(model.TagDeletionRequestedAt, mockec2.T0.Format(time.RFC3339)))
			} else {
				f.Src().BeforeDescribe = func(n int) {
					if n == 1 { // the deletion marks the source between the tracker's two reads
						model.SetTag(&f.Src().Snaps[0], model.TagDeletionRequestedAt, mockec2.T0.Format(time.RFC3339))
					}
				}
			}
			m := serveTracker(f, nil)
			p, err := newTracker(f).Progress(context.Background(), opID(mockec2.VolA), backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 1))
			checkProgress(t, p, err, want{n: 100, total: 200, desc: "is being deleted with its backup"})
			if m.count("CopySnapshot") != 0 {
				t.Errorf("a source being deleted was copied")
			}
		})
	}
}

// Credentials that cannot be had (the identity provider down, a new role's trust policy not yet
// in effect) keep the operation waiting; they never fail it.
func TestProgressCredentialFailureIsTransient(t *testing.T) {
	for _, code := range []string{"IDPCommunicationError", "InvalidIdentityToken", "AccessDenied"} {
		t.Run(code, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted))
			f.Src().FailNext(fmt.Errorf("operation error EC2: DescribeSnapshots, get identity: %w", &ec2api.CredentialsError{Err: mockec2.HTTPErr(400, code)}))
			serveTracker(f, nil)
			p, err := newTracker(f).Progress(context.Background(), opID(mockec2.VolA), inProgress)
			checkProgress(t, p, err, want{desc: "waiting for EC2: describing the snapshots"})
			if !strings.Contains(p.Description, code) {
				t.Errorf("description %q does not name %s", p.Description, code)
			}
		})
	}
}

// At any request rate one description spends at most its fill budget starting copies, checked
// between requests; the rest waits for the next description.
func TestProgressFillBudget(t *testing.T) {
	f := mockec2.NewFixture(t)
	for i := 0; i < 20; i++ {
		f.Src().Add(mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(time.Duration(i)*time.Second)))
	}
	f.CopyDelay = time.Second // each CopySnapshot waits a second for EC2's pace
	m := serveTracker(f, nil)
	tr := newTracker(f, ebs.WithCacheTTL(time.Minute))
	backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 20)
	start := f.Clk.Now()
	for i := 0; i < 20; i++ {
		if _, err := tr.Progress(context.Background(), opID(volN(i)), backup); err != nil {
			t.Fatal(err)
		}
	}
	if spent := f.Clk.Since(start); spent > ebs.FillBudget+time.Second {
		t.Errorf("one reconcile spent %s in CopySnapshot, want at most the %s budget and the request in flight", spent, ebs.FillBudget)
	}
	if n := m.count("CopySnapshot"); n != int(ebs.FillBudget/time.Second) {
		t.Errorf("%d copies started, want %d", n, int(ebs.FillBudget/time.Second))
	}
	if m.count("DeleteTags") == 0 {
		t.Errorf("the sources left for later keep their copy-requested mark")
	}
}

func tagOf(k, v string) types.Tag { t := types.Tag{}; t.Key, t.Value = &k, &v; return t }

// A Cancel whose cancelled mark EC2 will not write (throttled past the SDK's retries) still
// leaves the source uncopyable: a fresh plugin process's fill never copies a source whose
// operation is past Velero's item-operation timeout.
func TestCancelThatCannotMarkTheSourceLeavesItUncopyable(t *testing.T) {
	f := mockec2.NewFixture(t)
	a := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest())
	b := mockec2.Snapshot("snap-0000000b", volN(2), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(time.Hour))
	f.Src().Add(a, b)
	f.TagRefusals = map[string]error{"snap-0000000a": mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded)}
	m := serveTracker(f, nil)
	backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 2)
	backup.Spec.ItemOperationTimeout = metav1.Duration{Duration: 4 * time.Hour}
	f.Clk.Step(4*time.Hour + 2*time.Minute) // Velero's timeout of the first operation
	err := newTracker(f).Cancel(context.Background(), opID(mockec2.VolA), backup)
	mockec2.WantErr(t, err, "marking snapshot snap-0000000a as cancelled")
	p, err := newTracker(f).Progress(context.Background(), opID(volN(2)), backup)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "copy snap-c0000001"})
	for _, in := range m.copies {
		if *in.SourceSnapshotId == "snap-0000000a" {
			t.Errorf("the cancelled operation's source was copied")
		}
	}
	p, err = newTracker(f).Progress(context.Background(), opID(mockec2.VolA), backup)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "Velero's item-operation timeout for snapshot snap-0000000a is past or too near for a copy"})
}

// Many operations time out in one reconcile: each Cancel marks its source, and pending copies
// are deleted only while the reconcile's time for EC2 requests lasts; the rest are left to
// complete (the backup's deletion deletes them) and Cancel says so.
func TestCancelsOfOneReconcileStayWithinItsTimeBudget(t *testing.T) {
	f := mockec2.NewFixture(t)
	const n = 10
	for i := 0; i < n; i++ {
		s := mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, mockec2.ToDest())
		f.Src().Add(s)
		f.Dst().Add(mockec2.CopyOfSnap(fmt.Sprintf("snap-c%07x", i), s, types.SnapshotStatePending))
	}
	m := serveTracker(f, nil)
	f.Dst().OnDelete = func() { f.Clk.Step(500 * time.Millisecond) }
	tr := newTracker(f)
	backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, n)
	left := 0
	for i := 0; i < n; i++ {
		if err := tr.Cancel(context.Background(), opID(volN(i)), backup); err != nil {
			if !strings.Contains(err.Error(), "left to complete") {
				t.Errorf("Cancel %d: %v", i, err)
			}
			left++
		}
	}
	if got := m.count("CreateTags"); got != n {
		t.Errorf("%d sources marked cancelled, want all %d", got, n)
	}
	if d := len(f.Dst().Deleted); d+left != n || d > int(ebs.FillBudget/(500*time.Millisecond))+1 {
		t.Errorf("%d pending copies deleted, %d left: want deletions only within the %s budget", d, left, ebs.FillBudget)
	}
}

// Cancel of an operation whose vault copy is locked while still pending: the share is removed,
// the locked copy is left to complete (EC2 would refuse to delete it, and it is the backup's),
// and Cancel reports no error.
func TestCancelKeepsALockedPendingVaultCopy(t *testing.T) {
	const vaultAcct = "222222222222"
	f := mockec2.NewFixture(t)
	src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted,
		mockec2.WithTags(model.TagVaultAccount, vaultAcct, model.TagVaultRegion, mockec2.DstRegion, model.TagVaultLock, "governance:1", model.TagVaultSharedAt, mockec2.T0.Format(time.RFC3339)))
	cp := mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStatePending, mockec2.Progress("40%"))
	model.SetTag(&cp, model.TagVaultLock, "governance:1")
	cp.OwnerId = aws.String(vaultAcct)
	f.Src().Add(src)
	f.Dst().Add(cp)
	f.Dst().Locks["snap-0000000b"] = types.LockStateGovernance
	serveTracker(f, nil)
	var unshared []string
	f.Src().M.EXPECT().ModifySnapshotAttribute(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.ModifySnapshotAttributeInput, _ ...func(*ec2.Options)) (*ec2.ModifySnapshotAttributeOutput, error) {
			if in.CreateVolumePermission.Remove != nil {
				unshared = append(unshared, aws.ToString(in.SnapshotId))
			}
			return &ec2.ModifySnapshotAttributeOutput{}, nil
		})
	tr := newTracker(f, ebs.WithVaultClients(f.Clients()))
	if err := tr.Cancel(context.Background(), opID(mockec2.VolA), inProgress); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if len(f.Dst().Deleted)+len(f.Src().Deleted) != 0 {
		t.Errorf("deleted %v and %v; the locked vault copy and the source stay", f.Dst().Deleted, f.Src().Deleted)
	}
	if fmt.Sprint(unshared) != "[snap-0000000a]" {
		t.Errorf("shares removed %v, want the source's", unshared)
	}
}

// An EBS volume snapshotted through another provider's location (the upstream plugin's) in a
// backup that names this plugin's location with copyToRegion: once this plugin's own snapshot
// of the volume, if it took one, would be listed, the operation fails naming the location that
// took the snapshot, why no copy exists and the fix (that location moved or deleted). Until then it waits, saying why: another cluster's
// backup of the same name may have snapshotted the volume through the upstream plugin. A backup
// that names no location of this plugin is left alone.
func TestAVolumeSnapshottedThroughAnotherProvidersLocationHasNoCopy(t *testing.T) {
	upstream := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, withoutUID(), mockec2.WithTags(model.TagPV, "pv-1"))
	own := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1", model.TagCreateToken, "t", model.TagRecorded, model.RecordedReturned))
	earlier := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1", model.TagVolumeType, "gp3"))
	restored := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, withoutUID(), mockec2.WithTags(model.TagPV, "pv-1", model.TagRestoreToken, "r"))
	// ownListed is when this plugin's snapshot of the volume, had it taken one, would be listed.
	ownListed := ebs.NewSettings(nil).CreateWindow() + ebs.DefaultListingLag
	tests := []struct {
		name      string
		locations []string
		snap      types.Snapshot
		unread    bool
		noCopy    bool
		elapsed   time.Duration
		want      want
	}{
		{name: "the backup names this plugin's location with a copy region", locations: []string{"aws-default", "async"}, snap: upstream, elapsed: ownListed,
			want: want{completed: true, errTxt: "snapshot snap-0000000a of volume " + mockec2.VolA + " was taken through VolumeSnapshotLocation aws-default, not through this plugin's location async"}},
		{name: "while this plugin's own snapshot may not be listed yet: the operation shows the snapshot and waits, saying why", locations: []string{"aws-default", "async"}, snap: upstream, elapsed: ownListed - time.Second,
			want: want{desc: "snapshot snap-0000000a in us-east-1: 100%; waiting until 2026-11-30T03:12:00Z for EC2 to list this plugin's snapshot of volume " + mockec2.VolA + ", if location async took one"}},
		{name: "the backup names no location of this plugin", locations: []string{"aws-default"}, snap: upstream,
			want: want{completed: true, n: 100, total: 100, desc: "snapshot snap-0000000a in us-east-1 completed"}},
		{name: "the backup names this plugin's location asking for no copy: followed once this plugin's own would be listed", locations: []string{"aws-default", "async"}, snap: upstream, noCopy: true, elapsed: ownListed,
			want: want{completed: true, n: 100, total: 100, desc: "snapshot snap-0000000a in us-east-1 completed"}},
		{name: "a volume this plugin restored, snapshotted by the upstream plugin, which copies its restore token", locations: []string{"aws-default", "async"}, snap: restored, elapsed: ownListed,
			want: want{completed: true, errTxt: "was taken through VolumeSnapshotLocation aws-default, not through this plugin's location async"}},
		{name: "this plugin's snapshot", locations: []string{"aws-default", "async"}, snap: own,
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2"}},
		{name: "an earlier release's snapshot, without create token or recorded mark", locations: []string{"aws-default", "async"}, snap: earlier,
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2"}},
		// The Kubernetes API refuses the plugin: the backup's locations cannot be read.
		{name: "the backup's locations unreadable: the operation shows the snapshot and waits, saying why", locations: []string{"aws-default", "async"}, snap: upstream, unread: true, elapsed: time.Minute,
			want: want{desc: "snapshot snap-0000000a in us-east-1: 100%; waiting until 2026-11-30T03:15:00Z for the Kubernetes API: snapshot snap-0000000a of volume " + mockec2.VolA + " was not taken by this plugin"}},
		{name: "the backup's locations unreadable past the grace: the operation fails naming the cause and the fix", locations: []string{"aws-default", "async"}, snap: upstream, unread: true, elapsed: 15 * time.Minute,
			want: want{completed: true, errTxt: "the Kubernetes API refuses to show the backup's VolumeSnapshotLocations, so whether the backup's location of this plugin asks for a copy, which this snapshot would not have, cannot be told (forbidden): let Velero's service account get and list volumesnapshotlocations"}},
		{name: "the backup's locations unreadable: this plugin's snapshot is followed as ever", locations: []string{"aws-default", "async"}, snap: own, unread: true, elapsed: time.Minute,
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(tt.snap)
			serveTracker(f, nil)
			loc := mockec2.PlacesOf{{Location: "async", Clients: f.Clients(), Config: map[string]string{model.ConfigRegion: mockec2.SrcRegion, model.ConfigCopyToRegion: mockec2.DstRegion}}}
			if tt.noCopy {
				loc[0].Config = map[string]string{model.ConfigRegion: mockec2.SrcRegion}
			}
			if tt.unread {
				loc = mockec2.PlacesOf{{Clients: f.Clients(), Note: "forbidden", Unread: true}}
			}
			f.Clk.Step(tt.elapsed)
			backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 1)
			backup.Spec.VolumeSnapshotLocations = tt.locations
			p, err := newTracker(f, ebs.WithLocator(loc)).Progress(context.Background(), pvOp(mockec2.VolA, "pv-1"), backup)
			checkProgress(t, p, err, tt.want)
			if tt.want.errTxt != "" && !tt.unread && !strings.Contains(p.Err, "no copy to us-west-2") {
				t.Errorf("error %q does not say which copy is missing", p.Err)
			}
			// Naming this plugin's location on the backup does not help: Velero adds a
			// provider's only location to every backup. The fix moves or deletes the other one.
			if fix := "move that location (the upstream AWS plugin's: provider aws or velero.io/aws) to provider velero-async.io/aws, or delete it (`check` names it; README, An existing Velero install)"; tt.want.errTxt != "" && !tt.unread && !strings.HasSuffix(p.Err, fix) {
				t.Errorf("error %q does not end with the fix %q", p.Err, fix)
			}
		})
	}
}

// A snapshot whose CreateSnapshot returned an error to Velero (it took effect, but its answer
// was lost and EC2 could not be asked for the create patience, or the plugin was killed mid-call)
// stays marked pending: Velero records no snapshot and its deletion skips it. It is never
// copied, and the operation Execute opened for its PV deletes it once the create window has
// passed, failing with the reason.
func TestASnapshotVeleroRecordedAsFailedIsDeletedNotCopied(t *testing.T) {
	tests := []struct {
		name               string
		elapsed            time.Duration
		attempted, records int
		want               want
		wantGone           []string
	}{
		{name: "while its CreateSnapshot may be under way", elapsed: time.Minute, attempted: 2, records: 1,
			want: want{desc: "snapshot snap-0000000a in us-east-1: 100%; waiting for CreateSnapshot to return it to Velero"}},
		{name: "Velero recorded it as failed", elapsed: 12 * time.Minute, attempted: 2, records: 1, wantGone: []string{"snap-0000000a"},
			want: want{completed: true, errTxt: "CreateSnapshot of volume " + mockec2.VolA + " returned an error to Velero, which recorded no snapshot of it (1 of 2 attempted native snapshots failed); snapshot snap-0000000a it made all the same is deleted"}},
		{name: "Velero records no failure", elapsed: 12 * time.Minute, attempted: 2, records: 2,
			want: want{completed: true, errTxt: "neither copied nor deleted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1", model.TagCreateToken, "t1", model.TagRecorded, model.RecordedPending)),
				mockec2.Snapshot("snap-0000000b", volN(2), types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-2", model.TagCreateToken, "t2", model.TagRecorded, model.RecordedReturned)))
			m := serveTracker(f, nil)
			backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, tt.records)
			backup.Status.VolumeSnapshotsAttempted = tt.attempted
			f.Clk.Step(tt.elapsed)
			tr := newTracker(f)
			p, err := tr.Progress(context.Background(), pvOp(volN(2), "pv-2"), backup)
			checkProgress(t, p, err, want{n: 100, total: 200, desc: "copy snap-c0000001"})
			p, err = tr.Progress(context.Background(), pvOp(mockec2.VolA, "pv-1"), backup)
			checkProgress(t, p, err, tt.want)
			for _, in := range m.copies {
				if *in.SourceSnapshotId == "snap-0000000a" {
					t.Errorf("the snapshot Velero did not record was copied")
				}
			}
			if fmt.Sprint(f.Src().Deleted) != fmt.Sprint(tt.wantGone) && len(f.Src().Deleted)+len(tt.wantGone) > 0 {
				t.Errorf("deleted %v, want %v", f.Src().Deleted, tt.wantGone)
			}
		})
	}
}

// Velero calls Cancel once at the item-operation timeout; an operation whose snapshot Velero
// recorded as failed, cancelled before any Progress deleted it, deletes it then: nothing else
// would.
func TestCancelDeletesASnapshotVeleroRecordedAsFailed(t *testing.T) {
	tests := []struct {
		name               string
		attempted, records int
		wantGone           []string
	}{
		{name: "Velero recorded it as failed", attempted: 2, records: 1, wantGone: []string{"snap-0000000a"}},
		{name: "Velero records no failure", attempted: 2, records: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagPV, "pv-1", model.TagCreateToken, "t1", model.TagRecorded, model.RecordedPending)))
			serveTracker(f, nil)
			backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, tt.records)
			backup.Status.VolumeSnapshotsAttempted = tt.attempted
			f.Clk.Step(4 * time.Hour)
			if err := newTracker(f).Cancel(context.Background(), pvOp(mockec2.VolA, "pv-1"), backup); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			if fmt.Sprint(f.Src().Deleted) != fmt.Sprint(tt.wantGone) && len(f.Src().Deleted)+len(tt.wantGone) > 0 {
				t.Errorf("deleted %v, want %v", f.Src().Deleted, tt.wantGone)
			}
		})
	}
}

// When Velero cannot start the volume snapshotter (the location's config is refused), it
// attempts no snapshot: each PV's operation fails naming the location's error, not "Velero
// attempted none".
func TestAnOperationOfALocationWithABadConfigNamesItsError(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]string
		want   want
	}{
		{name: "a bad config is named", config: map[string]string{model.ConfigRegion: mockec2.SrcRegion, model.ConfigCopyToRegion: mockec2.SrcRegion},
			want: want{completed: true, errTxt: "Velero could not use the backup's VolumeSnapshotLocation, whose config the plugin refuses (location async: "}},
		{name: "a good config: Velero attempted none", config: map[string]string{model.ConfigRegion: mockec2.SrcRegion},
			want: want{completed: true, desc: "Velero attempted none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			serveTracker(f, nil)
			loc := mockec2.PlacesOf{{Location: "async", Clients: f.Clients(), Config: tt.config}}
			p, err := newTracker(f, ebs.WithLocator(loc)).Progress(context.Background(), opID(mockec2.VolA), backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 0))
			checkProgress(t, p, err, tt.want)
		})
	}
}
