package tracking

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
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
func (t *Tracker) copyPhase(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, f fill, now time.Time) phase {
	d := decideCopyPhase(v, src, tg, f, now, t.ListingLag, t.CopyLimit)
	switch {
	case d.fail != "":
		return t.failCopy(ctx, v, src, tg, d.fail, d.mark)
	case d.vaultCopy != nil:
		return t.vaultSteps(ctx, v, src, tg, d.vaultCopy)
	}
	return d.phase
}

// failCopy fails the operation for why, once nothing of its source is left shared with a vault
// and, when mark says so, the source is marked copy-failed: a mark or a removal of the share
// that may yet succeed is waited for; a removal EC2 refuses is named.
func (t *Tracker) failCopy(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, why string, mark bool) phase {
	switch err := t.endCopies(ctx, v, src, tg, mark); {
	case err != nil && ec2api.IsTransient(err):
		return phase{busy: true, desc: fmt.Sprintf("%s; before failing: %v", why, err)}
	case err != nil && tg.Vault():
		return phase{err: fmt.Sprintf("%s; the snapshot may be left shared with account %s (%s is still set): %v", why, tg.Account, model.TagVaultSharedAt, err)}
	}
	return phase{err: why}
}

// endCopies takes the step that ends the copies of a source whose operation fails: when mark
// says so (nothing in EC2 shows why, as a refused copy), it marks the source copy-failed, so
// that no later fill, in this process or another, shares or copies it again; then it removes
// its share with a vault. A copy in error needs no mark: EC2 lists it, and a fill never copies
// a source with a copy in error (decideFill).
//
// A mark EC2 refuses does not hold up the removal of the share. Without the mark (refused, or
// its answer lost), a later fill may share the source again; the copy is then refused again, and
// the fill, meeting the refusal, takes this same step: it removes the share before its Progress
// call returns, and tries the mark again. So nothing stays shared past the listing lag. Only this
// plugin writes the mark, on sources of its own backups: a snapshot of another install is never a
// source of this backup's view.
func (t *Tracker) endCopies(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, mark bool) error {
	var markErr error
	if mark {
		markErr = t.timed(v, func() error { return t.markFailed(ctx, v, src) })
	}
	if markErr != nil && !ec2api.IsTransient(markErr) {
		t.Log.WithError(markErr).Warnf("Could not mark snapshot %s %s", aws.ToString(src.SnapshotId), model.TagCopyFailed)
		markErr = nil
	}
	if !tg.Vault() {
		return markErr
	}
	if err := t.timed(v, func() error { return t.unshare(ctx, v, src, tg) }); err != nil {
		return err
	}
	return markErr
}

// markFailed writes the copy-failed mark on the source, unless it carries it.
func (t *Tracker) markFailed(ctx context.Context, v *backupView, src *types.Snapshot) error {
	if model.TagValue(src.Tags, model.TagCopyFailed) != "" {
		return nil
	}
	id := aws.ToString(src.SnapshotId)
	c, err := v.place.Clients(ctx, v.region)
	if err != nil {
		return err
	}
	at := t.Clock.Now().UTC().Format(time.RFC3339)
	if err := t.tag(ctx, c, []string{id}, map[string]string{model.TagCopyFailed: at}); err != nil {
		return fmt.Errorf("marking snapshot %s %s: %w", id, model.TagCopyFailed, err)
	}
	v.setTag([]string{id}, model.TagCopyFailed, at)
	model.SetTag(src, model.TagCopyFailed, at)
	return nil
}

// abandonVault ends the vault phase of an operation another phase fails, with no vault copy to
// finish: no copy of the source is started any more, and its share with the vault account is
// removed, waited for while the removal may yet succeed.
func (t *Tracker) abandonVault(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, ph phase) phase {
	switch err := t.timed(v, func() error { return t.unshare(ctx, v, src, tg) }); {
	case err != nil && ec2api.IsTransient(err):
		return phase{units: ph.units, busy: true, desc: fmt.Sprintf("removing the share of %s with vault account %s before failing: %v", aws.ToString(src.SnapshotId), tg.Account, err)}
	case err != nil:
		return phase{units: ph.units, err: fmt.Sprintf("the snapshot may be left shared with account %s (%s is still set): %v", tg.Account, model.TagVaultSharedAt, err)}
	}
	return phase{units: ph.units, desc: fmt.Sprintf("no %s to %s is started", tg.CopyName(), tg)}
}
