package deleting

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// A deletion reads EC2 (readDeletion), decides with decideDeletion, a pure function of what it
// read, the location's config and the time, then acts (DeleteSnapshot). This file holds the
// decision and the types it reads and answers with.

// regionalSnapshot names a snapshot and the region that holds it.
type regionalSnapshot struct{ region, id string }

func (r regionalSnapshot) String() string { return r.id + " in " + r.region }

// credentialsOf names the credentials a deletion reached a snapshot with.
type credentialsOf int

const (
	// locationCredentials are the deleting location's own.
	locationCredentials credentialsOf = iota
	// vaultCredentials are those of the location's vault account.
	vaultCredentials
)

// foundSnapshot is a snapshot a deletion read: where, and through which credentials.
type foundSnapshot struct {
	regionalSnapshot
	via  credentialsOf
	snap types.Snapshot
}

// found describes snap as region lists it through via.
func found(region string, via credentialsOf, snap types.Snapshot) foundSnapshot {
	return foundSnapshot{regionalSnapshot{region, aws.ToString(snap.SnapshotId)}, via, snap}
}

// deletionSeen is what one look at EC2 tells a deletion of the snapshot Velero recorded.
type deletionSeen struct {
	// here is the deleting location's region; recordedID the snapshot ID Velero recorded.
	here, recordedID string
	// elsewhere is the deleting location's copyToRegion, where a recorded snapshot here does
	// not hold may be the source (a recovery cluster's location); "" without one.
	elsewhere string
	// recordedCopy is the recorded snapshot when here lists it as a copy (a location in the
	// copy region given a copy's ID).
	recordedCopy *types.Snapshot
	// sourceID names the source; sourceRegion its region, "" when neither the source nor the
	// copies agree on one.
	sourceID, sourceRegion string
	// source is the source as its region lists it through the location's credentials; nil
	// when it does not (gone, or in another account).
	source *types.Snapshot
	// copies are the snapshots tagged as copies of sourceID (TagSourceSnapshotID) in every
	// region that may hold one, through the location's and the vault's credentials.
	copies []foundSnapshot
	// siblings are the snapshots that may have been made by the CreateSnapshot call that made
	// the source besides it (siblingOf tells).
	siblings []foundSnapshot
	// unreturned are the snapshots in the source's region tagged with the source's backup UID
	// and still marked recordedPending: made by CreateSnapshot calls of the backup that
	// returned an error to Velero, which records no ID for them and so never deletes them.
	unreturned []foundSnapshot
	// locks are the lock states of the copies asked to be locked (TagVaultLock).
	locks map[regionalSnapshot]types.LockState
	// markedAt is when this deletion marked the source as being deleted (or probed it); zero
	// before.
	markedAt time.Time
	// probed are EC2's answers to the marks this deletion sent the recorded snapshot, in each
	// region it may be in, when EC2 listed neither it nor a copy of it (EC2 may not list a
	// snapshot made moments ago yet); nil before.
	probed []markAnswer
	// marked is EC2's answer to the mark this deletion sent the source since its previous
	// look; zero when it sent none.
	marked markAnswer
}

// markAnswer is EC2's answer to a deletion's mark of its source (TagDeletionRequestedAt): err
// is nil when EC2 took it.
type markAnswer struct {
	source regionalSnapshot
	err    error
}

// deletionPolicy is what the deleting location's config and settings say about deletion.
type deletionPolicy struct {
	// retainVaultCopies is the location's vaultRetainOnDelete.
	retainVaultCopies bool
	// listingLag is how long EC2 may take to list a copy it has just started.
	listingLag time.Duration
}

// deletionTarget is a snapshot to delete, or to keep or leave alone with the reason why.
type deletionTarget struct {
	regionalSnapshot
	via credentialsOf
	why string
}

// deletionPlan is what a deletion does next. At most one of refusal, mark and waitUntil is
// set; when none is, the deletion deletes source, then rest, and keeps and leaves the others.
type deletionPlan struct {
	// refusal, when set, is why nothing may be deleted.
	refusal error
	// warning, when set, is logged before the plan is acted on, with warningCause, EC2's
	// error behind it.
	warning      string
	warningCause error
	// probe is the recorded snapshot, listed nowhere, in each region it may be in, to mark as
	// being deleted: EC2 accepting the mark in one says it exists (not listed yet), refusing it
	// as not found in all that it is gone.
	probe []regionalSnapshot
	// mark is the source to mark as being deleted (TagDeletionRequestedAt) before anything
	// else; EC2 is read again afterwards.
	mark *regionalSnapshot
	// waitUntil is when a copy asked for just before the source's mark is listed at the
	// latest; until then EC2 is read again. waitingFor says which.
	waitUntil  time.Time
	waitingFor string
	// first are deleted first: the snapshots of the backup that Velero never names, those whose
	// CreateSnapshot returned an error to Velero and the other snapshots of the call that made
	// the source (its siblings), each found through the source, so the source stays until they
	// are gone (and an open operation never follows a sibling once its source is gone). source
	// is deleted next (nil when it is not this location's to delete); rest
	// only once it is gone, so that a deletion failing half-way leaves what the next one needs.
	first  []deletionTarget
	source *deletionTarget
	rest   []deletionTarget
	// keep are this backup's snapshots that stay (locked, or retained vault copies): tagged
	// with when their backup was deleted, and logged. leave are snapshots that only look like
	// this backup's: not touched, logged.
	keep, leave []deletionTarget
}

// copyTarget is one place a source's copy goes: the copy region or the vault.
type copyTarget struct {
	regionTag, requestedTag string
	vault                   bool
}

// copyTargets are the places a source may have copies, by the tags that name them.
var copyTargets = []copyTarget{
	{regionTag: model.TagCopyToRegion, requestedTag: model.TagCopyRequestedAt},
	{regionTag: model.TagVaultRegion, requestedTag: model.TagVaultRequestedAt, vault: true},
}

// backupOf is what makes a snapshot this backup's: its source snapshot and region, and the
// backup named on it (its name and, when tagged, its UID).
type backupOf struct{ sourceID, sourceRegion, name, uid string }

func (b backupOf) String() string {
	s := fmt.Sprintf("backup %q", b.name)
	if b.uid != "" {
		s += " (UID " + b.uid + ")"
	}
	return s + ", source " + b.sourceID + " in " + b.sourceRegion
}

// claimsOf is the backup a copy says it belongs to.
func claimsOf(c types.Snapshot) backupOf {
	t := model.TagMap(c.Tags)
	return backupOf{t[model.TagSourceSnapshotID], t[model.TagSourceRegion], t[model.TagBackup], t[model.TagBackupUID]}
}

// has reports whether a copy that claims c belongs to b: the same source, region and backup
// name, and the same UID when both carry one.
func (b backupOf) has(c backupOf) bool {
	return c.sourceID == b.sourceID && c.sourceRegion == b.sourceRegion && c.name == b.name &&
		(b.uid == "" || c.uid == "" || b.uid == c.uid)
}

// decideDeletion decides what a deletion does with what it saw, under the location's policy,
// at now. It reads nothing and logs nothing: the caller acts on the plan and reads EC2 again
// after a mark or while waiting.
//
// What is this backup's: the source Velero recorded (or the source of the recorded copy), and
// the copies tagged with its ID whose source region and backup match the source's (or, when
// the source cannot be read, the recorded copy's; without either, the copies must agree, or
// nothing is deleted). Vault copies (found with the vault's credentials, or tagged with their
// source account) are kept when the location, the source or the copy itself asks for it.
// Copies EC2 reports locked are kept. A source is marked as being deleted before its deletion
// while a copy of it may still start (a target without a copy), and a copy asked for just
// before the mark is waited for, for EC2's listing lag. EC2's answer to that mark comes first
// (markAnswer.meaning): a mark refused fails the deletion before anything is deleted.
func decideDeletion(seen deletionSeen, policy deletionPolicy, now time.Time) deletionPlan {
	refusal, warning := seen.marked.meaning()
	if refusal != nil {
		return deletionPlan{refusal: refusal}
	}
	plan := decideFromSnapshots(seen, policy, now)
	if warning != "" {
		plan.warning, plan.warningCause = warning, seen.marked.err
	}
	return plan
}

// meaning is what EC2's answer to the source's mark means: a refusal that fails the deletion,
// or a warning to log as it goes on as marked (neither when EC2 took the mark). A source EC2
// no longer knows needs no mark, and neither does one that carries EC2's 50 tags already: no
// tracker can mark it for a copy either. Any other refusal, or a mark whose outcome is
// unknown, fails the deletion before anything is deleted: without the mark a copy may start
// after the deletion read EC2, and be left.
func (a markAnswer) meaning() (refusal error, warning string) {
	switch err := a.err; {
	case err == nil || ec2api.IsNotFound(err):
		return nil, ""
	case ec2api.Code(err) == ec2api.CodeTagLimitExceeded:
		return nil, fmt.Sprintf("Could not mark snapshot %s as being deleted: it carries EC2's limit of tags, so no copy of it can be marked and started either", a.source)
	case ec2api.IsTransient(err):
		return fmt.Errorf("marking snapshot %s as being deleted: %w; nothing deleted, delete the backup again", a.source, err), ""
	default:
		return fmt.Errorf("marking snapshot %s as being deleted, so that no copy of it starts meanwhile: %w; nothing deleted: "+
			"allow the location's credentials ec2:CreateTags on the backup's snapshots (the README's IAM policy), then delete the backup again", a.source, err), ""
	}
}

// decideFromSnapshots is decideDeletion once the source's mark, if any, was taken: what the
// snapshots seen, the policy and the time call for.
func decideFromSnapshots(seen deletionSeen, policy deletionPolicy, now time.Time) deletionPlan {
	ours, refusal := seen.backup()
	if refusal != "" {
		return deletionPlan{refusal: errors.New(refusal)}
	}
	var plan deletionPlan
	var copies []foundSnapshot
	for _, c := range seen.copies {
		if claim := claimsOf(c.snap); !ours.has(claim) {
			plan.leave = append(plan.leave, deletionTarget{c.regionalSnapshot, c.via,
				fmt.Sprintf("it is tagged as a copy of %s, but of %s, not of this deletion's %s", seen.sourceID, claim, ours)})
			continue
		}
		copies = append(copies, c)
	}
	if seen.source == nil && seen.recordedCopy == nil && len(copies) == 0 && cmp.Or(seen.sourceRegion, seen.here) == seen.here {
		switch state, refusal := probeMeaning(seen.probed); state {
		case unlistedUnknown:
			probe := []regionalSnapshot{{seen.here, seen.sourceID}}
			if seen.elsewhere != "" && seen.elsewhere != seen.here {
				probe = append(probe, regionalSnapshot{seen.elsewhere, seen.sourceID})
			}
			return deletionPlan{probe: probe}
		case unlistedRefused:
			return deletionPlan{refusal: refusal}
		case unlistedExists:
			// Made moments ago: its copy may have been asked for before the mark.
			if until := seen.markedAt.Add(policy.listingLag); now.Before(until) {
				return deletionPlan{waitUntil: until, waitingFor: fmt.Sprintf("snapshot %s, which EC2 does not list yet", seen.sourceID)}
			}
		}
	}
	if src := seen.source; src != nil {
		if m := seen.markTarget(copies); m != nil {
			return deletionPlan{mark: m}
		}
		if until, what := seen.copyMayStart(copies, policy.listingLag); now.Before(until) {
			return deletionPlan{waitUntil: until, waitingFor: what}
		}
		if until, what := seen.lockMayStart(copies); now.Before(until) {
			return deletionPlan{waitUntil: until, waitingFor: what}
		}
	}
	unreturned, leave := seen.unreturnedOf(ours)
	plan.first, plan.leave = unreturned, append(plan.leave, leave...)
	sourceRegion := cmp.Or(seen.sourceRegion, seen.here)
	switch owner := otherSourceAccount(copies); {
	case seen.source == nil && owner != "":
		plan.leave = append(plan.leave, deletionTarget{regionalSnapshot{sourceRegion, seen.sourceID}, locationCredentials,
			fmt.Sprintf("the source belongs to account %s, which this location's credentials are not: that account's deletion deletes it", owner)})
	default:
		plan.source = &deletionTarget{regionalSnapshot: regionalSnapshot{sourceRegion, seen.sourceID}}
	}
	for _, sib := range seen.siblings {
		if siblingOf(seen.source, sib.snap) {
			plan.first = append(plan.first, deletionTarget{regionalSnapshot: sib.regionalSnapshot, via: sib.via})
		}
	}
	for _, c := range copies {
		t := deletionTarget{regionalSnapshot: c.regionalSnapshot, via: c.via}
		switch why := seen.keepReason(c, policy); {
		case why != "":
			t.why = why
			plan.keep = append(plan.keep, t)
		default:
			plan.rest = append(plan.rest, t)
		}
	}
	return plan
}

// backup is the backup whose snapshots this deletion deletes: the source's, else the recorded
// copy's, else the one every copy agrees on. refusal says why none can be told.
func (seen deletionSeen) backup() (b backupOf, refusal string) {
	for _, anchor := range []*types.Snapshot{seen.source, seen.recordedCopy} {
		if anchor != nil {
			t := model.TagMap(anchor.Tags)
			return backupOf{seen.sourceID, cmp.Or(seen.sourceRegion, seen.here), t[model.TagBackup], t[model.TagBackupUID]}, ""
		}
	}
	claims := map[backupOf][]string{}
	for _, c := range seen.copies {
		claim := claimsOf(c.snap)
		claim.uid = "" // copies made before UIDs were tagged agree with those made after
		claims[claim] = append(claims[claim], c.String())
	}
	switch len(claims) {
	case 0:
		return backupOf{sourceID: seen.sourceID, sourceRegion: cmp.Or(seen.sourceRegion, seen.here)}, ""
	case 1:
		for claim := range claims {
			return claim, ""
		}
	}
	var which []string
	for claim, ids := range claims {
		which = append(which, fmt.Sprintf("%s (%s)", strings.Join(ids, ", "), claim))
	}
	slices.Sort(which)
	return backupOf{}, fmt.Sprintf("snapshot %s is not listed, and the snapshots tagged as its copies belong to different backups or source regions: %s; "+
		"nothing deleted, since which are this backup's cannot be told (another tool or install tags snapshots with %s)",
		seen.sourceID, strings.Join(which, "; "), model.TagSourceSnapshotID)
}

// siblingOf reports whether sib was made by the CreateSnapshot call that made src, the recorded
// source: it carries the same create token, src being marked as the recorded one; or, both
// made by an earlier release (no create token), it is a snapshot of the same backup UID, PV and
// volume, neither a copy nor marked unreturned: that release retried a call after a lost
// answer, and Velero records one snapshot per PV.
func siblingOf(src *types.Snapshot, sib types.Snapshot) bool {
	if src == nil {
		return false
	}
	s, t := model.TagMap(src.Tags), model.TagMap(sib.Tags)
	if token := s[model.TagCreateToken]; token != "" {
		return s[model.TagRecorded] == model.RecordedTrue && t[model.TagCreateToken] == token
	}
	return t[model.TagCreateToken] == "" && s[model.TagBackupUID] != "" && t[model.TagBackupUID] == s[model.TagBackupUID] &&
		s[model.TagPV] != "" && t[model.TagPV] == s[model.TagPV] && aws.ToString(sib.VolumeId) == aws.ToString(src.VolumeId) &&
		t[model.TagSourceSnapshotID] == "" && t[model.TagRecorded] != model.RecordedPending
}

// unreturnedOf splits the unreturned snapshots the deletion read into those of backup b to
// delete and those to leave alone: a copy, another backup's (by name or UID: another install,
// or an earlier backup of the same name, whose CreateSnapshot calls may still be under way),
// or the recorded source itself. Velero deletes a backup only once its item phase is over (it
// refuses while the backup is in progress, and a server restart fails a backup that was), so
// no CreateSnapshot call of b can still return one of its own to Velero: each goes, however
// young.
//
// Where the backup's UID is missing on either side (the item phase's plugin process restarted
// before the CreateSnapshot, losing what Execute handed it), a snapshot is b's by what that
// CreateSnapshot wrote at creation: its create token, b's name and this install's identity
// (the recorded source's), and a start within sameBackupSpan of the recorded source's. A
// backup's name is unique within an install while it exists, so no other backup of this
// install can have such a snapshot under way; another install's, one of an install whose
// identity was not read, and one started too far from the recorded source (an earlier backup
// of the same name) are left, logged.
func (seen deletionSeen) unreturnedOf(b backupOf) (del, leave []deletionTarget) {
	for _, u := range seen.unreturned {
		target := deletionTarget{regionalSnapshot: u.regionalSnapshot, via: u.via}
		switch {
		case u.id == seen.sourceID:
		case seen.isUnreturnedOf(u, b):
			del = append(del, target)
		default:
			target.why = fmt.Sprintf("it is marked %s=%s, but is not a snapshot of this deletion's %s", model.TagRecorded, model.RecordedPending, b)
			leave = append(leave, target)
		}
	}
	return del, leave
}

// sameBackupSpan is how far from the recorded source's start another snapshot of its backup
// may have started without the backup's UID to tell it: Velero takes a backup's snapshots one
// after another in its item phase, which a day covers.
const sameBackupSpan = 24 * time.Hour

// isUnreturnedOf reports whether u, a snapshot marked unreturned, is one of backup b's (see
// unreturnedOf).
func (seen deletionSeen) isUnreturnedOf(u foundSnapshot, b backupOf) bool {
	t := model.TagMap(u.snap.Tags)
	if b.name == "" || t[model.TagBackup] != b.name || t[model.TagSourceSnapshotID] != "" || t[model.TagRecorded] != model.RecordedPending {
		return false
	}
	if uid := t[model.TagBackupUID]; uid != "" && b.uid != "" {
		return uid == b.uid
	}
	if seen.source == nil {
		return false
	}
	install := model.TagValue(seen.source.Tags, model.TagInstall)
	gap := aws.ToTime(u.snap.StartTime).Sub(aws.ToTime(seen.source.StartTime)).Abs()
	return install != "" && t[model.TagInstall] == install && t[model.TagCreateToken] != "" && gap <= sameBackupSpan
}

// markTarget is the source to mark as being deleted: one not marked yet, with a target that
// has no copy of it listed, where a tracker may still start one, or with a copy asked to be
// locked that is not locked yet, which a tracker may still lock.
func (seen deletionSeen) markTarget(copies []foundSnapshot) *regionalSnapshot {
	src := seen.source
	if !seen.markedAt.IsZero() || model.TagValue(src.Tags, model.TagDeletionRequestedAt) != "" {
		return nil
	}
	for _, tg := range copyTargets {
		if region := model.TagValue(src.Tags, tg.regionTag); region != "" && !hasCopy(copies, region, tg.vault) {
			return &regionalSnapshot{seen.sourceRegion, seen.sourceID}
		}
	}
	if len(seen.unlockedAskingLock(copies)) > 0 {
		return &regionalSnapshot{seen.sourceRegion, seen.sourceID}
	}
	return nil
}

// unlockedAskingLock are the copies asked to be locked (TagVaultLock) that EC2 does not hold
// locked: a tracker that read the source before it was marked as being deleted may still lock
// them.
func (seen deletionSeen) unlockedAskingLock(copies []foundSnapshot) []foundSnapshot {
	var out []foundSnapshot
	for _, c := range copies {
		if model.TagValue(c.snap.Tags, model.TagVaultLock) != "" && !model.Locked(seen.locks[c.regionalSnapshot]) {
			out = append(out, c)
		}
	}
	return out
}

// lockSettle is how long after its source was marked as being deleted a copy may still be
// locked: by a tracker whose view of the source, read before the mark, is at most a cache TTL
// old when its Progress call begins, and whose call lasts at most its deadline. A tracker that
// reads the mark locks nothing (decideVaultSteps).
const lockSettle = ebs.DefaultCacheTTL + ec2api.ItemActionCallTimeout

// lockMayStart is until when a copy asked to be locked and not locked may still be locked by a
// tracker, and what it is (zero when none may): lockSettle after the source's mark.
func (seen deletionSeen) lockMayStart(copies []foundSnapshot) (time.Time, string) {
	markedAt := seen.markTime()
	unlocked := seen.unlockedAskingLock(copies)
	if markedAt.IsZero() || len(unlocked) == 0 {
		return time.Time{}, ""
	}
	what := make([]string, 0, len(unlocked))
	for _, c := range unlocked {
		what = append(what, "the lock of copy "+c.id+" in "+c.region)
	}
	return markedAt.Add(lockSettle), strings.Join(what, " and ")
}

// markTime is when the source was marked as being deleted: by this deletion, or by an earlier
// one as its mark says; zero when it is not marked.
func (seen deletionSeen) markTime() time.Time {
	markedAt, err := time.Parse(time.RFC3339, model.TagValue(seen.source.Tags, model.TagDeletionRequestedAt))
	if err != nil || !seen.markedAt.IsZero() && seen.markedAt.Before(markedAt) {
		markedAt = seen.markedAt
	}
	return markedAt
}

// copyRequestSpread is how long after the time a copy-requested mark names its CopySnapshot
// may be sent: the mark has a second's resolution, and the fill that wrote it sends its copies
// within its budget.
const copyRequestSpread = time.Second + ebs.FillBudget

// copyMayStart is until when a copy asked for just before the source was marked may still
// appear in EC2's listings, and what it is (zero when none may): a tracker that read the
// source before the mark may still start the copy it marked as requested, and EC2 lists it
// within its listing lag.
func (seen deletionSeen) copyMayStart(copies []foundSnapshot, lag time.Duration) (time.Time, string) {
	src := seen.source
	markedAt := seen.markTime()
	if markedAt.IsZero() {
		return time.Time{}, ""
	}
	var until time.Time
	var what []string
	for _, tg := range copyTargets {
		region := model.TagValue(src.Tags, tg.regionTag)
		requested, err := time.Parse(time.RFC3339, model.TagValue(src.Tags, tg.requestedTag))
		if region == "" || err != nil || hasCopy(copies, region, tg.vault) || requested.Before(markedAt.Add(-lag-model.ClockSkew)) {
			continue
		}
		// Listed at the latest a listing lag after it was asked for, or after the mark when
		// the request was stamped earlier (clock skew between nodes).
		if u := later(markedAt, requested.Add(copyRequestSpread)).Add(lag); u.After(until) {
			until = u
		}
		what = append(what, fmt.Sprintf("the %s of %s to %s requested at %s", copyName(tg.vault), seen.sourceID, region, requested.UTC().Format(time.RFC3339)))
	}
	return until, strings.Join(what, " and ")
}

// unlistedState is what a deletion knows of a recorded snapshot EC2 does not list.
type unlistedState int

// What marking an unlisted recorded snapshot told.
const (
	unlistedUnknown unlistedState = iota // not asked yet
	unlistedGone                         // EC2 does not know it in any region asked
	unlistedExists                       // EC2 knows it in one: it exists, not listed yet
	unlistedRefused                      // EC2's answer may change on asking again
)

// probeMeaning is what EC2's answers to the marks of a recorded snapshot it lists nowhere mean.
// A mark taken, or refused for EC2's limit of tags, says the snapshot exists there, not listed
// yet. An answer that may change on asking again (throttled, 5xx, no answer) tells nothing: the
// deletion fails before anything is deleted, naming it, and is asked for again. Any other
// answer (not found, or a refusal: another account's snapshot) says it is not there.
func probeMeaning(answers []markAnswer) (unlistedState, error) {
	if len(answers) == 0 {
		return unlistedUnknown, nil
	}
	for _, a := range answers {
		if a.err == nil || ec2api.Code(a.err) == ec2api.CodeTagLimitExceeded {
			return unlistedExists, nil
		}
	}
	for _, a := range answers {
		if ec2api.IsTransient(a.err) {
			return unlistedRefused, fmt.Errorf("marking snapshot %s, which EC2 does not list, as being deleted: %w; nothing deleted, delete the backup again", a.source, a.err)
		}
	}
	return unlistedGone, nil
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// copyName names a copy by its target.
func copyName(vault bool) string {
	if vault {
		return "vault copy"
	}
	return "copy"
}

// hasCopy reports whether copies hold one in region of the kind asked for (vault or not).
func hasCopy(copies []foundSnapshot, region string, vault bool) bool {
	return slices.ContainsFunc(copies, func(c foundSnapshot) bool { return c.region == region && c.isVaultCopy() == vault })
}

// isVaultCopy reports whether a copy is a vault copy: found with the vault's credentials, or
// tagged with its source's account, which only vault copies are.
func (c foundSnapshot) isVaultCopy() bool {
	return c.via == vaultCredentials || model.TagValue(c.snap.Tags, model.TagSourceAccount) != ""
}

// keepReason is why a copy of this backup stays, or "" when it goes: a lock EC2 reports, or,
// for a vault copy, the location's vaultRetainOnDelete or the retain tag of its source or of
// the copy itself.
func (seen deletionSeen) keepReason(c foundSnapshot, policy deletionPolicy) string {
	var why []string
	if st := seen.locks[c.regionalSnapshot]; model.Locked(st) {
		why = append(why, fmt.Sprintf("its %s lock has not expired", st))
	}
	if c.isVaultCopy() {
		copyTagged := model.TagValue(c.snap.Tags, model.TagVaultRetainOnDelete) == "true"
		sourceTagged := seen.source != nil && model.TagValue(seen.source.Tags, model.TagVaultRetainOnDelete) == "true"
		if reason := model.RetainReason(copyTagged, sourceTagged, policy.retainVaultCopies); reason != "" {
			why = append(why, reason)
		}
	}
	return strings.Join(why, ", and ")
}

// otherSourceAccount is the source's account when the copies show the location's credentials
// belong to another (the vault account's, for a location restoring from the vault): a copy
// found with them whose owner is not the source account it is tagged with.
func otherSourceAccount(copies []foundSnapshot) string {
	for _, c := range copies {
		owner, source := aws.ToString(c.snap.OwnerId), model.TagValue(c.snap.Tags, model.TagSourceAccount)
		if c.via == locationCredentials && owner != "" && source != "" && owner != source {
			return source
		}
	}
	return ""
}

// deleteAnswer is what EC2's answer to deleting a snapshot means: deleted (nothing set), a
// failure, a refusal whose reason the snapshot's lock may give (readLock), or a snapshot to
// keep, and why.
type deleteAnswer struct {
	readLock bool
	keep     string
	err      error
}

// decideDeleteAnswer judges EC2's answer err to deleting t; lock is the snapshot's lock as read
// after a refusal (nil: not read, or EC2 could not say). A snapshot already gone counts as
// deleted. A refusal of a snapshot whose lock still holds keeps it (see keep) instead of failing
// the deletion, which Velero would report at every try until the lock ends.
func decideDeleteAnswer(t deletionTarget, err error, lock *types.LockedSnapshotsInfo) deleteAnswer {
	switch {
	case err == nil || ec2api.IsNotFound(err):
		return deleteAnswer{}
	case ec2api.IsTransient(err):
		return deleteAnswer{err: fmt.Errorf("deleting snapshot %s: %w", t, err)}
	case lock == nil:
		return deleteAnswer{readLock: true, err: fmt.Errorf("deleting snapshot %s: %w", t, err)}
	case model.Locked(lock.LockState):
		return deleteAnswer{keep: fmt.Sprintf("its %s lock lasts until %s", lock.LockState, aws.ToTime(lock.LockExpiresOn).UTC().Format(time.RFC3339))}
	}
	return deleteAnswer{err: fmt.Errorf("deleting snapshot %s: %w", t, err)}
}
