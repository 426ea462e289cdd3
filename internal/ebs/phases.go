package ebs

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// Units of a vault copy's phase: the copy's progress counts vaultCopyUnits of its 100, its
// lock and the removal of the share vaultStepUnits each.
const (
	vaultCopyUnits = 80
	vaultStepUnits = 10
)

// fill is what starting copies into one target found: the account's slots it judged from, and
// why it started none, when it could not ask EC2; for a vault, what confirming the vault
// credentials' account decided.
type fill struct {
	slots *copySlots
	err   error
	vault vaultCheck
}

// phase is how far one copy of an operation's completed source has come.
type phase struct {
	units int64 // of 100
	done  bool
	// err, when set, fails the operation.
	err string
	// desc says what the phase waits for, or (done) what it made.
	desc string
	// busy says a vault copy is still being made, locked or its source's share removed: the
	// operation does not end before, even when another phase fails.
	busy bool
}

// copyPhase reports the copy of a completed source into the target, failing it (once nothing
// is left shared) or running the vault steps when the decision says so.
func (t *Tracker) copyPhase(ctx context.Context, v *backupView, src *types.Snapshot, tg target, f fill, now time.Time) phase {
	d := decideCopyPhase(v, src, tg, f, now, t.listingLag, t.copyLimit)
	switch {
	case d.fail != "":
		return t.failCopy(ctx, v, src, tg, d.fail)
	case d.vaultCopy != nil:
		return t.vaultSteps(ctx, v, src, tg, d.vaultCopy)
	}
	return d.phase
}

// failCopy fails the operation for why, once nothing of the source is left shared with a vault:
// a removal of the share that may yet succeed is waited for; one EC2 refuses is named.
func (t *Tracker) failCopy(ctx context.Context, v *backupView, src *types.Snapshot, tg target, why string) phase {
	if !tg.vault() {
		return phase{err: why}
	}
	switch err := t.unshare(ctx, v, src, tg); {
	case err != nil && ec2api.IsTransient(err):
		return phase{busy: true, desc: fmt.Sprintf("%s; removing the share of %s with account %s before failing: %v", why, aws.ToString(src.SnapshotId), tg.account, err)}
	case err != nil:
		return phase{err: fmt.Sprintf("%s; the snapshot may be left shared with account %s (%s is still set): %v", why, tg.account, TagVaultSharedAt, err)}
	}
	return phase{err: why}
}

// abandonVault ends the vault phase of an operation another phase fails, with no vault copy to
// finish: no copy of the source is started any more, and its share with the vault account is
// removed, waited for while the removal may yet succeed.
func (t *Tracker) abandonVault(ctx context.Context, v *backupView, src *types.Snapshot, tg target, ph phase) phase {
	switch err := t.timed(v, func() error { return t.unshare(ctx, v, src, tg) }); {
	case err != nil && ec2api.IsTransient(err):
		return phase{units: ph.units, busy: true, desc: fmt.Sprintf("removing the share of %s with vault account %s before failing: %v", aws.ToString(src.SnapshotId), tg.account, err)}
	case err != nil:
		return phase{units: ph.units, err: fmt.Sprintf("the snapshot may be left shared with account %s (%s is still set): %v", tg.account, TagVaultSharedAt, err)}
	}
	return phase{units: ph.units, desc: fmt.Sprintf("no %s to %s is started", tg.copyName(), tg)}
}
