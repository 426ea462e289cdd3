package ebs

import (
	"context"
	"fmt"

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
}

// copyPhase reports the copy of a completed source into the target.
func (t *Tracker) copyPhase(ctx context.Context, v *backupView, src *types.Snapshot, tg target, f fill) phase {
	srcID := aws.ToString(src.SnapshotId)
	if tg.vault() && v.place.Vault == nil {
		return phase{desc: fmt.Sprintf("waiting for credentials in vault account %s: location %q names none the plugin can read (%s or %s)",
			tg.account, v.place.Location, ConfigVaultCredentialSecret, ConfigVaultProfile)}
	}
	switch {
	case f.vault.wrong != "":
		return t.failCopy(ctx, v, src, tg, f.vault.wrong)
	case f.vault.wait != "":
		return phase{desc: f.vault.wait}
	}
	cp := v.copyOf(tg, srcID)
	switch {
	case cp == nil && v.refusal(tg, srcID) != "":
		return t.failCopy(ctx, v, src, tg, v.refusal(tg, srcID))
	case cp == nil && tagValue(src.Tags, TagDeletionRequestedAt) != "":
		return phase{desc: fmt.Sprintf("snapshot %s is being deleted with its backup; no %s to %s is started", srcID, tg.copyName(), tg)}
	case cp == nil && v.timedOut(src, t.clock.Now()):
		return phase{desc: fmt.Sprintf("Velero's item-operation timeout has passed for snapshot %s; no %s to %s is started", srcID, tg.copyName(), tg)}
	case cp == nil && f.err != nil:
		return phase{desc: fmt.Sprintf("waiting to copy %s to %s: %v%s", srcID, tg, f.err, slotNote(v, f.slots))}
	case cp == nil && v.recentlyRequested(src, tg, t.clock.Now(), t.listingLag):
		return phase{desc: fmt.Sprintf("%s of %s to %s requested; waiting for EC2 to list it", tg.copyName(), srcID, tg)}
	case cp == nil:
		return phase{desc: t.slotWait(v, f.slots, srcID, tg)}
	case cp.State == types.SnapshotStateError:
		why := fmt.Sprintf("%s %s of snapshot %s to %s failed: %s%s", tg.copyName(), aws.ToString(cp.SnapshotId), srcID, tg, aws.ToString(cp.StateMessage), keyHint(src, tg))
		return t.failCopy(ctx, v, src, tg, why)
	case tg.vault():
		return t.vaultSteps(ctx, v, src, tg, cp)
	case cp.State == types.SnapshotStatePending:
		return phase{units: percent(cp.Progress), desc: fmt.Sprintf("copy %s to %s: %s", aws.ToString(cp.SnapshotId), tg, progressText(cp.Progress))}
	}
	return phase{units: 100, done: true, desc: fmt.Sprintf("copy %s in %s", aws.ToString(cp.SnapshotId), tg)}
}

// failCopy fails the operation for why, once nothing of the source is left shared with a vault:
// a removal of the share that may yet succeed is waited for; one EC2 refuses is named.
func (t *Tracker) failCopy(ctx context.Context, v *backupView, src *types.Snapshot, tg target, why string) phase {
	if !tg.vault() {
		return phase{err: why}
	}
	switch err := t.unshare(ctx, v, src, tg); {
	case err != nil && ec2api.IsTransient(err):
		return phase{desc: fmt.Sprintf("%s; removing the share of %s with account %s before failing: %v", why, aws.ToString(src.SnapshotId), tg.account, err)}
	case err != nil:
		return phase{err: fmt.Sprintf("%s; the snapshot may be left shared with account %s (%s is still set): %v", why, tg.account, TagVaultSharedAt, err)}
	}
	return phase{err: why}
}

// keyHint names the source's KMS key when a vault copy of it failed: the vault account may not
// be allowed to use it.
func keyHint(src *types.Snapshot, tg target) string {
	if !tg.vault() || aws.ToString(src.KmsKeyId) == "" {
		return ""
	}
	return fmt.Sprintf(" (the source is encrypted with KMS key %s: its key policy must let account %s use it, see the README)", aws.ToString(src.KmsKeyId), tg.account)
}
