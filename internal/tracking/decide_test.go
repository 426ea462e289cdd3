package tracking

import (
	"cmp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// What each CopySnapshot answer means, as a pure decision.
func TestCopyAnswers(t *testing.T) {
	vault := model.Target{Account: "222222222222", Region: mockec2.DstRegion}
	region := model.Target{Region: mockec2.DstRegion}
	sharedAt := mockec2.T0.Add(-10 * time.Second)
	tests := []struct {
		name    string
		tg      model.Target
		err     error
		now     time.Time
		want    copyOutcome
		wantWhy string
	}{
		{name: "made", tg: region, want: copyMade},
		{name: "no answer: maybe made", tg: region, err: mockec2.NetErr(), want: copyMaybeMade},
		{name: "5xx: maybe made", tg: region, err: mockec2.HTTPErr(500, "InternalError"), want: copyMaybeMade},
		{name: "no slot: queued", tg: region, err: mockec2.HTTPErr(400, ec2api.CodeResourceLimitExceeded), want: copyQueued, wantWhy: "EC2 queued the copy: ResourceLimitExceeded"},
		{name: "throttled: queued", tg: region, err: mockec2.HTTPErr(503, ec2api.CodeRequestLimitExceeded), want: copyQueued},
		{name: "refused", tg: region, err: mockec2.HTTPErr(400, "InvalidParameterValue"), want: copyRefused, wantWhy: "copy of snapshot snap-0000000a to us-west-2 refused"},
		{name: "a fresh share not visible yet", tg: vault, err: mockec2.HTTPErr(400, ec2api.CodeSnapshotNotFound), now: mockec2.T0, want: copyQueued, wantWhy: "not visible to the vault account yet"},
		{name: "a share the vault cannot see after the listing lag", tg: vault, err: mockec2.HTTPErr(400, ec2api.CodeSnapshotNotFound), now: mockec2.T0.Add(time.Minute),
			want: copyRefused, wantWhy: "the vault credentials cannot see the snapshot shared with account 222222222222"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideCopyAnswer(tt.tg, "snap-0000000a", tt.err, sharedAt, tt.now, ebs.DefaultListingLag)
			if got.outcome != tt.want || !strings.Contains(got.why, tt.wantWhy) {
				t.Errorf("got %+v, want outcome %d with %q", got, tt.want, tt.wantWhy)
			}
		})
	}
}

// What STS's answer about the vault credentials means.
func TestVaultAccountChecks(t *testing.T) {
	tg := model.Target{Account: "222222222222", Region: mockec2.DstRegion}
	tests := []struct {
		name            string
		account         string
		err             error
		wantWrong       string
		wantUnconfirmed string
		wantWait        string
	}{
		{name: "the vault account", account: "222222222222"},
		{name: "another account", account: "111111111111", wantWrong: "are those of account 111111111111, not of vault account 222222222222"},
		{name: "STS unreachable", err: mockec2.NetErr(), wantWait: "waiting to confirm"},
		{name: "STS refuses the credentials", err: mockec2.HTTPErr(403, "InvalidClientTokenId"), wantUnconfirmed: "cannot be confirmed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideVaultAccount(tg, tt.account, tt.err)
			if tt.wantWrong == "" && got.wrong != "" || !strings.Contains(got.wrong, tt.wantWrong) ||
				tt.wantUnconfirmed == "" && got.unconfirmed != "" || !strings.Contains(got.unconfirmed, tt.wantUnconfirmed) ||
				tt.wantWait == "" && got.wait != "" || !strings.Contains(got.wait, tt.wantWait) {
				t.Errorf("got %+v, want wrong %q, unconfirmed %q, wait %q", got, tt.wantWrong, tt.wantUnconfirmed, tt.wantWait)
			}
		})
	}
}

// What EC2's listing with the vault credentials tells of their account, before STS is asked:
// it lists only what their account owns.
func TestVaultAccountByListing(t *testing.T) {
	tg := model.Target{Account: "222222222222", Region: mockec2.DstRegion}
	tests := []struct {
		name        string
		stranger    string
		ownsCopy    bool
		wantSettled bool
		wantWrong   string
	}{
		{name: "a snapshot of another account among the vault copies tells the credentials wrong", stranger: "111111111111", wantSettled: true, wantWrong: "are those of account 111111111111"},
		{name: "a vault copy the vault account owns confirms the credentials without STS", ownsCopy: true, wantSettled: true},
		{name: "no vault copy listed: STS is asked", wantSettled: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, settled := decideVaultListing(tg, tt.stranger, tt.ownsCopy)
			if settled != tt.wantSettled || tt.wantWrong == "" && !got.ok() || !strings.Contains(got.wrong, tt.wantWrong) {
				t.Errorf("got %+v settled %v, want settled %v, wrong %q", got, settled, tt.wantSettled, tt.wantWrong)
			}
		})
	}
}

// An operation whose snapshots EC2 refuses to list (an IAM policy without DescribeSnapshots):
// it fails naming the refusal, unless Velero counts a failed native snapshot, which may have
// been made for this volume and only this operation would delete: then it waits, saying why.
func TestDecideRefusedListing(t *testing.T) {
	refused := lookup{refused: []error{mockec2.HTTPErr(403, ec2api.CodeUnauthorized)}}
	op := model.Operation{Region: mockec2.SrcRegion, VolumeID: mockec2.VolA, Issued: mockec2.T0}
	tests := []struct {
		name               string
		attempted, made    int
		wantCompleted      bool
		wantErr, wantDescr string
	}{
		{name: "every native snapshot recorded: the operation fails naming the refusal", attempted: 2, made: 2,
			wantCompleted: true, wantErr: "EC2 refuses to list the snapshots of volume " + mockec2.VolA},
		{name: "a native snapshot failed: the operation waits to delete what it may have made", attempted: 2, made: 1,
			wantDescr: "waiting, since Velero recorded 1 of 2 attempted native snapshots as failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := velerov1.BackupStatus{VolumeSnapshotsAttempted: tt.attempted, VolumeSnapshotsCompleted: tt.made}
			p := decideUnresolved(op, st, mockec2.BackupName, refused, decideCfg{}, velero.OperationProgress{Updated: mockec2.T0.Add(time.Hour)})
			if p.Completed != tt.wantCompleted || !strings.Contains(p.Err, tt.wantErr) || !strings.Contains(p.Description, tt.wantDescr) ||
				tt.wantErr == "" && p.Err != "" {
				t.Errorf("got completed=%v err %q description %q; want completed=%v, err with %q, description with %q",
					p.Completed, p.Err, p.Description, tt.wantCompleted, tt.wantErr, tt.wantDescr)
			}
			if !strings.Contains(p.Err+p.Description, ec2api.CodeUnauthorized) {
				t.Errorf("%q does not name EC2's refusal", p.Err+p.Description)
			}
		})
	}
}

// An operation of an earlier release names no PV: while EC2 may not list its own snapshot yet,
// it does not follow another static PV's snapshot of the same volume.
func TestWhenAnEarlierReleasesOperationFollowsASnapshot(t *testing.T) {
	cfg := decideCfg{createWindow: 12 * time.Minute, listingLag: 30 * time.Second}
	src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pvc-static-1"))
	srcWithoutUID := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pvc-static-1"), withoutUID())
	srcMarked := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pvc-static-1", model.TagRecorded, "true"))
	old := model.Operation{Region: mockec2.SrcRegion, VolumeID: mockec2.VolA, Issued: mockec2.T0}
	named := old
	named.PV = "pvc-static-2"
	tests := []struct {
		name     string
		op       model.Operation
		src      *types.Snapshot
		listed   int
		unnamed  int
		after    time.Duration
		wantWait bool
	}{
		{name: "an earlier release's operation waits while EC2 lists fewer snapshots than Velero recorded, saying why", op: old, listed: 1, after: time.Minute, wantWait: true},
		{name: "an earlier release's operation follows the snapshot marked returned once EC2 lists every one Velero recorded", op: old, src: &srcMarked, listed: 2, after: time.Minute},
		{name: "an earlier release's operation does not follow a snapshot unmarked as returned before every snapshot its CreateSnapshot may have made is listed (a call retried after a lost answer made two)", op: old, listed: 2, after: time.Minute, wantWait: true},
		{name: "an earlier release's operation follows a snapshot unmarked as returned once every snapshot its CreateSnapshot may have made is listed", op: old, listed: 2, after: 13 * time.Minute},
		{name: "an earlier release's operation still waits past its create window while EC2 lists fewer (its own may be gone with the backup's deletion)", op: old, listed: 1, after: 12 * time.Minute, wantWait: true},
		{name: "an operation of a release that tagged no UID follows the snapshot once its own would be listed beside it", op: old, src: &srcWithoutUID, unnamed: 2, after: 12 * time.Minute},
		{name: "an operation of a release that tagged no UID waits within its create window", op: old, src: &srcWithoutUID, unnamed: 2, after: time.Minute, wantWait: true},
		{name: "an operation of a release that tagged no UID still waits past its create window while EC2 lists fewer snapshots of the backup's name than Velero recorded (its own may be gone with the backup's deletion)", op: old, src: &srcWithoutUID, unnamed: 1, after: 12 * time.Minute, wantWait: true},
		{name: "an operation naming its PV follows its PV's snapshot at once", op: named, listed: 1, after: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := velerov1.BackupStatus{VolumeSnapshotsAttempted: 2, VolumeSnapshotsCompleted: 2}
			snap := cmp.Or(tt.src, &src)
			why := decideUnnamedPV(tt.op, snap, st, lookup{recorded: tt.listed, unnamed: tt.unnamed}, cfg, mockec2.T0.Add(tt.after))
			if (why != "") != tt.wantWait {
				t.Fatalf("wait reason %q, want waiting %v", why, tt.wantWait)
			}
			if tt.wantWait && (!strings.Contains(why, "pvc-static-1") || !strings.Contains(why, "names no persistent volume")) {
				t.Errorf("wait reason %q names neither the other PV nor why", why)
			}
		})
	}
}

// Which snapshot an operation takes for one its CreateSnapshot never returned to Velero, to be
// deleted (decideUnreturned) rather than followed: marked so, or, for an earlier release's
// operation (which marked none pending), one of this backup while Velero recorded every native
// snapshot of it as failed.
func TestWhichSnapshotsWereNeverReturnedToVelero(t *testing.T) {
	old := model.Operation{Region: mockec2.SrcRegion, VolumeID: mockec2.VolA, Issued: mockec2.T0}
	named := old
	named.PV = "pvc-1"
	pending := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagRecorded, model.RecordedPending))
	unmarked := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted)
	unmarkedWithoutUID := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, withoutUID())
	allFailed := velerov1.BackupStatus{VolumeSnapshotsAttempted: 2}
	oneTaken := velerov1.BackupStatus{VolumeSnapshotsAttempted: 2, VolumeSnapshotsCompleted: 1}
	tests := []struct {
		name string
		op   model.Operation
		src  types.Snapshot
		st   velerov1.BackupStatus
		want bool
	}{
		{"a snapshot still marked pending was never returned", named, pending, oneTaken, true},
		{"an unmarked snapshot of this release's operation was returned", named, unmarked, allFailed, false},
		{"an earlier release's operation: this backup's snapshot, with every native snapshot recorded failed, was never returned", old, unmarked, allFailed, true},
		{"an earlier release's operation: with a native snapshot recorded taken, its snapshot is followed", old, unmarked, oneTaken, false},
		{"an earlier release's operation: a snapshot without the backup's UID may be another backup's, and is never taken for one to delete", old, unmarkedWithoutUID, allFailed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := neverReturned(tt.op, &tt.src, tt.st); got != tt.want {
				t.Errorf("neverReturned = %v, want %v", got, tt.want)
			}
		})
	}
}
