package ebs

import (
	"strings"
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// What each CopySnapshot answer means, as a pure decision.
func TestCopyAnswers(t *testing.T) {
	vault := target{account: "222222222222", region: dstRegion}
	region := target{region: dstRegion}
	sharedAt := t0.Add(-10 * time.Second)
	tests := []struct {
		name    string
		tg      target
		err     error
		now     time.Time
		want    copyOutcome
		wantWhy string
	}{
		{name: "made", tg: region, want: copyMade},
		{name: "no answer: maybe made", tg: region, err: netErr(), want: copyMaybeMade},
		{name: "5xx: maybe made", tg: region, err: httpErr(500, "InternalError"), want: copyMaybeMade},
		{name: "no slot: queued", tg: region, err: httpErr(400, ec2api.CodeResourceLimitExceeded), want: copyQueued, wantWhy: "EC2 queued the copy: ResourceLimitExceeded"},
		{name: "throttled: queued", tg: region, err: httpErr(503, ec2api.CodeRequestLimitExceeded), want: copyQueued},
		{name: "refused", tg: region, err: httpErr(400, "InvalidParameterValue"), want: copyRefused, wantWhy: "copy of snapshot snap-0000000a to us-west-2 refused"},
		{name: "a fresh share not visible yet", tg: vault, err: httpErr(400, ec2api.CodeSnapshotNotFound), now: t0, want: copyQueued, wantWhy: "not visible to the vault account yet"},
		{name: "a share the vault cannot see after the listing lag", tg: vault, err: httpErr(400, ec2api.CodeSnapshotNotFound), now: t0.Add(time.Minute),
			want: copyRefused, wantWhy: "the vault credentials cannot see the snapshot shared with account 222222222222"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideCopyAnswer(tt.tg, "snap-0000000a", tt.err, sharedAt, tt.now, defaultListingLag)
			if got.outcome != tt.want || !strings.Contains(got.why, tt.wantWhy) {
				t.Errorf("got %+v, want outcome %d with %q", got, tt.want, tt.wantWhy)
			}
		})
	}
}

// What STS's answer about the vault credentials means.
func TestVaultAccountChecks(t *testing.T) {
	tg := target{account: "222222222222", region: dstRegion}
	tests := []struct {
		name      string
		account   string
		err       error
		wantWrong string
		wantWait  string
	}{
		{name: "the vault account", account: "222222222222"},
		{name: "another account", account: "111111111111", wantWrong: "are those of account 111111111111, not of vault account 222222222222"},
		{name: "STS unreachable", err: netErr(), wantWait: "waiting to confirm"},
		{name: "STS refuses the credentials", err: httpErr(403, "InvalidClientTokenId"), wantWrong: "cannot be confirmed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideVaultAccount(tg, tt.account, tt.err)
			if tt.wantWrong == "" && got.wrong != "" || !strings.Contains(got.wrong, tt.wantWrong) ||
				tt.wantWait == "" && got.wait != "" || !strings.Contains(got.wait, tt.wantWait) {
				t.Errorf("got %+v, want wrong %q, wait %q", got, tt.wantWrong, tt.wantWait)
			}
		})
	}
}

// An operation whose snapshots EC2 refuses to list (an IAM policy without DescribeSnapshots):
// it fails naming the refusal, unless Velero counts a failed native snapshot, which may have
// been made for this volume and only this operation would delete: then it waits, saying why.
func TestDecideRefusedListing(t *testing.T) {
	refused := lookup{refused: []error{httpErr(403, ec2api.CodeUnauthorized)}}
	op := Operation{Region: srcRegion, VolumeID: volA, Issued: t0}
	tests := []struct {
		name               string
		attempted, made    int
		wantCompleted      bool
		wantErr, wantDescr string
	}{
		{name: "every native snapshot recorded: the operation fails naming the refusal", attempted: 2, made: 2,
			wantCompleted: true, wantErr: "EC2 refuses to list the snapshots of volume " + volA},
		{name: "a native snapshot failed: the operation waits to delete what it may have made", attempted: 2, made: 1,
			wantDescr: "waiting, since Velero recorded 1 of 2 attempted native snapshots as failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := velerov1.BackupStatus{VolumeSnapshotsAttempted: tt.attempted, VolumeSnapshotsCompleted: tt.made}
			p := decideUnresolved(op, st, backupName, refused, decideCfg{}, velero.OperationProgress{Updated: t0.Add(time.Hour)})
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
