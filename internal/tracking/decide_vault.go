package tracking

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// decideVaultAccount judges the account STS names for the vault credentials (or why it could
// not): the vault account of the target, or a failure naming both; a failure that may pass
// (EC2's and STS's transient answers, credentials not ready) waits.
func decideVaultAccount(tg model.Target, account string, err error) vaultCheck {
	switch {
	case err != nil && (ec2api.IsTransient(err) || ec2api.IsCredentialsFailure(err)):
		return vaultCheck{wait: fmt.Sprintf("waiting to confirm the account of the credentials for vault account %s: %v", tg.Account, err)}
	case err != nil:
		return vaultCheck{unconfirmed: fmt.Sprintf("the account of the credentials for vault account %s cannot be confirmed: %v", tg.Account, err)}
	case account != tg.Account:
		return vaultCheck{wrong: wrongVaultAccount(tg, account)}
	}
	return vaultCheck{}
}

// decideVaultListing decides the vault credentials' account from what EC2 lists with them,
// which is only what their account owns: a snapshot another account owns among the backup's
// vault copies tells them wrong, and a vault copy the vault account owns confirms them. When
// the listing shows neither, STS is asked (settled is false).
func decideVaultListing(tg model.Target, stranger string, ownsCopy bool) (_ vaultCheck, settled bool) {
	switch {
	case stranger != "":
		return vaultCheck{wrong: wrongVaultAccount(tg, stranger)}, true
	case ownsCopy:
		return vaultCheck{}, true
	}
	return vaultCheck{}, false
}

// wrongVaultAccount says that the vault credentials belong to another account than the vault's.
func wrongVaultAccount(tg model.Target, account string) string {
	return fmt.Sprintf("the vault credentials are those of account %s, not of vault account %s (%s): check %s and the vault credentials (%s or %s)",
		account, tg.Account, tg, model.ConfigVaultAccountID, model.ConfigVaultCredentialSecret, model.ConfigVaultProfile)
}

// vaultDecision is the next step on a vault copy: lock it (lock), remove its source's share
// (unshare), or neither, and then report phase.
type vaultDecision struct {
	phase    phase
	lock     *model.Lock
	unshare  bool
	lockNote string
}

// decideVaultSteps decides the next step on a vault copy EC2 lists: it is locked when the
// source asks for a lock, as soon as EC2 lists it as the vault account's (EC2 starts the
// lock's duration when the copy completes), and once it is completed the source's share is
// removed, each while the description's time for EC2 requests lasts. The phase is done only
// when all of that is.
func decideVaultSteps(v *backupView, src *types.Snapshot, tg model.Target, cp *types.Snapshot) vaultDecision {
	cpID := aws.ToString(cp.SnapshotId)
	d := vaultDecision{phase: phase{units: percent(cp.Progress) * vaultCopyUnits / 100, busy: true}}
	if l, want := model.ParseLockTag(model.TagValue(src.Tags, model.TagVaultLock)); want {
		switch {
		case model.Locked(v.lockState(cpID)):
			d.lockNote = ", locked (" + l.Term() + ")"
		case aws.ToString(cp.OwnerId) != tg.Account: // just made: locked once EC2 lists it in the vault account
			d.phase.desc = fmt.Sprintf("vault copy %s in %s: %s; waiting for EC2 to list it in the vault account to lock it", cpID, tg, progressText(cp.Progress))
			return d
		case v.fillTimeLeft() <= 0:
			d.phase.desc = fmt.Sprintf("vault copy %s in %s: %s; waiting to lock it: %s", cpID, tg, progressText(cp.Progress), budgetSpent)
			return d
		case model.TagValue(src.Tags, model.TagDeletionRequestedAt) != "":
			// Its backup is being deleted: the deletion, which read it unlocked, deletes it.
			d.phase.desc = fmt.Sprintf("vault copy %s in %s: %s; not locked: its backup is being deleted", cpID, tg, progressText(cp.Progress))
			return d
		default:
			d.lock = &l
			return d
		}
	}
	if cp.State == types.SnapshotStatePending {
		d.phase.desc = fmt.Sprintf("vault copy %s in %s: %s%s", cpID, tg, progressText(cp.Progress), d.lockNote)
		return d
	}
	d.phase.units = vaultCopyUnits + vaultStepUnits
	switch {
	case model.TagValue(src.Tags, model.TagVaultSharedAt) != "" && v.fillTimeLeft() <= 0:
		d.phase.desc = fmt.Sprintf("vault copy %s in %s completed%s; waiting to remove the share of %s: %s", cpID, tg, d.lockNote, aws.ToString(src.SnapshotId), budgetSpent)
	case model.TagValue(src.Tags, model.TagVaultSharedAt) != "":
		d.unshare = true
	default:
		d.phase = phase{units: 100, done: true, desc: fmt.Sprintf("vault copy %s in %s%s", cpID, tg, d.lockNote)}
	}
	return d
}

// budgetSpent says why a step waits for the next reconcile.
const budgetSpent = "this reconcile's time for EC2 requests is spent"
