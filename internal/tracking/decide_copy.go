package tracking

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// copyOutcome is what a CopySnapshot answer means.
type copyOutcome int

const (
	// copyMade: EC2 made the copy.
	copyMade copyOutcome = iota
	// copyMaybeMade: the request may have taken effect; EC2's listing tells.
	copyMaybeMade
	// copyQueued: EC2 made no copy now (no slot, throttled, credentials not ready, a share not
	// visible yet); no copy into the target is asked for until the next listing.
	copyQueued
	// copyRefused: EC2 will not make it; the operation fails with why.
	copyRefused
)

// copyAnswer is the decision on a CopySnapshot answer: its outcome, and why for a queued or
// refused copy.
type copyAnswer struct {
	outcome copyOutcome
	why     string
}

// decideCopyAnswer judges EC2's answer to the copy of source id into the target. A vault copy
// EC2 says it cannot find is a share not visible to the vault account yet until EC2's listing
// lag has passed since the source was first shared (sharedSince); after that, the vault credentials cannot
// see the share.
func decideCopyAnswer(tg model.Target, id string, err error, sharedSince, now time.Time, listingLag time.Duration) copyAnswer {
	switch {
	case err == nil:
		return copyAnswer{outcome: copyMade}
	case ec2api.IsAmbiguous(err):
		return copyAnswer{outcome: copyMaybeMade}
	case ec2api.Code(err) == ec2api.CodeResourceLimitExceeded || ec2api.IsThrottle(err) || ec2api.IsCredentialsFailure(err):
		return copyAnswer{outcome: copyQueued, why: "EC2 queued the copy: " + describeWait(err)}
	case tg.Vault() && ec2api.IsNotFound(err) && now.Sub(sharedSince) < listingLag:
		return copyAnswer{outcome: copyQueued, why: fmt.Sprintf("the share of %s with account %s is not visible to the vault account yet", id, tg.Account)}
	case tg.Vault() && ec2api.IsNotFound(err):
		return copyAnswer{outcome: copyRefused, why: fmt.Sprintf("vault copy of snapshot %s to %s refused: the vault credentials cannot see the snapshot shared with account %s; "+
			"check that %s is the account of the vault credentials: %v", id, tg, tg.Account, model.ConfigVaultAccountID, err)}
	}
	return copyAnswer{outcome: copyRefused, why: fmt.Sprintf("%s of snapshot %s to %s refused: %v", tg.CopyName(), id, tg, err)}
}

// describeWait names why EC2 made the plugin wait: its error code, or the credential failure.
func describeWait(err error) string {
	if c := ec2api.Code(err); c != "" {
		return c
	}
	return err.Error()
}

// copyDecision is what the copy of a completed source into a target comes to: a phase to
// report, a failure (fail; mark: the source is marked copy-failed, EC2 listing nothing that
// shows why), or a vault copy whose steps are to be taken (vaultCopy).
type copyDecision struct {
	phase     phase
	fail      string
	mark      bool
	vaultCopy *types.Snapshot
}

// decideCopyPhase decides the copy of a completed source into the target from the view and
// what starting copies found.
func decideCopyPhase(v *backupView, src *types.Snapshot, tg model.Target, f fill, now time.Time, listingLag time.Duration, copyLimit int) copyDecision {
	srcID := aws.ToString(src.SnapshotId)
	wait := func(format string, args ...any) copyDecision {
		return copyDecision{phase: phase{desc: fmt.Sprintf(format, args...)}}
	}
	if tg.Vault() && v.place.Vault == nil && v.place.Unread {
		// The location naming the vault credentials cannot be read: a vault copy started in an
		// earlier call may be under way where this call cannot look, so it holds up another
		// phase's failure until the location is read again and the copy locked.
		d := wait("vault copy to %s: waiting to read the backup's location, which names the vault credentials", tg)
		d.phase.busy = true
		return d
	}
	if tg.Vault() && v.place.Vault == nil {
		return wait("waiting for credentials in vault account %s: location %q names none the plugin can read (%s or %s)",
			tg.Account, v.place.Location, model.ConfigVaultCredentialSecret, model.ConfigVaultProfile)
	}
	switch {
	case f.vault.wrong != "":
		// Marked copy-failed like a refused copy: no process shares or copies this source again.
		return copyDecision{fail: f.vault.wrong, mark: true}
	case f.vault.wait != "":
		// Nothing is done to the vault copy before its account is confirmed, but what EC2 lists
		// of it still counts, so that a transient STS error takes no progress back; and a copy
		// EC2 made, not yet locked or its source's share not yet removed, keeps another phase
		// from failing the operation before those steps are taken.
		d := wait("%s", f.vault.wait)
		if cp := v.copyOf(tg, srcID); cp != nil && cp.State != types.SnapshotStateError {
			steps := decideVaultSteps(v, src, tg, cp).phase
			d.phase.units, d.phase.busy = steps.units, steps.busy
		}
		return d
	case f.vault.unconfirmed != "":
		// A vault copy asked for once the account was confirmed, not yet listed in the vault
		// account: EC2 listing it there confirms the account again, and it is locked before the
		// operation fails. With none under way, the operation fails now, marked like a refusal.
		cp := v.copyOf(tg, srcID)
		if cp != nil && cp.State != types.SnapshotStateError || cp == nil && v.recentlyRequested(src, tg, v.seenAt(), listingLag) {
			d := wait("%s; waiting for EC2 to list the vault copy of %s in account %s, which confirms it", f.vault.unconfirmed, srcID, tg.Account)
			d.phase.busy = true
			return d
		}
		return copyDecision{fail: f.vault.unconfirmed, mark: true}
	}
	cp := v.copyOf(tg, srcID)
	switch {
	case cp == nil && v.refusal(tg, srcID) != "":
		return copyDecision{fail: v.refusal(tg, srcID), mark: true}
	case cp == nil && model.TagValue(src.Tags, model.TagDeletionRequestedAt) != "":
		return wait("snapshot %s is being deleted with its backup; no %s to %s is started", srcID, tg.CopyName(), tg)
	case cp == nil && v.timedOut(src, now):
		return wait("Velero's item-operation timeout for snapshot %s is past or too near for a copy; no %s to %s is started", srcID, tg.CopyName(), tg)
	case cp == nil && model.TagValue(src.Tags, model.TagCopyFailed) != "" && !v.recentlyRequested(src, tg, v.seenAt(), listingLag):
		return copyDecision{fail: fmt.Sprintf("no %s of snapshot %s to %s is started: a copy of it was refused at %s (%s); the plugin's log of that time names EC2's answer",
			tg.CopyName(), srcID, tg, model.TagValue(src.Tags, model.TagCopyFailed), model.TagCopyFailed), mark: true}
	case cp == nil && f.err != nil:
		return wait("waiting to copy %s to %s: %v%s", srcID, tg, f.err, slotNote(v, f.slots))
	case cp == nil && v.recentlyRequested(src, tg, v.seenAt(), listingLag):
		d := wait("%s of %s to %s requested; waiting for EC2 to list it", tg.CopyName(), srcID, tg)
		d.phase.busy = tg.Vault() // a vault copy EC2 may have made is locked before the operation ends
		return d
	case cp == nil:
		return wait("%s", slotWait(v, f.slots, srcID, tg, now, copyLimit))
	case cp.State == types.SnapshotStateError:
		return copyDecision{fail: fmt.Sprintf("%s %s of snapshot %s to %s failed: %s%s", tg.CopyName(), aws.ToString(cp.SnapshotId), srcID, tg, aws.ToString(cp.StateMessage), keyHint(src, tg))}
	case tg.Vault():
		return copyDecision{vaultCopy: cp}
	case cp.State == types.SnapshotStatePending:
		return copyDecision{phase: phase{units: percent(cp.Progress), desc: fmt.Sprintf("copy %s to %s: %s", aws.ToString(cp.SnapshotId), tg, progressText(cp.Progress))}}
	}
	return copyDecision{phase: phase{units: 100, done: true, desc: fmt.Sprintf("copy %s in %s", aws.ToString(cp.SnapshotId), tg)}}
}

// keyHint names the source's KMS key when a vault copy of it failed: the vault account may not
// be allowed to use it.
func keyHint(src *types.Snapshot, tg model.Target) string {
	if !tg.Vault() || aws.ToString(src.KmsKeyId) == "" {
		return ""
	}
	return fmt.Sprintf(" (the source is encrypted with KMS key %s: its key policy must let account %s use it, see the README)", aws.ToString(src.KmsKeyId), tg.Account)
}

// configTargets are the copies a location's config asks for; none when it does not parse (the
// volume snapshotter then refuses it, naming the error).
func configTargets(m map[string]string) []model.Target {
	cfg, err := model.ParseConfig(m)
	if err != nil {
		return nil
	}
	var out []model.Target
	if cfg.CopyToRegion != "" {
		out = append(out, model.Target{Region: cfg.CopyToRegion})
	}
	if cfg.Vault.Enabled() {
		out = append(out, model.Target{Account: cfg.Vault.AccountID, Region: cfg.Vault.Region})
	}
	return out
}

// fillFacts is what a view shows of a completed source bound for a target, as far as starting
// its copy goes.
type fillFacts struct {
	// followed: an operation follows it, or certainly will (the one snapshot of its PV carrying
	// the backup's UID, or the one of them marked recorded); a stray no operation could claim is
	// not. ended: this process reported its operation ended. claimed: an operation's Progress
	// or Cancel call in this process follows it. vault: the target is a vault account.
	followed, ended, claimed, vault bool
	// failed: it is marked copy-failed (its operation failed on a refused or failed copy);
	// failing: this process saw its copy into one of its targets refused or ended in error.
	failed, failing bool
	// copied: EC2 lists its copy into the target.
	copied bool
	// cancelled: Velero cancelled its operation (marked, or seen by this process); timedOut:
	// Velero's item-operation timeout may have passed for it.
	cancelled, timedOut bool
	// unreturned: still marked recorded=pending; deleting: its deletion has begun.
	unreturned, deleting bool
	// requested: its copy into the target was asked for within EC2's listing lag.
	requested bool
}

// decideFill decides whether a fill may start the copy of a completed source into a target
// now (and share it with a vault): any source of the backup an operation follows or will, so
// that one Progress call starts a batch of copies. Never one a failed copy ended (marked
// copy-failed in EC2, or seen failing here), nor one cancelled or timed out, whose create did
// not return it to Velero, whose deletion has begun, or that has its copy; one no operation
// follows waits for an operation's claim (a stray, which none could claim, is never copied);
// one asked for within the listing lag waits for EC2's listing. A vault copy waits for its own
// operation's claim in this process: an operation that failed in an earlier process, unable to
// mark its source copy-failed (EC2 refusing the tag), looks followed to a fresh process, and
// sharing its source then would leave it shared and its vault copy unlocked, with no call of
// that operation to come. A regional copy of it does no such harm: it goes with the backup.
func decideFill(f fillFacts) verdict {
	switch {
	case f.ended || f.failed || f.failing || f.copied || f.cancelled || f.timedOut || f.unreturned || f.deleting:
		return copyNever
	case !f.followed || f.vault && !f.claimed:
		return copyOnClaim
	case f.requested:
		return copyLater
	}
	return copyNow
}

// fillFactsOf is what the view shows of s, a completed source bound for the target, that
// decideFill judges.
func fillFactsOf(v *backupView, s *types.Snapshot, tg model.Target, now time.Time, lag time.Duration) fillFacts {
	id := aws.ToString(s.SnapshotId)
	return fillFacts{
		followed:   v.followed[id],
		ended:      v.ended[id],
		claimed:    v.claimed[id],
		vault:      tg.Vault(),
		failed:     model.TagValue(s.Tags, model.TagCopyFailed) != "",
		failing:    failingSource(v, s),
		copied:     v.copyOf(tg, id) != nil,
		cancelled:  v.cancelled[id] || model.TagValue(s.Tags, model.TagCopyCancelled) != "",
		timedOut:   v.timedOut(s, now),
		unreturned: model.Unreturned(s),
		deleting:   model.TagValue(s.Tags, model.TagDeletionRequestedAt) != "",
		requested:  v.recentlyRequested(s, tg, v.seenAt(), lag),
	}
}

// failingSource reports whether the operation following s fails: the copy of s into one of its
// targets is refused or ended in error.
func failingSource(v *backupView, s *types.Snapshot) bool {
	id := aws.ToString(s.SnapshotId)
	for _, tg := range model.TargetsOf(s) {
		if cp := v.copyOf(tg, id); v.refusal(tg, id) != "" || cp != nil && cp.State == types.SnapshotStateError {
			return true
		}
	}
	return false
}
