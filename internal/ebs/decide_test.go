package ebs

import (
	"strings"
	"testing"
	"time"

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
