package tracking

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// mutations records the mutating calls a Tracker makes, in order.
type mutations struct {
	mu      sync.Mutex
	log     []string // "CreateTags snap-…", "CopySnapshot snap-…", "DeleteTags snap-…", "DeleteSnapshot region snap-…"
	copies  []*ec2.CopySnapshotInput
	created []string // IDs of the copies made
}

func (m *mutations) add(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

func (m *mutations) count(prefix string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, l := range m.log {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// serveTracker serves what a Tracker calls: DescribeSnapshots in both regions; CreateTags and
// DeleteTags on sources (applied to them); CopySnapshot into dstRegion, answered per source ID
// from copyAnswers in turn (nil or none: a pending copy snap-c000000N appears in dstRegion).
func serveTracker(f *mockec2.Fixture, copyAnswers map[string][]error) *mutations {
	m := &mutations{}
	src, dst := f.Src(), f.Dst()
	src.ServeDescribe()
	dst.ServeDescribe()
	retag := func(ids []string, tags []types.Tag, remove bool) {
		src.Mu.Lock()
		defer src.Mu.Unlock()
		for i := range src.Snaps {
			if slices.Contains(ids, aws.ToString(src.Snaps[i].SnapshotId)) {
				for _, t := range tags {
					v := aws.ToString(t.Value)
					if remove {
						v = ""
					}
					model.SetTag(&src.Snaps[i], aws.ToString(t.Key), v)
				}
			}
		}
	}
	src.M.EXPECT().CreateTags(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
			m.add("CreateTags %s %s", strings.Join(in.Resources, ","), model.TagMap(in.Tags))
			for _, id := range in.Resources {
				if err := f.TagRefusals[id]; err != nil {
					return nil, err // EC2 refuses the whole request
				}
			}
			retag(in.Resources, in.Tags, false)
			return &ec2.CreateTagsOutput{}, nil
		})
	src.M.EXPECT().DeleteTags(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.DeleteTagsInput, _ ...func(*ec2.Options)) (*ec2.DeleteTagsOutput, error) {
			m.add("DeleteTags %s", strings.Join(in.Resources, ","))
			retag(in.Resources, in.Tags, true)
			return &ec2.DeleteTagsOutput{}, nil
		})
	dst.M.EXPECT().CopySnapshot(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, in *ec2.CopySnapshotInput, _ ...func(*ec2.Options)) (*ec2.CopySnapshotOutput, error) {
			id := aws.ToString(in.SourceSnapshotId)
			m.add("CopySnapshot %s", id)
			f.Clk.Step(f.CopyDelay)
			m.mu.Lock()
			m.copies = append(m.copies, in)
			var err error
			if a := copyAnswers[id]; len(a) > 0 {
				err, copyAnswers[id] = a[0], a[1:]
			}
			if err != nil {
				m.mu.Unlock()
				return nil, err
			}
			cid := fmt.Sprintf("snap-c%07x", len(m.created)+1)
			m.created = append(m.created, cid)
			m.mu.Unlock()
			c := mockec2.Snapshot(cid, "vol-ffffffff", types.SnapshotStatePending, mockec2.Progress("0%"), func(s *types.Snapshot) {
				s.StartTime = aws.Time(f.Clk.Now())
				s.Tags = in.TagSpecifications[0].Tags
			})
			dst.Add(c)
			return &ec2.CopySnapshotOutput{SnapshotId: aws.String(cid)}, nil
		})
	for _, r := range f.Regions {
		r.ServeDelete()
	}
	return m
}

func opID(vol string) string {
	return model.Operation{Region: mockec2.SrcRegion, VolumeID: vol, Issued: mockec2.T0}.String()
}

func volN(i int) string { return fmt.Sprintf("vol-%08x", i) }

func backupIn(phase velerov1.BackupPhase, snapshotsCompleted int) *velerov1.Backup {
	b := &velerov1.Backup{}
	b.Name = mockec2.BackupName
	b.UID = mockec2.BackupUID
	b.Status.Phase = phase
	b.Status.VolumeSnapshotsCompleted = snapshotsCompleted
	return b
}

// attempted sets how many native snapshots Velero attempted for b.
func attempted(b *velerov1.Backup, n int) *velerov1.Backup {
	b.Status.VolumeSnapshotsAttempted = n
	return b
}

var inProgress = backupIn(velerov1.BackupPhaseInProgress, 0)

// want describes an expected OperationProgress; desc and errText are substrings.
type want struct {
	completed    bool
	n, total     int64
	desc, errTxt string
}

func checkProgress(t *testing.T, p velero.OperationProgress, err error, w want) {
	t.Helper()
	if err != nil {
		t.Fatalf("Progress returned an error (Velero would fail the operation): %v", err)
	}
	if p.Completed != w.completed || p.NCompleted != w.n || p.NTotal != w.total || p.OperationUnits != "%" {
		t.Errorf("completed=%v %d/%d %s; want completed=%v %d/%d %%", p.Completed, p.NCompleted, p.NTotal, p.OperationUnits, w.completed, w.n, w.total)
	}
	if !strings.Contains(p.Description, w.desc) {
		t.Errorf("description %q does not contain %q", p.Description, w.desc)
	}
	switch {
	case w.errTxt == "" && p.Err != "":
		t.Errorf("Err %q, want none", p.Err)
	case !strings.Contains(p.Err, w.errTxt):
		t.Errorf("Err %q, want one containing %q", p.Err, w.errTxt)
	}
	if p.Updated.IsZero() {
		t.Errorf("Updated not set")
	}
}

func TestProgress(t *testing.T) {
	intent := mockec2.ToDest(model.TagCopyKMSKeyID, "alias/dr", model.TagCopyCompletionMinutes, "60")
	src := func(state types.SnapshotState, opts ...mockec2.SnapOpt) types.Snapshot {
		return mockec2.Snapshot("snap-0000000a", mockec2.VolA, state, opts...)
	}
	done := src(types.SnapshotStateCompleted, intent)
	recently := mockec2.T0.Add(-10 * time.Second).Format(time.RFC3339)
	tests := []struct {
		name        string
		east, west  []types.Snapshot
		eastFails   []error // DescribeSnapshots answers in the source region
		westFails   []error
		copyAnswers []error
		want        want
		wantLog     []string // mutating calls, in order
		start       time.Duration
		check       func(t *testing.T, f *mockec2.Fixture, m *mutations)
	}{
		{name: "source pending", east: []types.Snapshot{src(types.SnapshotStatePending, intent, mockec2.Progress("45%"))},
			want: want{n: 45, total: 200, desc: "snapshot snap-0000000a in us-east-1: 45%"}},
		{name: "source pending, no copy wanted", east: []types.Snapshot{src(types.SnapshotStatePending, mockec2.Progress("7%"))},
			want: want{n: 7, total: 100, desc: "snapshot snap-0000000a in us-east-1: 7%"}},
		{name: "completed without copy intent", east: []types.Snapshot{src(types.SnapshotStateCompleted)},
			want: want{completed: true, n: 100, total: 100, desc: "snap-0000000a in us-east-1 completed"}},
		{name: "completed: mark, then copy", east: []types.Snapshot{done},
			want: want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2: 0%"},
			wantLog: []string{
				"CreateTags snap-0000000a map[" + model.TagCopyRequestedAt + ":" + mockec2.T0.Format(time.RFC3339) + "]",
				"CopySnapshot snap-0000000a",
			},
			check: func(t *testing.T, _ *mockec2.Fixture, m *mutations) {
				in := m.copies[0]
				if aws.ToString(in.SourceRegion) != mockec2.SrcRegion || aws.ToString(in.KmsKeyId) != "alias/dr" || !aws.ToBool(in.Encrypted) ||
					aws.ToInt32(in.CompletionDurationMinutes) != 60 {
					t.Errorf("CopySnapshot %+v", in)
				}
				if got, want := fmt.Sprint(model.TagMap(in.TagSpecifications[0].Tags)), fmt.Sprint(model.TagMap(model.CopyTags(done, mockec2.SrcRegion))); got != want {
					t.Errorf("copy tags %s, want %s", got, want)
				}
			}},
		{name: "copy without KMS key or duration", east: []types.Snapshot{src(types.SnapshotStateCompleted, mockec2.ToDest())},
			want: want{n: 100, total: 200, desc: "copy snap-c0000001"}, wantLog: []string{"CreateTags", "CopySnapshot"},
			check: func(t *testing.T, _ *mockec2.Fixture, m *mutations) {
				if in := m.copies[0]; in.KmsKeyId != nil || in.Encrypted != nil || in.CompletionDurationMinutes != nil {
					t.Errorf("CopySnapshot %+v", in)
				}
			}},
		{name: "copy pending", east: []types.Snapshot{done}, west: []types.Snapshot{mockec2.CopyOfSnap("snap-0000000b", done, types.SnapshotStatePending, mockec2.Progress("30%"))},
			want: want{n: 130, total: 200, desc: "copy snap-0000000b to us-west-2: 30%"}},
		{name: "copy completed", east: []types.Snapshot{done}, west: []types.Snapshot{mockec2.CopyOfSnap("snap-0000000b", done, types.SnapshotStateCompleted)},
			want: want{completed: true, n: 200, total: 200, desc: "snap-0000000a in us-east-1 and its copy snap-0000000b in us-west-2 completed"}},
		{name: "a completed copy beats a failed one", east: []types.Snapshot{done}, west: []types.Snapshot{
			mockec2.CopyOfSnap("snap-0000000b", done, types.SnapshotStateError, mockec2.Message("boom")),
			mockec2.CopyOfSnap("snap-0000000c", done, types.SnapshotStateCompleted, mockec2.StartedAt(time.Hour)),
		}, want: want{completed: true, n: 200, total: 200, desc: "snap-0000000c"}},
		{name: "snapshot in error", east: []types.Snapshot{src(types.SnapshotStateError, intent, mockec2.Message("internal EBS failure"))},
			want: want{completed: true, total: 200, errTxt: "snapshot snap-0000000a of volume " + mockec2.VolA + " in us-east-1 failed: internal EBS failure"}},
		{name: "the recorded snapshot, not another of its CreateSnapshot call", east: []types.Snapshot{
			src(types.SnapshotStateError, mockec2.Message("x"), mockec2.WithTags(model.TagCreateToken, "t1")),
			mockec2.Snapshot("snap-0000000d", mockec2.VolA, types.SnapshotStateCompleted, mockec2.StartedAt(time.Minute), mockec2.WithTags(model.TagCreateToken, "t1", model.TagRecorded, "true")),
		}, want: want{completed: true, n: 100, total: 100, desc: "snap-0000000d"}, start: time.Minute},
		{name: "two snapshots, neither marked: wait", east: []types.Snapshot{
			src(types.SnapshotStateCompleted), mockec2.Snapshot("snap-0000000d", mockec2.VolA, types.SnapshotStateCompleted, mockec2.StartedAt(time.Minute)),
		}, want: want{desc: "has 2 snapshots for this backup (snap-0000000a, snap-0000000d); waiting to learn which one Velero recorded"}},
		{name: "copy in error", east: []types.Snapshot{done}, west: []types.Snapshot{mockec2.CopyOfSnap("snap-0000000b", done, types.SnapshotStateError, mockec2.Message("KMS key disabled"))},
			want: want{completed: true, n: 100, total: 200, errTxt: "copy snap-0000000b of snapshot snap-0000000a to us-west-2 failed: KMS key disabled"}},
		{name: "throttled", east: []types.Snapshot{done}, eastFails: []error{mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded)},
			want: want{desc: "waiting for EC2: describing the snapshots of backup nightly in us-east-1"}},
		{name: "5xx", east: []types.Snapshot{done}, eastFails: []error{mockec2.HTTPErr(500, "InternalError")}, want: want{desc: "InternalError"}},
		{name: "no answer", east: []types.Snapshot{done}, eastFails: []error{mockec2.NetErr()}, want: want{desc: "connection reset"}},
		{name: "copy region throttled", east: []types.Snapshot{done}, westFails: []error{mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded)},
			want: want{desc: "copies of backup nightly in us-west-2"}},
		{name: "copy refused", east: []types.Snapshot{done}, copyAnswers: []error{mockec2.HTTPErr(400, "InvalidParameterValue")},
			want:    want{completed: true, n: 100, total: 200, errTxt: "copy of snapshot snap-0000000a to us-west-2 refused"},
			wantLog: []string{"CreateTags snap-0000000a", "CopySnapshot snap-0000000a", "DeleteTags snap-0000000a", "CreateTags snap-0000000a map[" + model.TagCopyFailed},
			check: func(t *testing.T, f *mockec2.Fixture, _ *mutations) {
				if _, ok := mockec2.TagsOf(f.Src().Snaps[0])[model.TagCopyFailed]; !ok {
					t.Errorf("the refused source is not marked %s: a later reconcile would copy it again", model.TagCopyFailed)
				}
			}},
		{name: "a copy refused in an earlier process: no copy is started, the operation fails", east: []types.Snapshot{src(types.SnapshotStateCompleted, mockec2.ToDest(model.TagCopyFailed, mockec2.T0.Add(-time.Hour).Format(time.RFC3339)))},
			want: want{completed: true, n: 100, total: 200, errTxt: "a copy of it was refused"}},
		{name: "copy queued", east: []types.Snapshot{done}, copyAnswers: []error{mockec2.HTTPErr(400, ec2api.CodeResourceLimitExceeded)},
			want:    want{n: 100, total: 200, desc: "queued"},
			wantLog: []string{"CreateTags snap-0000000a", "CopySnapshot snap-0000000a", "DeleteTags snap-0000000a"},
			check: func(t *testing.T, f *mockec2.Fixture, _ *mutations) {
				if v, ok := mockec2.TagsOf(f.Src().Snaps[0])[model.TagCopyRequestedAt]; ok {
					t.Errorf("copy-requested-at mark %q left on the queued source", v)
				}
			}},
		{name: "copy throttled", east: []types.Snapshot{done}, copyAnswers: []error{mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded)},
			want:    want{n: 100, total: 200, desc: "queued"},
			wantLog: []string{"CreateTags snap-0000000a", "CopySnapshot snap-0000000a", "DeleteTags snap-0000000a"}},
		{name: "copy outcome unknown", east: []types.Snapshot{done}, copyAnswers: []error{mockec2.HTTPErr(500, "InternalError")},
			want:    want{n: 100, total: 200, desc: "copy of snap-0000000a to us-west-2 requested; waiting for EC2 to list it"},
			wantLog: []string{"CreateTags snap-0000000a", "CopySnapshot snap-0000000a"}},
		{name: "another process asked for the copy recently", east: []types.Snapshot{src(types.SnapshotStateCompleted, mockec2.ToDest(model.TagCopyRequestedAt, recently))},
			want: want{n: 100, total: 200, desc: "requested; waiting for EC2 to list it"}},
		{name: "another process asked long ago", east: []types.Snapshot{src(types.SnapshotStateCompleted, mockec2.ToDest(model.TagCopyRequestedAt, mockec2.T0.Add(-time.Hour).Format(time.RFC3339)))},
			want: want{n: 100, total: 200, desc: "copy snap-c0000001"}, wantLog: []string{"CreateTags snap-0000000a", "CopySnapshot snap-0000000a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(tt.east...)
			f.Dst().Add(tt.west...)
			f.Src().FailNext(tt.eastFails...)
			f.Dst().FailNext(tt.westFails...)
			m := serveTracker(f, map[string][]error{"snap-0000000a": tt.copyAnswers})
			p, err := newTracker(f).Progress(context.Background(), opID(mockec2.VolA), inProgress)
			checkProgress(t, p, err, tt.want)
			if tt.want.total != 0 && !p.Started.Equal(mockec2.T0.Add(tt.start)) {
				t.Errorf("Started %v, want the snapshot's start %v", p.Started, mockec2.T0.Add(tt.start))
			}
			if len(m.log) != len(tt.wantLog) {
				t.Fatalf("mutating calls %q, want %q", m.log, tt.wantLog)
			}
			for i, w := range tt.wantLog {
				if !strings.HasPrefix(m.log[i], w) {
					t.Errorf("call %d: %q, want %q", i, m.log[i], w)
				}
			}
			if tt.check != nil {
				tt.check(t, f, m)
			}
		})
	}
}

// NCompleted only moves forward as a snapshot and its copy advance.
func TestProgressPhases(t *testing.T) {
	f := mockec2.NewFixture(t)
	f.Src().Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStatePending, mockec2.ToDest(), mockec2.Progress("60%")))
	m := serveTracker(f, nil)
	tr := newTracker(f)
	step := func(mutate func()) velero.OperationProgress {
		f.Clk.Step(10 * time.Second) // the next reconcile
		mutate()
		p, err := tr.Progress(context.Background(), opID(mockec2.VolA), inProgress)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	setState := func(r *mockec2.Region, id string, state types.SnapshotState, pr string) func() {
		return func() {
			r.Mu.Lock()
			defer r.Mu.Unlock()
			for i := range r.Snaps {
				if aws.ToString(r.Snaps[i].SnapshotId) == id {
					r.Snaps[i].State, r.Snaps[i].Progress = state, aws.String(pr)
				}
			}
		}
	}
	var last int64
	for i, p := range []velero.OperationProgress{
		step(func() {}),
		step(setState(f.Src(), "snap-0000000a", types.SnapshotStateCompleted, "100%")),
		step(setState(f.Dst(), "snap-c0000001", types.SnapshotStatePending, "40%")),
		step(setState(f.Dst(), "snap-c0000001", types.SnapshotStateCompleted, "100%")),
	} {
		if p.NCompleted < last || p.NTotal != 200 {
			t.Errorf("step %d: %d/%d after %d", i, p.NCompleted, p.NTotal, last)
		}
		last = p.NCompleted
		if i == 3 && (!p.Completed || p.NCompleted != 200) {
			t.Errorf("not completed at the end: %+v", p)
		}
	}
	if n := m.count("CopySnapshot"); n != 1 {
		t.Errorf("%d copies, want 1", n)
	}
}

func TestProgressMalformedOperationID(t *testing.T) {
	f := mockec2.NewFixture(t) // no EC2 call expected
	for _, id := range []string{"", "ebs:v1:us-east-1:vol-x:1", "other:thing"} {
		if _, err := newTracker(f).Progress(context.Background(), id, inProgress); err == nil {
			t.Errorf("no error for operation ID %q", id)
		}
	}
}

// A definite refusal by EC2 (not throttling, 5xx or no answer) fails the operation, naming it.
func TestProgressDefiniteDescribeError(t *testing.T) {
	f := mockec2.NewFixture(t)
	f.Src().FailNext(mockec2.HTTPErr(403, "UnauthorizedOperation"))
	serveTracker(f, nil)
	p, err := newTracker(f).Progress(context.Background(), opID(mockec2.VolA), inProgress)
	checkProgress(t, p, err, want{completed: true, errTxt: "UnauthorizedOperation"})
}

// A volume's operation completes saying Velero took no native snapshot of it only on evidence of
// this backup's own: Velero attempted none, or EC2 lists as many distinct recorded sources of
// this backup (one per PV, carrying its UID) as Velero recorded: a snapshot of this volume
// Velero recorded would be one more, listed or not. Otherwise it waits, then fails.
func TestProgressNoSnapshotOnlyOnThisBackupsEvidence(t *testing.T) {
	other := mockec2.Snapshot("snap-0000000f", volN(9), types.SnapshotStateCompleted)
	waiting := velerov1.BackupPhaseWaitingForPluginOperations
	const (
		wait = iota
		done
		failed
	)
	tests := []struct {
		name    string
		listed  []types.Snapshot
		backup  *velerov1.Backup
		elapsed time.Duration
		outcome int
	}{
		// Core records its snapshots before it first asks for progress, during the backup run.
		{name: "first poll during the run, every completed snapshot listed", listed: []types.Snapshot{other}, backup: backupIn(velerov1.BackupPhaseInProgress, 1),
			elapsed: time.Minute, outcome: done},
		{name: "every completed snapshot listed", listed: []types.Snapshot{other}, backup: backupIn(waiting, 1), elapsed: time.Minute, outcome: done},
		{name: "partially failed, every completed snapshot listed", listed: []types.Snapshot{other},
			backup: backupIn(velerov1.BackupPhaseWaitingForPluginOperationsPartiallyFailed, 1), elapsed: time.Minute, outcome: done},
		// Velero polls right after the item phase: had it recorded a snapshot of this volume,
		// EC2 would list one fewer than it recorded until that one is listed.
		{name: "every completed snapshot listed, moments after the operation opened", listed: []types.Snapshot{other}, backup: backupIn(waiting, 1), elapsed: 10 * time.Second, outcome: done},
		{name: "the second snapshot of one CreateSnapshot call counts once", backup: backupIn(waiting, 2), elapsed: time.Minute, listed: []types.Snapshot{
			mockec2.Snapshot("snap-0000000f", volN(9), types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-9", model.TagCreateToken, "t9", model.TagRecorded, "true")),
			mockec2.Snapshot("snap-0000001f", volN(9), types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-9", model.TagCreateToken, "t9")),
		}},
		{name: "a backup of the same name without this backup's UID does not count", backup: backupIn(waiting, 1), elapsed: time.Minute,
			listed: []types.Snapshot{mockec2.Snapshot("snap-0000000e", volN(9), types.SnapshotStateCompleted, mockec2.WithTags(model.TagBackupUID, ""))}},
		// A CreateSnapshot that failed may be this volume's, its snapshot made as late as the
		// create window allows.
		{name: "a snapshot failed, every completed snapshot listed, within the create window", listed: []types.Snapshot{other},
			backup: attempted(backupIn(waiting, 1), 2), elapsed: time.Minute},
		{name: "a snapshot failed, every completed snapshot listed, after the create window", listed: []types.Snapshot{other},
			backup: attempted(backupIn(waiting, 1), 2), elapsed: 12 * time.Minute, outcome: done},
		{name: "no native snapshot at all", backup: backupIn(waiting, 0), outcome: done},
		{name: "EC2 lists fewer than Velero completed", listed: []types.Snapshot{other}, backup: backupIn(waiting, 2)},
		{name: "within the grace period", backup: backupIn(velerov1.BackupPhaseInProgress, 1), elapsed: 14 * time.Minute},
		// The tracker sees none of what Velero recorded: other credentials or another account.
		{name: "after the grace period", backup: backupIn(waiting, 1), elapsed: 16 * time.Minute, outcome: failed},
		{name: "another backup's snapshot does not count", backup: backupIn(waiting, 1), elapsed: 16 * time.Minute, outcome: failed,
			listed: []types.Snapshot{mockec2.Snapshot("snap-0000000e", volN(9), types.SnapshotStateCompleted, mockec2.WithTags(model.TagBackupUID, "uid-of-another"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(tt.listed...)
			serveTracker(f, nil)
			f.Clk.Step(tt.elapsed)
			p, err := newTracker(f).Progress(context.Background(), opID(mockec2.VolA), tt.backup)
			w := map[int]want{
				wait:   {desc: "waiting for EC2 to list the snapshot of volume " + mockec2.VolA + " in us-east-1"},
				done:   {completed: true, desc: "no native snapshot of volume " + mockec2.VolA + " was taken"},
				failed: {completed: true, errTxt: "Velero recorded 1 native snapshots for backup nightly, but EC2 lists 0 in us-east-1 with the default AWS credentials, none of volume " + mockec2.VolA},
			}[tt.outcome]
			checkProgress(t, p, err, w)
		})
	}
}

// One reconcile (many Progress calls within the cache lifetime) describes each region once.
func TestProgressCache(t *testing.T) {
	for _, withCopy := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy=%v", withCopy), func(t *testing.T) {
			f := mockec2.NewFixture(t)
			for i := 0; i < 10; i++ {
				s := mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStatePending, mockec2.Progress("10%"))
				if withCopy {
					mockec2.ToDest()(&s)
				}
				f.Src().Add(s)
			}
			serveTracker(f, nil)
			tr := newTracker(f)
			wantWest := map[bool]int{false: 0, true: 1}[withCopy]
			for round := 1; round <= 2; round++ {
				for i := 0; i < 10; i++ {
					if _, err := tr.Progress(context.Background(), opID(volN(i)), inProgress); err != nil {
						t.Fatal(err)
					}
					f.Clk.Step(100 * time.Millisecond)
				}
				if e, w := f.Src().DescribeCount(), f.Dst().DescribeCount(); e != round || w != round*wantWest {
					t.Errorf("round %d: %d DescribeSnapshots in us-east-1, %d in us-west-2; want %d and %d", round, e, w, round, round*wantWest)
				}
				f.Clk.Step(5 * time.Second) // the cache lifetime
			}
		})
	}
}

// With 25 completed sources and 20 slots, the first call of a reconcile starts the copies of the
// 20 oldest, the batch marked first with one CreateTags; the later calls start none.
func TestProgressFillsCopySlots(t *testing.T) {
	f := mockec2.NewFixture(t)
	const n = 25
	for _, i := range []int{7, 24, 3, 12, 0, 19, 20, 5, 16, 9, 22, 1, 14, 11, 18, 2, 23, 6, 10, 15, 4, 21, 8, 13, 17} {
		f.Src().Add(mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(time.Duration(i)*time.Minute)))
	}
	m := serveTracker(f, nil)
	tr := newTracker(f)
	p, err := reconcile(tr, n, inProgress)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "waiting for a copy slot in us-west-2 (20 copies of this backup in flight, EC2's limit)"})
	if got := m.count("CopySnapshot"); got != 20 {
		t.Fatalf("%d CopySnapshot calls, want 20", got)
	}
	for i, in := range m.copies {
		if got, want := aws.ToString(in.SourceSnapshotId), fmt.Sprintf("snap-%08x", i); got != want {
			t.Errorf("copy %d of %s, want %s (oldest first)", i, got, want)
		}
	}
	if m.count("CreateTags") != 1 || !strings.Contains(m.log[0], fmt.Sprintf("snap-%08x", 19)) {
		t.Errorf("want one CreateTags marking the batch first: %q", m.log)
	}
	for i := 0; i < n; i++ {
		p, err := tr.Progress(context.Background(), opID(volN(i)), inProgress)
		w := want{n: 100, total: 200, desc: "waiting for a copy slot"}
		if i < 20 {
			w.desc = "copy snap-c"
		}
		checkProgress(t, p, err, w)
	}
	if got := m.count("CopySnapshot"); got != 20 {
		t.Errorf("%d CopySnapshot calls after the reconcile, want still 20", got)
	}
}

// Once EC2 says the copy is queued, the other calls of the reconcile do not ask again.
func TestProgressQueuedAsksOncePerReconcile(t *testing.T) {
	f := mockec2.NewFixture(t)
	answers := map[string][]error{}
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("snap-%08x", i)
		f.Src().Add(mockec2.Snapshot(id, volN(i), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(time.Duration(i)*time.Minute)))
		for j := 0; j < 10; j++ {
			answers[id] = append(answers[id], mockec2.HTTPErr(400, ec2api.CodeResourceLimitExceeded))
		}
	}
	m := serveTracker(f, answers)
	tr := newTracker(f)
	for i := 0; i < 5; i++ {
		p, err := tr.Progress(context.Background(), opID(volN(i)), inProgress)
		checkProgress(t, p, err, want{n: 100, total: 200, desc: "queued"})
	}
	if got := m.count("CopySnapshot"); got != 1 {
		t.Errorf("%d CopySnapshot calls in one reconcile after EC2 queued the first; want 1", got)
	}
}

// After a CopySnapshot whose outcome is unknown, no second copy is asked for while EC2 may
// still be lagging in listing it, by this Tracker or by a new one (a restarted plugin); after
// that, one is.
func TestProgressAmbiguousCopy(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest()))
			m := serveTracker(f, map[string][]error{"snap-0000000a": {mockec2.NetErr()}})
			tr := newTracker(f)
			progress := func(w want) {
				t.Helper()
				if restart {
					tr = newTracker(f)
				}
				p, err := tr.Progress(context.Background(), opID(mockec2.VolA), inProgress)
				checkProgress(t, p, err, w)
			}
			requested := want{n: 100, total: 200, desc: "requested; waiting for EC2 to list it"}
			progress(requested)
			progress(requested) // same reconcile
			for _, d := range []time.Duration{10 * time.Second, 10 * time.Second, 9 * time.Second} {
				f.Clk.Step(d) // later reconciles, within the 30 s listing lag
				progress(requested)
			}
			if got := m.count("CopySnapshot"); got != 1 {
				t.Fatalf("%d CopySnapshot calls within the listing lag, want 1", got)
			}
			f.Clk.Step(2 * time.Second) // past it
			if !restart {
				// The view this Tracker read 2 s ago, within the lag, still stands: no copy
				// is started on it; the next view, read past the lag, decides.
				progress(requested)
				f.Clk.Step(ebs.DefaultCacheTTL)
			}
			progress(want{n: 100, total: 200, desc: "copy snap-c0000001 to us-west-2"})
			if got := m.count("CopySnapshot"); got != 2 {
				t.Errorf("%d CopySnapshot calls after the listing lag, want 2", got)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest())
	tests := []struct {
		name      string
		east      []types.Snapshot
		west      []types.Snapshot
		deleteErr error
		id        string
		wantWest  []string
		wantErr   []string
	}{
		{name: "pending copy deleted", east: []types.Snapshot{src}, west: []types.Snapshot{mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStatePending)},
			wantWest: []string{"snap-0000000b"}},
		{name: "completed copy kept", east: []types.Snapshot{src}, west: []types.Snapshot{mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStateCompleted)}},
		{name: "no copy", east: []types.Snapshot{src}},
		{name: "source pending", east: []types.Snapshot{mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStatePending, mockec2.ToDest())}},
		{name: "no snapshot"},
		{name: "copy already gone", east: []types.Snapshot{src}, west: []types.Snapshot{mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStatePending)},
			deleteErr: mockec2.HTTPErr(400, ec2api.CodeSnapshotNotFound), wantWest: []string{"snap-0000000b"}},
		{name: "deletion fails", east: []types.Snapshot{src}, west: []types.Snapshot{mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStatePending)},
			deleteErr: mockec2.HTTPErr(500, "InternalError"), wantWest: []string{"snap-0000000b"}, wantErr: []string{"snap-0000000b", "us-west-2"}},
		{name: "malformed operation ID", id: "ebs:v9:x", wantErr: []string{"ebs:v9:x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(tt.east...)
			f.Dst().Add(tt.west...)
			f.Dst().DeleteErr["snap-0000000b"] = tt.deleteErr
			serveTracker(f, nil)
			id := tt.id
			if id == "" {
				id = opID(mockec2.VolA)
			}
			err := newTracker(f).Cancel(context.Background(), id, inProgress)
			mockec2.WantErr(t, err, tt.wantErr...)
			if len(f.Src().Deleted) != 0 {
				t.Errorf("deleted %v in the source region; the source belongs to the backup", f.Src().Deleted)
			}
			if fmt.Sprint(f.Dst().Deleted) != fmt.Sprint(tt.wantWest) && len(f.Dst().Deleted)+len(tt.wantWest) > 0 {
				t.Errorf("deleted %v in us-west-2, want %v", f.Dst().Deleted, tt.wantWest)
			}
		})
	}
}

// A request that got no answer, as the SDK reports it, is ambiguous everywhere: CreateSnapshot
// looks the snapshot up, Progress keeps waiting, an unanswered copy is waited for.
func TestNoAnswerAsTheSDKReportsIt(t *testing.T) {
	done := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest())
	t.Run("CreateSnapshot", func(t *testing.T) {
		f := mockec2.NewFixture(t)
		f.ExpectVolume(mockec2.Volume(types.VolumeTypeGp2, 100, 0))
		cc := serveCreate(f, mockec2.SDKNoAnswer())
		cc.madeDespite[0] = true
		f.Src().ServeDescribe()
		id, err := newSnapshotter(f, model.Config{Region: mockec2.SrcRegion}).CreateSnapshot(context.Background(), mockec2.VolA, veleroTags)
		if err != nil || id != "snap-00000001" {
			t.Errorf("got %q, %v; want the snapshot the unanswered request made", id, err)
		}
	})
	t.Run("Progress describe", func(t *testing.T) {
		f := mockec2.NewFixture(t)
		f.Src().Add(done)
		f.Src().FailNext(mockec2.SDKNoAnswer())
		serveTracker(f, nil)
		p, err := newTracker(f).Progress(context.Background(), opID(mockec2.VolA), inProgress)
		checkProgress(t, p, err, want{desc: "connection reset"})
	})
	t.Run("CopySnapshot", func(t *testing.T) {
		f := mockec2.NewFixture(t)
		f.Src().Add(done)
		serveTracker(f, map[string][]error{"snap-0000000a": {mockec2.SDKNoAnswer()}})
		p, err := newTracker(f).Progress(context.Background(), opID(mockec2.VolA), inProgress)
		checkProgress(t, p, err, want{n: 100, total: 200, desc: "requested; waiting for EC2 to list it"})
	})
}

// EC2 refills CopySnapshot requests at 5 per second from a bucket of 50: with 45 copies of the
// backup started in the last 10 s, only 5 more are asked for, whatever the free slots.
func TestProgressPacesCopiesAtEC2sRate(t *testing.T) {
	f := mockec2.NewFixture(t)
	for i := 0; i < 45; i++ {
		src := mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(-time.Hour))
		f.Src().Add(src)
		f.Dst().Add(mockec2.CopyOfSnap(fmt.Sprintf("snap-c%07x", i), src, types.SnapshotStateCompleted, mockec2.StartedAt(-5*time.Second)))
	}
	for i := 45; i < 60; i++ {
		f.Src().Add(mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(-time.Hour)))
	}
	m := serveTracker(f, nil)
	p, err := reconcile(newTracker(f), 60, inProgress)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "waiting for EC2's CopySnapshot request rate in us-west-2 (50 copies started in the last 10s; 5 copies in flight in the account, 5 of this backup)"})
	if got := m.count("CopySnapshot"); got != 5 {
		t.Errorf("%d CopySnapshot calls, want the 5 EC2's rate allows", got)
	}
}

// When EC2 throttles the description, the other operations of the reconcile hear the same
// answer from the cache instead of each asking again.
func TestProgressCachesAFailedDescription(t *testing.T) {
	f := mockec2.NewFixture(t)
	for i := 0; i < 5; i++ {
		f.Src().Add(mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted))
	}
	f.Src().FailNext(mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded))
	serveTracker(f, nil)
	tr := newTracker(f)
	for i := 0; i < 5; i++ {
		p, err := tr.Progress(context.Background(), opID(volN(i)), inProgress)
		checkProgress(t, p, err, want{desc: "waiting for EC2"})
	}
	if got := f.Src().DescribeCount(); got != 1 {
		t.Errorf("%d DescribeSnapshots in one reconcile under throttling, want 1", got)
	}
	f.Clk.Step(5 * time.Second)
	p, err := tr.Progress(context.Background(), opID(volN(0)), inProgress)
	checkProgress(t, p, err, want{completed: true, n: 100, total: 100, desc: "completed"})
}

// reconcile asks for the progress of the operations of volumes 0 to n-1 in order, as Velero's
// operations controller does in one reconcile, and returns the last answer.
func reconcile(tr *Tracker, n int, backup *velerov1.Backup) (velero.OperationProgress, error) {
	var p velero.OperationProgress
	var err error
	for i := range n {
		if p, err = tr.Progress(context.Background(), opID(volN(i)), backup); err != nil {
			return p, err
		}
	}
	return p, nil
}

// A Progress call copies the other sources of the backup in its batch, but never one whose
// operation failed on a refused copy, in this process or an earlier one: the copy-failed mark
// on the source says so. A mark that was lost is written again when the copy is refused again.
func TestAFillNeverCopiesAFailedOperationsSource(t *testing.T) {
	failed := mockec2.Snapshot("snap-00000000", volN(0), types.SnapshotStateCompleted, mockec2.ToDest(model.TagCopyFailed, mockec2.T0.Add(-time.Hour).Format(time.RFC3339)))
	unmarked := mockec2.Snapshot("snap-00000000", volN(0), types.SnapshotStateCompleted, mockec2.ToDest())
	other := mockec2.Snapshot("snap-00000001", volN(1), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(time.Minute))
	refused := []error{mockec2.HTTPErr(400, "InvalidParameterValue")}
	tests := []struct {
		name       string
		first      types.Snapshot
		answers    map[string][]error
		wantCopies []string
	}{
		{name: "a source marked copy-failed is not copied by another operation's Progress", first: failed,
			wantCopies: []string{"snap-00000001"}},
		{name: "a source whose mark was lost is refused again, and marked copy-failed", first: unmarked,
			answers: map[string][]error{"snap-00000000": refused}, wantCopies: []string{"snap-00000000", "snap-00000001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(tt.first, other)
			m := serveTracker(f, tt.answers)
			p, err := newTracker(f).Progress(context.Background(), opID(volN(1)), inProgress)
			checkProgress(t, p, err, want{n: 100, total: 200, desc: "copy snap-c"})
			var got []string
			for _, in := range m.copies {
				got = append(got, aws.ToString(in.SourceSnapshotId))
			}
			if !slices.Equal(got, tt.wantCopies) {
				t.Errorf("copies of %v, want %v", got, tt.wantCopies)
			}
			if _, ok := mockec2.TagsOf(f.Src().Snaps[0])[model.TagCopyFailed]; !ok {
				t.Errorf("%s is not marked %s: the next fill would copy it again", aws.ToString(tt.first.SnapshotId), model.TagCopyFailed)
			}
		})
	}
}
