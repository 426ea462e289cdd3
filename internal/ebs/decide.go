package ebs

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// The decisions of Progress and Cancel: pure functions of what one call read from EC2 (a
// lookup), the operation, Velero's record of the backup, the settings and the time. They make
// no request, read no clock and log nothing; the Tracker acts on what they return.

// decideCfg is what of a Tracker's settings its decisions depend on.
type decideCfg struct {
	createWindow  time.Duration
	listingLag    time.Duration
	notFoundGrace time.Duration
}

func (s settings) decideCfg() decideCfg {
	return decideCfg{createWindow: s.createWindow(), listingLag: s.listingLag, notFoundGrace: s.notFoundGrace}
}

// lookup is what the places of an operation show of it.
type lookup struct {
	view *backupView
	res  resolution
	// recorded counts the distinct recorded sources of the backup listed in the places that
	// answered; unnamed the snapshots of its name without its UID.
	recorded, unnamed int
	// waiting and refused are the failures of places that did not answer, transient or not.
	waiting, refused []error
	note, where      string
}

// decideUnresolved reports an operation whose snapshot the lookup did not resolve to one source:
// several could be the recorded one, a place refused or could not answer, or none is listed.
// p carries the call's Updated time and units.
func decideUnresolved(op Operation, st velerov1.BackupStatus, backupName string, l lookup, cfg decideCfg, p velero.OperationProgress) velero.OperationProgress {
	switch {
	case l.view != nil:
		return decideAmbiguous(op, l.res, cfg, p)
	case len(l.refused) > 0:
		p.Completed = true
		p.Err = fmt.Sprintf("EC2 refuses to list the snapshots of volume %s in %s: %v", op.VolumeID, op.Region, errors.Join(l.refused...))
	case len(l.waiting) > 0:
		p.Description = "waiting for EC2: " + errors.Join(l.waiting...).Error()
	default:
		p = decideNotFound(op, st, backupName, l, cfg, p)
	}
	return p
}

// decideAmbiguous reports an operation with several snapshots that could each be the one Velero
// recorded. The mark that tells them apart is written before CreateSnapshot returns, so it is
// waited for while a create may still be under way; after that the operation fails, naming them.
func decideAmbiguous(op Operation, res resolution, cfg decideCfg, p velero.OperationProgress) velero.OperationProgress {
	ids := make([]string, len(res.ambiguous))
	for i, s := range res.ambiguous {
		ids[i] = aws.ToString(s.SnapshotId)
	}
	if p.Updated.Sub(op.Issued) < cfg.createWindow {
		p.Description = fmt.Sprintf("volume %s has %d snapshots for this backup (%s); waiting to learn which one Velero recorded", op.VolumeID, len(ids), strings.Join(ids, ", "))
		return p
	}
	p.Completed = true
	p.Err = fmt.Sprintf("volume %s in %s has %d snapshots that could each be the one Velero recorded for this backup (%s), and none is marked as recorded: not completing on evidence that may belong to another backup", op.VolumeID, op.Region, len(ids), strings.Join(ids, ", "))
	return p
}

// decideNotFound reports an operation whose snapshot EC2 does not list. Velero took no native
// snapshot of the volume (a volume policy chose another method, or CreateSnapshot failed) when
// it attempted none, or when EC2 lists as many distinct recorded sources of this backup as
// Velero recorded and EC2's listing lag has passed since the operation was opened (core asks for
// the snapshot right after). When Velero recorded snapshots the plugin cannot see, the operation
// waits for EC2's listing for the grace period, then fails with the likely causes: never a
// success without evidence.
func decideNotFound(op Operation, st velerov1.BackupStatus, backupName string, l lookup, cfg decideCfg, p velero.OperationProgress) velero.OperationProgress {
	// Core records its snapshots in the backup's status before it first asks for progress.
	recorded := st.VolumeSnapshotsCompleted
	elapsed := p.Updated.Sub(op.Issued)
	unnamed := ""
	if l.unnamed > 0 {
		unnamed = fmt.Sprintf(", besides %d of a backup of the same name without its UID (the upstream plugin's, or another install's)", l.unnamed)
	}
	switch {
	case st.VolumeSnapshotsAttempted == 0 && recorded == 0:
		p.Completed = true
		p.Description = fmt.Sprintf("no native snapshot of volume %s was taken for this backup: Velero attempted none", op.VolumeID)
	case l.recorded >= recorded && elapsed >= cfg.listingLag:
		p.Completed = true
		p.Description = fmt.Sprintf("no native snapshot of volume %s was taken for this backup: EC2 lists all %d Velero recorded, none of this volume", op.VolumeID, recorded)
	case elapsed <= cfg.notFoundGrace:
		p.Description = fmt.Sprintf("waiting for EC2 to list the snapshot of volume %s in %s (Velero recorded %d native snapshots for this backup; EC2 lists %d %s%s)", op.VolumeID, op.Region, recorded, l.recorded, l.where, unnamed)
	default:
		p.Completed = true
		p.Err = fmt.Sprintf("Velero recorded %d native snapshots for backup %s, but EC2 lists %d in %s %s%s, none of volume %s: the snapshot was taken with other credentials or in another account than this action uses "+
			"(check the location's spec.credential, profile and credentialsFile, and that the plugin may read VolumeSnapshotLocations and their Secrets), or it was deleted",
			recorded, backupName, l.recorded, op.Region, l.where, unnamed, op.VolumeID)
	}
	return p
}

// vaultCheck is what confirming the vault credentials' account decided: wrong fails the
// vault phase, wait delays it; neither when the account is the vault's (or is not checked).
type vaultCheck struct{ wrong, wait string }

func (c vaultCheck) ok() bool { return c.wrong == "" && c.wait == "" }

// decideVaultAccount judges the account STS names for the vault credentials (or why it could
// not): the vault account of the target, or a failure naming both; a failure that may pass
// (EC2's and STS's transient answers, credentials not ready) waits.
func decideVaultAccount(tg target, account string, err error) vaultCheck {
	switch {
	case err != nil && (ec2api.IsTransient(err) || ec2api.IsCredentialsFailure(err)):
		return vaultCheck{wait: fmt.Sprintf("waiting to confirm the account of the credentials for vault account %s: %v", tg.account, err)}
	case err != nil:
		return vaultCheck{wrong: fmt.Sprintf("the account of the credentials for vault account %s cannot be confirmed: %v", tg.account, err)}
	case account != tg.account:
		return vaultCheck{wrong: wrongVaultAccount(tg, account)}
	}
	return vaultCheck{}
}

// wrongVaultAccount says that the vault credentials belong to another account than the vault's.
func wrongVaultAccount(tg target, account string) string {
	return fmt.Sprintf("the vault credentials are those of account %s, not of vault account %s (%s): check %s and the vault credentials (%s or %s)",
		account, tg.account, tg, ConfigVaultAccountID, ConfigVaultCredentialSecret, ConfigVaultProfile)
}

// cancelStep is one request of a Cancel after the source's cancelled mark: removing the share
// of the source with a vault, or deleting a pending copy.
type cancelStep struct {
	tg      target
	unshare bool
	copyID  string
}

// decideCancel lists what cancelling the operation following src asks for, in order: per
// target, the removal of a vault's share (when the source is marked
// shared) and the deletion of a copy still pending and not locked (EC2 would refuse to delete a
// locked one, and it is the backup's).
func decideCancel(v *backupView, src *types.Snapshot) []cancelStep {
	var steps []cancelStep
	for _, tg := range targetsOf(src) {
		if tg.vault() && tagValue(src.Tags, TagVaultSharedAt) != "" {
			steps = append(steps, cancelStep{tg: tg, unshare: true})
		}
		cp := v.copyOf(tg, aws.ToString(src.SnapshotId))
		if cp != nil && cp.State == types.SnapshotStatePending && !locked(v.lockState(aws.ToString(cp.SnapshotId))) {
			steps = append(steps, cancelStep{tg: tg, copyID: aws.ToString(cp.SnapshotId)})
		}
	}
	return steps
}

// decideForeignSource judges a source of this backup that carries none of this plugin's tags:
// the snapshot was taken through another provider's VolumeSnapshotLocation (the upstream
// plugin's; Velero takes a PV's snapshot through the first of the backup's locations whose
// plugin accepts the volume), so it has no copy intent. When the backup names the place's
// location of this plugin and that location asks for copies, the operation fails, naming the
// locations that may have taken it and why no copy exists; "" otherwise (a backup that names
// no location of this plugin is left alone).
func decideForeignSource(src *types.Snapshot, pl Place, backupLocations []string) string {
	for _, t := range src.Tags {
		if strings.HasPrefix(aws.ToString(t.Key), tagPrefix) {
			return "" // this plugin's snapshot
		}
	}
	wanted := configTargets(pl.Config)
	if len(wanted) == 0 || !slices.Contains(backupLocations, pl.Location) {
		return ""
	}
	others := slices.DeleteFunc(slices.Clone(backupLocations), func(n string) bool { return n == pl.Location })
	took := "another VolumeSnapshotLocation"
	if len(others) > 0 {
		took = "VolumeSnapshotLocation " + strings.Join(others, " or ")
	}
	asks := make([]string, len(wanted))
	for i, tg := range wanted {
		asks[i] = tg.copyName() + " to " + tg.String()
	}
	return fmt.Sprintf("snapshot %s of volume %s was taken through %s, not through this plugin's location %s (it carries none of %s's tags), so it has no %s that %s asks for: "+
		"Velero snapshots a volume through the first of the backup's locations whose plugin accepts it; name only %s for this backup's EBS volumes",
		aws.ToString(src.SnapshotId), aws.ToString(src.VolumeId), took, pl.Location, VolumeSnapshotterName, strings.Join(asks, " and "), pl.Location, pl.Location)
}

// decideUnreturned reports an operation whose source is still marked as not returned to
// Velero. Its CreateSnapshot call may still be under way until the create window has passed
// since the later of the operation's opening and the snapshot's start; the operation waits.
// After that the call returned an error (or was cut off) and Velero recorded no snapshot for
// the PV: when Velero's record counts failed snapshots, this one is deleted (Velero's deletion
// skips it, so nobody else would) and the operation fails naming it; when it counts none, the
// two records disagree and the snapshot is neither copied nor deleted. del says to delete it.
func decideUnreturned(op Operation, src *types.Snapshot, st velerov1.BackupStatus, cfg decideCfg, p velero.OperationProgress) (_ velero.OperationProgress, del bool) {
	id := aws.ToString(src.SnapshotId)
	since := op.Issued
	if start := aws.ToTime(src.StartTime); start.After(since) {
		since = start
	}
	switch {
	case p.Updated.Sub(since) < cfg.createWindow:
		p.Description = fmt.Sprintf("snapshot %s in %s: %s; waiting for CreateSnapshot to return it to Velero", id, op.Region, progressText(src.Progress))
		return p, false
	case st.VolumeSnapshotsAttempted > st.VolumeSnapshotsCompleted:
		p.Completed = true
		p.Err = fmt.Sprintf("CreateSnapshot of volume %s returned an error to Velero, which recorded no snapshot of it (%d of %d attempted native snapshots failed); snapshot %s it made all the same is deleted and not copied",
			op.VolumeID, st.VolumeSnapshotsAttempted-st.VolumeSnapshotsCompleted, st.VolumeSnapshotsAttempted, id)
		return p, true
	}
	p.Completed = true
	p.Err = fmt.Sprintf("snapshot %s of volume %s was never marked as returned to Velero (%s=%s), yet Velero records no failed native snapshot: it is neither copied nor deleted",
		id, op.VolumeID, TagRecorded, recordedPending)
	return p, false
}

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
// lag has passed since the source was first shared; after that, the vault credentials cannot
// see the share.
func decideCopyAnswer(tg target, id string, err error, sharedAt, now time.Time, listingLag time.Duration) copyAnswer {
	switch {
	case err == nil:
		return copyAnswer{outcome: copyMade}
	case ec2api.IsAmbiguous(err):
		return copyAnswer{outcome: copyMaybeMade}
	case ec2api.Code(err) == ec2api.CodeResourceLimitExceeded || ec2api.IsThrottle(err) || ec2api.IsCredentialsFailure(err):
		return copyAnswer{outcome: copyQueued, why: "EC2 queued the copy: " + describeWait(err)}
	case tg.vault() && ec2api.IsNotFound(err) && now.Sub(sharedAt) < listingLag:
		return copyAnswer{outcome: copyQueued, why: fmt.Sprintf("the share of %s with account %s is not visible to the vault account yet", id, tg.account)}
	case tg.vault() && ec2api.IsNotFound(err):
		return copyAnswer{outcome: copyRefused, why: fmt.Sprintf("vault copy of snapshot %s to %s refused: the vault credentials cannot see the snapshot shared with account %s; "+
			"check that %s is the account of the vault credentials: %v", id, tg, tg.account, ConfigVaultAccountID, err)}
	}
	return copyAnswer{outcome: copyRefused, why: fmt.Sprintf("%s of snapshot %s to %s refused: %v", tg.copyName(), id, tg, err)}
}

// describeWait names why EC2 made the plugin wait: its error code, or the credential failure.
func describeWait(err error) string {
	if c := ec2api.Code(err); c != "" {
		return c
	}
	return err.Error()
}

// percent reads EC2's progress ("45%") as a number from 0 to 100.
func percent(p *string) int64 {
	n, err := strconv.Atoi(strings.TrimSuffix(aws.ToString(p), "%"))
	if err != nil || n < 0 {
		return 0
	}
	if n > 100 {
		return 100
	}
	return int64(n)
}

func progressText(p *string) string {
	return strconv.FormatInt(percent(p), 10) + "%"
}

// decideSource reports the source's own phase, the first 100 units: settled when the source
// failed (the operation fails) or is still pending; else its copies are reported next.
func decideSource(op Operation, src *types.Snapshot, p velero.OperationProgress) (_ velero.OperationProgress, settled bool) {
	srcID := aws.ToString(src.SnapshotId)
	switch src.State {
	case types.SnapshotStateError:
		p.Completed = true
		p.Err = fmt.Sprintf("snapshot %s of volume %s in %s failed: %s", srcID, op.VolumeID, op.Region, aws.ToString(src.StateMessage))
		return p, true
	case types.SnapshotStatePending:
		p.NCompleted = percent(src.Progress)
		p.Description = fmt.Sprintf("snapshot %s in %s: %s", srcID, op.Region, progressText(src.Progress))
		return p, true
	}
	p.NCompleted = 100
	return p, false
}

// decideReport reports an operation whose source completed from the phases of its copies, in
// order: the first failed phase fails it (phases after it are zero); it completes only when
// every phase is done.
func decideReport(op Operation, srcID string, phases []phase, p velero.OperationProgress) velero.OperationProgress {
	var waiting, done []string
	for _, ph := range phases {
		p.NCompleted += ph.units
		if ph.err != "" {
			p.Completed = true
			p.Err = ph.err
			return p
		}
		if ph.done {
			done = append(done, ph.desc)
		} else {
			waiting = append(waiting, ph.desc)
		}
	}
	if len(waiting) > 0 {
		p.Description = strings.Join(waiting, "; ")
		return p
	}
	p.Completed = true
	p.Description = fmt.Sprintf("snapshot %s in %s completed", srcID, op.Region)
	if len(done) > 0 {
		p.Description = fmt.Sprintf("snapshot %s in %s and its %s completed", srcID, op.Region, strings.Join(done, " and "))
	}
	return p
}

// copyDecision is what the copy of a completed source into a target comes to: a phase to
// report, a failure (fail), or a vault copy whose steps are to be taken (vaultCopy).
type copyDecision struct {
	phase     phase
	fail      string
	vaultCopy *types.Snapshot
}

// decideCopyPhase decides the copy of a completed source into the target from the view and
// what starting copies found.
func decideCopyPhase(v *backupView, src *types.Snapshot, tg target, f fill, now time.Time, listingLag time.Duration, copyLimit int) copyDecision {
	srcID := aws.ToString(src.SnapshotId)
	wait := func(format string, args ...any) copyDecision {
		return copyDecision{phase: phase{desc: fmt.Sprintf(format, args...)}}
	}
	if tg.vault() && v.place.Vault == nil {
		return wait("waiting for credentials in vault account %s: location %q names none the plugin can read (%s or %s)",
			tg.account, v.place.Location, ConfigVaultCredentialSecret, ConfigVaultProfile)
	}
	switch {
	case f.vault.wrong != "":
		return copyDecision{fail: f.vault.wrong}
	case f.vault.wait != "":
		return wait("%s", f.vault.wait)
	}
	cp := v.copyOf(tg, srcID)
	switch {
	case cp == nil && v.refusal(tg, srcID) != "":
		return copyDecision{fail: v.refusal(tg, srcID)}
	case cp == nil && tagValue(src.Tags, TagDeletionRequestedAt) != "":
		return wait("snapshot %s is being deleted with its backup; no %s to %s is started", srcID, tg.copyName(), tg)
	case cp == nil && v.timedOut(src, now):
		return wait("Velero's item-operation timeout has passed for snapshot %s; no %s to %s is started", srcID, tg.copyName(), tg)
	case cp == nil && f.err != nil:
		return wait("waiting to copy %s to %s: %v%s", srcID, tg, f.err, slotNote(v, f.slots))
	case cp == nil && v.recentlyRequested(src, tg, now, listingLag):
		return wait("%s of %s to %s requested; waiting for EC2 to list it", tg.copyName(), srcID, tg)
	case cp == nil:
		return wait("%s", slotWait(v, f.slots, srcID, tg, now, copyLimit))
	case cp.State == types.SnapshotStateError:
		return copyDecision{fail: fmt.Sprintf("%s %s of snapshot %s to %s failed: %s%s", tg.copyName(), aws.ToString(cp.SnapshotId), srcID, tg, aws.ToString(cp.StateMessage), keyHint(src, tg))}
	case tg.vault():
		return copyDecision{vaultCopy: cp}
	case cp.State == types.SnapshotStatePending:
		return copyDecision{phase: phase{units: percent(cp.Progress), desc: fmt.Sprintf("copy %s to %s: %s", aws.ToString(cp.SnapshotId), tg, progressText(cp.Progress))}}
	}
	return copyDecision{phase: phase{units: 100, done: true, desc: fmt.Sprintf("copy %s in %s", aws.ToString(cp.SnapshotId), tg)}}
}

// keyHint names the source's KMS key when a vault copy of it failed: the vault account may not
// be allowed to use it.
func keyHint(src *types.Snapshot, tg target) string {
	if !tg.vault() || aws.ToString(src.KmsKeyId) == "" {
		return ""
	}
	return fmt.Sprintf(" (the source is encrypted with KMS key %s: its key policy must let account %s use it, see the README)", aws.ToString(src.KmsKeyId), tg.account)
}

// vaultDecision is the next step on a vault copy: lock it (lock), remove its source's share
// (unshare), or neither, and then report phase.
type vaultDecision struct {
	phase    phase
	lock     *Lock
	unshare  bool
	lockNote string
}

// decideVaultSteps decides the next step on a vault copy EC2 lists: it is locked when the
// source asks for a lock, as soon as EC2 lists it as the vault account's (EC2 starts the
// lock's duration when the copy completes), and once it is completed the source's share is
// removed, each while the description's time for EC2 requests lasts. The phase is done only
// when all of that is.
func decideVaultSteps(v *backupView, src *types.Snapshot, tg target, cp *types.Snapshot) vaultDecision {
	cpID := aws.ToString(cp.SnapshotId)
	d := vaultDecision{phase: phase{units: percent(cp.Progress) * vaultCopyUnits / 100}}
	if l, want := parseLockTag(tagValue(src.Tags, TagVaultLock)); want {
		switch {
		case locked(v.lockState(cpID)):
			d.lockNote = fmt.Sprintf(", locked (%s, %d days)", l.Mode, l.Days)
		case aws.ToString(cp.OwnerId) != tg.account: // just made: locked once EC2 lists it in the vault account
			d.phase.desc = fmt.Sprintf("vault copy %s in %s: %s; waiting for EC2 to list it in the vault account to lock it", cpID, tg, progressText(cp.Progress))
			return d
		case v.fillTimeLeft() <= 0:
			d.phase.desc = fmt.Sprintf("vault copy %s in %s: %s; waiting to lock it: %s", cpID, tg, progressText(cp.Progress), budgetSpent)
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
	case tagValue(src.Tags, TagVaultSharedAt) != "" && v.fillTimeLeft() <= 0:
		d.phase.desc = fmt.Sprintf("vault copy %s in %s completed%s; waiting to remove the share of %s: %s", cpID, tg, d.lockNote, aws.ToString(src.SnapshotId), budgetSpent)
	case tagValue(src.Tags, TagVaultSharedAt) != "":
		d.unshare = true
	default:
		d.phase = phase{units: 100, done: true, desc: fmt.Sprintf("vault copy %s in %s%s", cpID, tg, d.lockNote)}
	}
	return d
}

// configTargets are the copies a location's config asks for; none when it does not parse (the
// volume snapshotter then refuses it, naming the error).
func configTargets(m map[string]string) []target {
	cfg, err := ParseConfig(m)
	if err != nil {
		return nil
	}
	var out []target
	if cfg.CopyToRegion != "" {
		out = append(out, target{region: cfg.CopyToRegion})
	}
	if cfg.Vault.Enabled() {
		out = append(out, target{account: cfg.Vault.AccountID, region: cfg.Vault.Region})
	}
	return out
}
