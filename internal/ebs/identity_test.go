package ebs

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

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// pvOp is the v2 operation of volume vol's PV pv, opened at t0.
func pvOp(vol, pv string) string {
	return Operation{Region: srcRegion, VolumeID: vol, Issued: t0, PV: pv}.String()
}

// withoutUID removes the backup-UID tag: a snapshot whose CreateSnapshot did not learn it.
func withoutUID() snapOpt { return withTags(TagBackupUID, "") }

// Each operation follows exactly the snapshot Velero recorded, whatever else in the account is
// tagged with the backup's name.
func TestProgressFollowsTheRecordedSnapshot(t *testing.T) {
	started := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 1)
	started.Status.StartTimestamp = &metav1.Time{Time: t0}
	old := snapshot("snap-0000001d", volA, types.SnapshotStateCompleted, toDest(TagPV, "pv-1"), startedAt(-24*time.Hour), withTags(TagBackupUID, "uid-of-an-earlier-backup"))
	oldCopy := copyOfSnap("snap-0000001c", old, types.SnapshotStateCompleted)
	tests := []struct {
		name       string
		op         string
		backup     *velerov1.Backup
		east, west []types.Snapshot
		want       want
		wantCopies []string // sources copied
		wantGone   []string // snapshots deleted in the source region
	}{
		{name: "an earlier backup of the same name, with its copy", op: pvOp(volA, "pv-1"), backup: started,
			east: []types.Snapshot{old, snapshot("snap-0000000a", volA, types.SnapshotStatePending, toDest(TagPV, "pv-1"), progress("40%"))},
			west: []types.Snapshot{oldCopy},
			want: want{n: 40, total: 200, desc: "snapshot snap-0000000a in us-east-1: 40%"}},
		{name: "an earlier backup of the same name, neither tagged with a UID", op: pvOp(volA, "pv-1"), backup: started,
			east: []types.Snapshot{
				snapshot("snap-0000001d", volA, types.SnapshotStateCompleted, toDest(TagPV, "pv-1"), startedAt(-10*time.Minute), withoutUID()),
				snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest(TagPV, "pv-1"), startedAt(2*time.Second), withoutUID()),
			},
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2: 0%"}, wantCopies: []string{"snap-0000000a"}},
		{name: "another install's backup of the same name at the same time", op: pvOp(volA, "pv-1"), backup: started,
			east: []types.Snapshot{
				snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest(TagPV, "pv-1")),
				snapshot("snap-0000000f", volN(7), types.SnapshotStateCompleted, toDest(TagPV, "pv-1"), withTags(TagBackupUID, "uid-of-another-cluster")),
			},
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2: 0%"}, wantCopies: []string{"snap-0000000a"}},
		{name: "two PVs on one EBS volume", op: pvOp(volA, "pv-2"), backup: started,
			east: []types.Snapshot{
				snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, withTags(TagPV, "pv-1")),
				snapshot("snap-0000000b", volA, types.SnapshotStatePending, withTags(TagPV, "pv-2"), progress("10%")),
			},
			want: want{n: 10, total: 100, desc: "snapshot snap-0000000b in us-east-1: 10%"}},
		{name: "another snapshot of the same CreateSnapshot call is deleted", op: pvOp(volA, "pv-1"), backup: started,
			east: []types.Snapshot{
				snapshot("snap-0000000e", volA, types.SnapshotStatePending, toDest(TagPV, "pv-1", TagCreateToken, "t1")),
				snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest(TagPV, "pv-1", TagCreateToken, "t1", TagRecorded, "true"), startedAt(time.Minute)),
			},
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2: 0%"}, wantCopies: []string{"snap-0000000a"}, wantGone: []string{"snap-0000000e"}},
		{name: "an operation of the previous release (v1 ID, no PV)", op: opID(volA), backup: started,
			east: []types.Snapshot{snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, withTags(TagPV, "pv-1"), withoutUID())},
			want: want{completed: true, n: 100, total: 100, desc: "snapshot snap-0000000a in us-east-1 completed"}},
		// Before create tokens existed: neither snapshot carries one, so neither is the other's stray.
		{name: "two static PVs on one EBS volume across the upgrade: the other PV's snapshot is kept", op: opID(volA), backup: started,
			east: []types.Snapshot{
				snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, withTags(TagPV, "pv-1"), withoutUID(), startedAt(-30*time.Second)),
				snapshot("snap-0000000b", volA, types.SnapshotStateCompleted, withTags(TagPV, "pv-2"), withoutUID(), startedAt(2*time.Second)),
			},
			want: want{completed: true, n: 100, total: 100, desc: "snapshot snap-0000000b in us-east-1 completed"}},
		{name: "an operation of the previous release ignores an older backup's snapshot", op: opID(volA), backup: started,
			east: []types.Snapshot{snapshot("snap-0000001d", volA, types.SnapshotStateCompleted, startedAt(-time.Hour), withoutUID())},
			want: want{desc: "waiting for EC2 to list the snapshot"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.src().add(tt.east...)
			f.dst().add(tt.west...)
			m := f.serveTracker(nil)
			p, err := newTracker(f, ).Progress(context.Background(), tt.op, tt.backup)
			checkProgress(t, p, err, tt.want)
			var copied []string
			for _, in := range m.copies {
				copied = append(copied, *in.SourceSnapshotId)
			}
			if fmt.Sprint(copied) != fmt.Sprint(tt.wantCopies) && len(copied)+len(tt.wantCopies) > 0 {
				t.Errorf("copied %v, want %v", copied, tt.wantCopies)
			}
			if fmt.Sprint(f.src().deleted) != fmt.Sprint(tt.wantGone) && len(f.src().deleted)+len(tt.wantGone) > 0 {
				t.Errorf("deleted %v, want %v", f.src().deleted, tt.wantGone)
			}
		})
	}
}

// One source EC2 will not tag (another tool filled its 50 tags) fails only its own operation:
// the other 29 are marked and copied in the same reconcile.
func TestProgressOneUntaggableSourceHoldsUpNoOther(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 30; i++ {
		f.src().add(snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, toDest(), startedAt(time.Duration(i)*time.Second)))
	}
	f.tagRefusals = map[string]error{"snap-00000003": httpErr(400, "TagLimitExceeded")}
	m := f.serveTracker(nil)
	tr := newTracker(f, )
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
	f := newFixture(t)
	a := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest())
	b := snapshot("snap-0000000b", volN(2), types.SnapshotStateCompleted, toDest(), startedAt(time.Second))
	f.src().add(a, b)
	f.dst().add(copyOfSnap("snap-0000000c", a, types.SnapshotStatePending))
	m := f.serveTracker(nil)
	backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 2)
	if err := newTracker(f, ).Cancel(context.Background(), opID(volA), backup); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.dst().deleted) != "[snap-0000000c]" {
		t.Fatalf("deleted %v in %s, want the pending copy", f.dst().deleted, dstRegion)
	}
	f.clk.Step(time.Hour) // far beyond the listing lag
	if _, err := newTracker(f, ).Progress(context.Background(), opID(volN(2)), backup); err != nil {
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
			f := newFixture(t)
			f.src().add(snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest()))
			if seen == "in the description" {
				f.src().snaps[0].Tags = append(f.src().snaps[0].Tags, tagOf(TagDeletionRequestedAt, t0.Format(time.RFC3339)))
			} else {
				f.src().beforeDescribe = func(n int) {
					if n == 1 { // the deletion marks the source between the tracker's two reads
						setTag(&f.src().snaps[0], TagDeletionRequestedAt, t0.Format(time.RFC3339))
					}
				}
			}
			m := f.serveTracker(nil)
			p, err := newTracker(f, ).Progress(context.Background(), opID(volA), backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 1))
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
			f := newFixture(t)
			f.src().add(snapshot("snap-0000000a", volA, types.SnapshotStateCompleted))
			f.src().failNext(fmt.Errorf("operation error EC2: DescribeSnapshots, get identity: %w", &ec2api.CredentialsError{Err: httpErr(400, code)}))
			f.serveTracker(nil)
			p, err := newTracker(f, ).Progress(context.Background(), opID(volA), inProgress)
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
	f := newFixture(t)
	for i := 0; i < 20; i++ {
		f.src().add(snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, toDest(), startedAt(time.Duration(i)*time.Second)))
	}
	f.copyDelay = time.Second // each CopySnapshot waits a second for EC2's pace
	m := f.serveTracker(nil)
	tr := newTracker(f, WithCacheTTL(time.Minute))
	backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 20)
	start := f.clk.Now()
	for i := 0; i < 20; i++ {
		if _, err := tr.Progress(context.Background(), opID(volN(i)), backup); err != nil {
			t.Fatal(err)
		}
	}
	if spent := f.clk.Since(start); spent > fillBudget+time.Second {
		t.Errorf("one reconcile spent %s in CopySnapshot, want at most the %s budget and the request in flight", spent, fillBudget)
	}
	if n := m.count("CopySnapshot"); n != int(fillBudget/time.Second) {
		t.Errorf("%d copies started, want %d", n, int(fillBudget/time.Second))
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
	f := newFixture(t)
	a := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest())
	b := snapshot("snap-0000000b", volN(2), types.SnapshotStateCompleted, toDest(), startedAt(time.Hour))
	f.src().add(a, b)
	f.tagRefusals = map[string]error{"snap-0000000a": httpErr(503, ec2api.CodeRequestLimitExceeded)}
	m := f.serveTracker(nil)
	backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 2)
	backup.Spec.ItemOperationTimeout = metav1.Duration{Duration: 4 * time.Hour}
	f.clk.Step(4*time.Hour + 2*time.Minute) // Velero's timeout of the first operation
	err := newTracker(f, ).Cancel(context.Background(), opID(volA), backup)
	wantErr(t, err, "marking snapshot snap-0000000a as cancelled")
	p, err := newTracker(f, ).Progress(context.Background(), opID(volN(2)), backup)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "copy snap-c0000001"})
	for _, in := range m.copies {
		if *in.SourceSnapshotId == "snap-0000000a" {
			t.Errorf("the cancelled operation's source was copied")
		}
	}
	p, err = newTracker(f, ).Progress(context.Background(), opID(volA), backup)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "Velero's item-operation timeout has passed for snapshot snap-0000000a"})
}

// Many operations time out in one reconcile: each Cancel marks its source, and pending copies
// are deleted only while the reconcile's time for EC2 requests lasts; the rest are left to
// complete (the backup's deletion deletes them) and Cancel says so.
func TestCancelsOfOneReconcileStayWithinItsTimeBudget(t *testing.T) {
	f := newFixture(t)
	const n = 10
	for i := 0; i < n; i++ {
		s := snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, toDest())
		f.src().add(s)
		f.dst().add(copyOfSnap(fmt.Sprintf("snap-c%07x", i), s, types.SnapshotStatePending))
	}
	m := f.serveTracker(nil)
	f.dst().onDelete = func() { f.clk.Step(500 * time.Millisecond) }
	tr := newTracker(f, )
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
	if d := len(f.dst().deleted); d+left != n || d > int(fillBudget/(500*time.Millisecond))+1 {
		t.Errorf("%d pending copies deleted, %d left: want deletions only within the %s budget", d, left, fillBudget)
	}
}

// Cancel of an operation whose vault copy is locked while still pending: the share is removed,
// the locked copy is left to complete (EC2 would refuse to delete it, and it is the backup's),
// and Cancel reports no error.
func TestCancelKeepsALockedPendingVaultCopy(t *testing.T) {
	const vaultAcct = "222222222222"
	f := newFixture(t)
	src := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted,
		withTags(TagVaultAccount, vaultAcct, TagVaultRegion, dstRegion, TagVaultLock, "governance:1", TagVaultSharedAt, t0.Format(time.RFC3339)))
	cp := copyOfSnap("snap-0000000b", src, types.SnapshotStatePending, progress("40%"))
	setTag(&cp, TagVaultLock, "governance:1")
	cp.OwnerId = aws.String(vaultAcct)
	f.src().add(src)
	f.dst().add(cp)
	f.dst().locks["snap-0000000b"] = types.LockStateGovernance
	f.serveTracker(nil)
	var unshared []string
	f.src().m.EXPECT().ModifySnapshotAttribute(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.ModifySnapshotAttributeInput, _ ...func(*ec2.Options)) (*ec2.ModifySnapshotAttributeOutput, error) {
			if in.CreateVolumePermission.Remove != nil {
				unshared = append(unshared, aws.ToString(in.SnapshotId))
			}
			return &ec2.ModifySnapshotAttributeOutput{}, nil
		})
	tr := newTracker(f, WithVaultClients(f.clients()))
	if err := tr.Cancel(context.Background(), opID(volA), inProgress); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if len(f.dst().deleted)+len(f.src().deleted) != 0 {
		t.Errorf("deleted %v and %v; the locked vault copy and the source stay", f.dst().deleted, f.src().deleted)
	}
	if fmt.Sprint(unshared) != "[snap-0000000a]" {
		t.Errorf("shares removed %v, want the source's", unshared)
	}
}

// placesOf is a Locator finding every operation in its places.
type placesOf []Place

func (l placesOf) BackupPlaces(context.Context, *velerov1.Backup, string) ([]Place, error) {
	return l, nil
}

func (l placesOf) RestorePlaces(context.Context, *velerov1.Restore, string) ([]Place, error) {
	return l, nil
}

// An EBS volume snapshotted through another provider's location (the upstream plugin's) in a
// backup that names this plugin's location with copyToRegion: the operation fails naming the
// location that took the snapshot and why no copy exists. A backup that names no location of
// this plugin is left alone.
func TestAVolumeSnapshottedThroughAnotherProvidersLocationHasNoCopy(t *testing.T) {
	upstream := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, withoutUID(), withTags(TagPV, "pv-1"))
	own := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest(TagPV, "pv-1", TagCreateToken, "t", TagRecorded, recordedReturned))
	earlier := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest(TagPV, "pv-1", TagVolumeType, "gp3"))
	restored := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, withoutUID(), withTags(TagPV, "pv-1", TagRestoreToken, "r"))
	tests := []struct {
		name      string
		locations []string
		snap      types.Snapshot
		want      want
	}{
		{name: "the backup names this plugin's location with a copy region", locations: []string{"aws-default", "async"}, snap: upstream,
			want: want{completed: true, errTxt: "snapshot snap-0000000a of volume " + volA + " was taken through VolumeSnapshotLocation aws-default, not through this plugin's location async"}},
		{name: "the backup names no location of this plugin", locations: []string{"aws-default"}, snap: upstream,
			want: want{completed: true, n: 100, total: 100, desc: "snapshot snap-0000000a in us-east-1 completed"}},
		{name: "a volume this plugin restored, snapshotted by the upstream plugin, which copies its restore token", locations: []string{"aws-default", "async"}, snap: restored,
			want: want{completed: true, errTxt: "was taken through VolumeSnapshotLocation aws-default, not through this plugin's location async"}},
		{name: "this plugin's snapshot", locations: []string{"aws-default", "async"}, snap: own,
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2"}},
		{name: "an earlier release's snapshot, without create token or recorded mark", locations: []string{"aws-default", "async"}, snap: earlier,
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.src().add(tt.snap)
			f.serveTracker(nil)
			loc := placesOf{{Location: "async", Clients: f.clients(), Config: map[string]string{ConfigRegion: srcRegion, ConfigCopyToRegion: dstRegion}}}
			backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 1)
			backup.Spec.VolumeSnapshotLocations = tt.locations
			p, err := newTracker(f, WithLocator(loc)).Progress(context.Background(), pvOp(volA, "pv-1"), backup)
			checkProgress(t, p, err, tt.want)
			if tt.want.errTxt != "" && !strings.Contains(p.Err, "no copy to us-west-2") {
				t.Errorf("error %q does not say which copy is missing", p.Err)
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
			want: want{completed: true, errTxt: "CreateSnapshot of volume " + volA + " returned an error to Velero, which recorded no snapshot of it (1 of 2 attempted native snapshots failed); snapshot snap-0000000a it made all the same is deleted"}},
		{name: "Velero records no failure", elapsed: 12 * time.Minute, attempted: 2, records: 2,
			want: want{completed: true, errTxt: "neither copied nor deleted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.src().add(
				snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest(TagPV, "pv-1", TagCreateToken, "t1", TagRecorded, recordedPending)),
				snapshot("snap-0000000b", volN(2), types.SnapshotStateCompleted, toDest(TagPV, "pv-2", TagCreateToken, "t2", TagRecorded, recordedReturned)))
			m := f.serveTracker(nil)
			backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, tt.records)
			backup.Status.VolumeSnapshotsAttempted = tt.attempted
			f.clk.Step(tt.elapsed)
			tr := newTracker(f, )
			p, err := tr.Progress(context.Background(), pvOp(volN(2), "pv-2"), backup)
			checkProgress(t, p, err, want{n: 100, total: 200, desc: "copy snap-c0000001"})
			p, err = tr.Progress(context.Background(), pvOp(volA, "pv-1"), backup)
			checkProgress(t, p, err, tt.want)
			for _, in := range m.copies {
				if *in.SourceSnapshotId == "snap-0000000a" {
					t.Errorf("the snapshot Velero did not record was copied")
				}
			}
			if fmt.Sprint(f.src().deleted) != fmt.Sprint(tt.wantGone) && len(f.src().deleted)+len(tt.wantGone) > 0 {
				t.Errorf("deleted %v, want %v", f.src().deleted, tt.wantGone)
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
			f := newFixture(t)
			f.src().add(snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest(TagPV, "pv-1", TagCreateToken, "t1", TagRecorded, recordedPending)))
			f.serveTracker(nil)
			backup := backupIn(velerov1.BackupPhaseWaitingForPluginOperations, tt.records)
			backup.Status.VolumeSnapshotsAttempted = tt.attempted
			f.clk.Step(4 * time.Hour)
			if err := newTracker(f, ).Cancel(context.Background(), pvOp(volA, "pv-1"), backup); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			if fmt.Sprint(f.src().deleted) != fmt.Sprint(tt.wantGone) && len(f.src().deleted)+len(tt.wantGone) > 0 {
				t.Errorf("deleted %v, want %v", f.src().deleted, tt.wantGone)
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
		{name: "a bad config is named", config: map[string]string{ConfigRegion: srcRegion, ConfigCopyToRegion: srcRegion},
			want: want{completed: true, errTxt: "Velero could not use the backup's VolumeSnapshotLocation, whose config the plugin refuses (location async: "}},
		{name: "a good config: Velero attempted none", config: map[string]string{ConfigRegion: srcRegion},
			want: want{completed: true, desc: "Velero attempted none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.serveTracker(nil)
			loc := placesOf{{Location: "async", Clients: f.clients(), Config: tt.config}}
			p, err := newTracker(f, WithLocator(loc)).Progress(context.Background(), opID(volA), backupIn(velerov1.BackupPhaseWaitingForPluginOperations, 0))
			checkProgress(t, p, err, tt.want)
		})
	}
}
