// Package deleting deletes a backup's snapshots and every copy of each when Velero deletes the
// backup (the VolumeSnapshotter's DeleteSnapshot): it reads EC2, decides in one pure function
// (decideDeletion), then deletes, keeping what is locked or retained.
package deleting

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// deleteBudget bounds one DeleteSnapshot call: its reads, the wait for a copy asked for just
// before the deletion began (EC2's listing lag, 30 s), and its deletions, each request riding
// out throttling within it. Velero deletes a backup's snapshots one after another, so one
// call must not hold up the others; what is left fails naming it, and deleting the backup
// again resumes from what EC2 holds.
const deleteBudget = 2 * time.Minute

// firstLookAgain is the first wait before EC2 is read again for a copy asked for just before;
// each following wait doubles.
const firstLookAgain = time.Second

// Deleter deletes the snapshots Velero recorded for one VolumeSnapshotLocation, and every copy of
// each, when their backup is deleted.
type Deleter struct {
	cfg     model.Config
	clients ec2api.Regional
	ebs.Settings

	mu sync.Mutex
	// unreturnedGone are the backups (region, name and UID) whose unreturned snapshots this
	// process's deletions have deleted: Velero deletes a backup's snapshots one call each, all
	// after its item phase, so one look-up per backup and process is enough.
	unreturnedGone map[backupInRegion]bool
}

// backupInRegion names one backup's snapshots in one region.
type backupInRegion struct{ region, name, uid string }

// backupOfSource names the backup of src, a source in region.
func backupOfSource(region string, src *types.Snapshot) backupInRegion {
	return backupInRegion{region, model.TagValue(src.Tags, model.TagBackup), model.TagValue(src.Tags, model.TagBackupUID)}
}

// NewDeleter returns a Deleter for the location configured by cfg.
func NewDeleter(cfg model.Config, clients ec2api.Regional, opts ...ebs.Option) *Deleter {
	return &Deleter{cfg: cfg, clients: clients, Settings: ebs.NewSettings(opts), unreturnedGone: map[backupInRegion]bool{}}
}

// DeleteSnapshot deletes a snapshot Velero recorded and every copy of it. The ID may name a
// source in this location's region, or (for a location in the copy region, or one restoring
// from the vault) a source elsewhere or a copy here: the tags lead from each to the others,
// and a source no copy names is looked for in the location's copyToRegion. A piece already
// gone counts as deleted. The backup's snapshots that Velero recorded as failed (its UID, still
// marked recordedPending), which Velero's deletion never names, are deleted first.
//
// It reads EC2 (readDeletion), decides (decideDeletion), then acts, within deleteBudget. A
// source whose copy may still start is first marked as being deleted, so that no tracker
// starts one afterwards, and EC2 is read again: a copy asked for just before is waited for,
// and a mark EC2 refused fails the deletion before anything is deleted, unless the source is
// gone or carries EC2's limit of tags (no tracker can mark it for a copy either). Then the
// source is deleted, and the copies only once it is gone, so that a deletion that
// fails half-way leaves what the next one needs to find the rest; if a region that may hold a
// copy cannot be asked, nothing is deleted. Locked snapshots and retained vault copies are
// kept, and snapshots that only look like this backup's are left alone, each logged. Every
// failure is named in the error.
func (s *Deleter) DeleteSnapshot(ctx context.Context, snapshotID string) error {
	if !awsid.IsSnapshotID(snapshotID) {
		return fmt.Errorf("%q is not an EBS snapshot ID", snapshotID)
	}
	deadline := s.Clock.Now().Add(deleteBudget)
	ctx, cancel := context.WithTimeout(ctx, deleteBudget)
	defer cancel()
	policy := deletionPolicy{retainVaultCopies: s.cfg.Vault.RetainOnDelete, listingLag: s.ListingLag}
	var markedAt time.Time
	var marked markAnswer
	var probed []markAnswer
	for wait := firstLookAgain; ; {
		// The decision's time is when the read began: what it saw is as old as that, however
		// long its requests took (a copy asked for meanwhile may not be in it).
		now := s.Clock.Now()
		seen, err := s.readDeletion(ctx, snapshotID)
		if err != nil {
			return err
		}
		seen.markedAt, seen.probed, seen.marked = markedAt, probed, marked
		marked = markAnswer{} // judged once, with the look that follows the mark
		plan := decideDeletion(seen, policy, now)
		if plan.warning != "" {
			s.Log.WithError(plan.warningCause).Warn(plan.warning)
		}
		switch {
		case plan.refusal != nil:
			return plan.refusal
		case plan.probe != nil:
			if probed, err = s.probeUnlisted(ctx, plan.probe); err != nil {
				return err
			}
			markedAt = s.Clock.Now()
		case plan.mark != nil:
			if marked, err = s.markDeleting(ctx, *plan.mark); err != nil {
				return err
			}
			markedAt = s.Clock.Now()
		case !plan.waitUntil.IsZero():
			if plan.waitUntil.After(deadline) {
				return fmt.Errorf("waiting for %s, which EC2 may list only at %s, would outlast this deletion's %s; nothing deleted, delete the backup again",
					plan.waitingFor, plan.waitUntil.UTC().Format(time.RFC3339), deleteBudget)
			}
			if err := ebs.Sleep(ctx, s.Clock, min(wait, plan.waitUntil.Sub(now))); err != nil {
				return fmt.Errorf("waiting for %s: %w; nothing deleted", plan.waitingFor, err)
			}
			wait *= 2
		default:
			if err := s.carryOut(ctx, plan, deadline); err != nil {
				return err
			}
			if seen.source != nil {
				s.mu.Lock()
				s.unreturnedGone[backupOfSource(seen.sourceRegion, seen.source)] = true
				s.mu.Unlock()
			}
			return nil
		}
	}
}

// readDeletion reads what a deletion of the recorded snapshot decides on: the recorded
// snapshot, its source, every copy in each region that may hold one (through the location's
// and the vault's credentials), the source's siblings and the copies' locks. Any region that
// cannot be asked fails the read, so that nothing is deleted on a partial view.
func (s *Deleter) readDeletion(ctx context.Context, recordedID string) (deletionSeen, error) {
	here := s.cfg.Region
	seen := deletionSeen{here: here, elsewhere: s.cfg.CopyToRegion, recordedID: recordedID, sourceID: recordedID}
	rec, ok, err := ebs.DescribeSnapshot(ctx, s.clients, here, recordedID)
	if err != nil {
		return seen, err
	}
	if ok {
		if id := model.TagValue(rec.Tags, model.TagSourceSnapshotID); id != "" {
			seen.recordedCopy, seen.sourceID, seen.sourceRegion = &rec, id, model.TagValue(rec.Tags, model.TagSourceRegion)
		} else {
			seen.source, seen.sourceRegion = &rec, here
		}
	}
	listed := map[string]bool{}
	if err := s.readCopies(ctx, &seen, listed, here, s.cfg.CopyToRegion); err != nil {
		return seen, err
	}
	if seen.sourceRegion == "" {
		seen.sourceRegion = agreedSourceRegion(seen.copies)
	}
	if err := s.readSourceElsewhere(ctx, &seen); err != nil {
		return seen, err
	}
	if seen.source == nil && seen.sourceRegion != "" && seen.sourceRegion != here {
		src, ok, err := ebs.DescribeSnapshot(ctx, s.clients, seen.sourceRegion, seen.sourceID)
		if err != nil {
			return seen, fmt.Errorf("%w; nothing deleted, so that a later deletion still finds the copies of %s", err, seen.sourceID)
		}
		if ok {
			seen.source = &src
		}
	}
	if seen.source != nil {
		if err := s.readCopies(ctx, &seen, listed, model.TagValue(seen.source.Tags, model.TagCopyToRegion)); err != nil {
			return seen, err
		}
		if seen.siblings, err = s.siblings(ctx, regionalSnapshot{seen.sourceRegion, seen.sourceID}, seen.source); err != nil {
			return seen, err
		}
		if seen.unreturned, err = s.unreturnedOfBackup(ctx, seen.sourceRegion, seen.source); err != nil {
			return seen, fmt.Errorf("%w; nothing deleted, so that a later deletion still finds them through %s", err, seen.sourceID)
		}
	}
	if err := s.readVaultCopies(ctx, &seen); err != nil {
		return seen, err
	}
	if seen.locks, err = s.readLocks(ctx, seen.copies); err != nil {
		return seen, fmt.Errorf("%w; nothing deleted, so that no locked copy of %s is asked to go", err, seen.sourceID)
	}
	return seen, nil
}

// readSourceElsewhere looks for the recorded snapshot in the location's copyToRegion when
// neither this region nor any copy places it: a recovery cluster's location in a backup's copy
// region (copying back to the source region) is handed the source's ID, and a source whose copy
// never started is found only there. A region that cannot be asked fails the read, naming the
// source that may be left there. Without copyToRegion no other region is named, and EC2 not
// knowing the ID here is taken for its deletion.
func (s *Deleter) readSourceElsewhere(ctx context.Context, seen *deletionSeen) error {
	other := s.cfg.CopyToRegion
	if seen.source != nil || seen.recordedCopy != nil || seen.sourceRegion != "" || other == "" {
		return nil
	}
	src, ok, err := ebs.DescribeSnapshot(ctx, s.clients, other, seen.sourceID)
	if err != nil {
		return fmt.Errorf("%w; snapshot %s is not in %s and may be a source in %s, left there: nothing deleted, delete the backup again once %s answers",
			err, seen.sourceID, seen.here, other, other)
	}
	if ok && model.TagValue(src.Tags, model.TagSourceSnapshotID) == "" {
		seen.source, seen.sourceRegion = &src, other
	}
	return nil
}

// readCopies adds the copies of the source that regions hold, through the location's
// credentials, skipping regions already listed and the source's own.
func (s *Deleter) readCopies(ctx context.Context, seen *deletionSeen, listed map[string]bool, regions ...string) error {
	var errs []error
	for _, region := range slices.Sorted(slices.Values(regions)) {
		if region == "" || region == seen.sourceRegion || listed[region] {
			continue
		}
		listed[region] = true
		copies, err := ebs.CopiesOf(ctx, s.clients, region, seen.sourceID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range copies {
			seen.copies = append(seen.copies, found(region, locationCredentials, c))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w; nothing deleted, so that a later deletion still finds every copy of %s", err, seen.sourceID)
	}
	return nil
}

// agreedSourceRegion is the source region every copy names, or "" when they name none or
// several.
func agreedSourceRegion(copies []foundSnapshot) string {
	regions := map[string]bool{}
	for _, c := range copies {
		regions[model.TagValue(c.snap.Tags, model.TagSourceRegion)] = true
	}
	if len(regions) != 1 {
		return ""
	}
	return slices.Collect(maps.Keys(regions))[0]
}

// siblings lists the snapshots that may have been made by the CreateSnapshot call that made
// src besides it (decideDeletion tells which were): those of its create token, when that call
// marked src as the recorded one; for a snapshot of an earlier release (no create token),
// those of its backup UID and PV, which a call retried after a lost answer made twice.
func (s *Deleter) siblings(ctx context.Context, source regionalSnapshot, src *types.Snapshot) ([]foundSnapshot, error) {
	tags := model.TagMap(src.Tags)
	var filters []types.Filter
	switch token, uid, pv := tags[model.TagCreateToken], tags[model.TagBackupUID], tags[model.TagPV]; {
	case token != "" && tags[model.TagRecorded] == model.RecordedTrue:
		filters = []types.Filter{ebs.TagFilter(model.TagCreateToken, token)}
	case token == "" && uid != "" && pv != "":
		filters = []types.Filter{ebs.TagFilter(model.TagBackupUID, uid), ebs.TagFilter(model.TagPV, pv)}
	default:
		return nil, nil
	}
	c, err := s.clients(ctx, source.region)
	if err != nil {
		return nil, err
	}
	snaps, err := ebs.DescribeSnapshots(ctx, c, filters)
	if err != nil {
		return nil, fmt.Errorf("looking for other snapshots made with %s: %w", source, err)
	}
	var out []foundSnapshot
	for _, sn := range snaps {
		if aws.ToString(sn.SnapshotId) != source.id {
			out = append(out, found(source.region, locationCredentials, sn))
		}
	}
	return out, nil
}

// unreturnedOfBackup lists the snapshots in region tagged with src's backup name and still
// marked as not returned to Velero: Velero's deletion never names them, so the deletion of any
// snapshot it recorded for the backup deletes those of the backup (decideDeletion tells which:
// by the UID, or, where the UID is missing, by what CreateSnapshot wrote at creation), once per
// backup and process.
func (s *Deleter) unreturnedOfBackup(ctx context.Context, region string, src *types.Snapshot) ([]foundSnapshot, error) {
	key := backupOfSource(region, src)
	s.mu.Lock()
	gone := s.unreturnedGone[key]
	s.mu.Unlock()
	if key.name == "" || gone {
		return nil, nil
	}
	c, err := s.clients(ctx, region)
	if err != nil {
		return nil, err
	}
	snaps, err := ebs.DescribeSnapshots(ctx, c, []types.Filter{ebs.TagFilter(model.TagBackup, key.name), ebs.TagFilter(model.TagRecorded, model.RecordedPending)})
	if err != nil {
		return nil, fmt.Errorf("looking for the snapshots of backup %s in %s that Velero recorded as failed: %w", key.name, region, err)
	}
	out := make([]foundSnapshot, 0, len(snaps))
	for _, sn := range snaps {
		out = append(out, found(region, locationCredentials, sn))
	}
	return out, nil
}

// markDeleting marks the source as being deleted (TagDeletionRequestedAt), so that no tracker
// starts a copy of it afterwards (a tracker reads its sources again after marking them for
// copies), and returns EC2's answer, which decideDeletion judges; it fails only when the
// region's clients cannot be had, before any request.
func (s *Deleter) markDeleting(ctx context.Context, source regionalSnapshot) (markAnswer, error) {
	c, err := s.clients(ctx, source.region)
	if err != nil {
		return markAnswer{}, err
	}
	_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: []string{source.id},
		Tags:      []types.Tag{{Key: aws.String(model.TagDeletionRequestedAt), Value: aws.String(s.Clock.Now().UTC().Format(time.RFC3339))}},
	})
	return markAnswer{source: source, err: err}, nil
}

// probeUnlisted marks a recorded snapshot EC2 lists nowhere as being deleted, in each region
// it may be in, and returns EC2's answers, which probeMeaning judges (EC2 taking the mark in one
// says the snapshot exists there, not listed yet, and no copy of it starts any more); it fails
// only when a region's clients cannot be had.
func (s *Deleter) probeUnlisted(ctx context.Context, targets []regionalSnapshot) ([]markAnswer, error) {
	var answers []markAnswer
	for _, t := range targets {
		c, err := s.clients(ctx, t.region)
		if err != nil {
			return nil, err
		}
		_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{
			Resources: []string{t.id},
			Tags:      []types.Tag{{Key: aws.String(model.TagDeletionRequestedAt), Value: aws.String(s.Clock.Now().UTC().Format(time.RFC3339))}},
		})
		answers = append(answers, markAnswer{source: t, err: err})
		if err != nil {
			s.Log.WithError(err).Infof("Snapshot %s, which EC2 does not list, did not take the mark of its deletion", t)
			continue
		}
		s.Log.Infof("Snapshot %s is not listed yet; marked as being deleted, waiting for EC2 to list it", t)
	}
	return answers, nil
}

// carryOut deletes what plan deletes, the snapshots Velero does not name first, then the source, keeps and leaves the rest, within the
// budget that ends at deadline.
func (s *Deleter) carryOut(ctx context.Context, plan deletionPlan, deadline time.Time) error {
	for _, t := range plan.leave {
		s.Log.Infof("Left snapshot %s alone: %s", t, t.why)
	}
	var failed []error
	for _, t := range plan.first {
		if err := s.deleteWithin(ctx, t, deadline); err != nil {
			failed = append(failed, fmt.Errorf("%w (a snapshot of this backup Velero does not name: its CreateSnapshot returned an error to Velero, or made it besides the recorded one)", err))
		}
	}
	if err := errors.Join(failed...); err != nil {
		return fmt.Errorf("%w; the recorded snapshot and its copies are kept, so that a later deletion still finds them", err)
	}
	if src := plan.source; src != nil {
		if err := s.deleteWithin(ctx, *src, deadline); err != nil {
			return fmt.Errorf("%w; its copies are kept, so that a later deletion still finds them", err)
		}
	}
	for _, t := range plan.keep {
		s.keep(ctx, t, t.why)
	}
	var errs []error
	for _, t := range plan.rest {
		if err := s.deleteWithin(ctx, t, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteWithin deletes t unless the deletion's budget, which ends at deadline, is spent.
func (s *Deleter) deleteWithin(ctx context.Context, t deletionTarget, deadline time.Time) error {
	if !s.Clock.Now().Before(deadline) {
		return fmt.Errorf("snapshot %s not deleted: this deletion's %s are spent; delete the backup again", t, deleteBudget)
	}
	return s.deleteOne(ctx, t)
}

// deleteOne deletes a snapshot with the credentials it was found with, as decideDeleteAnswer
// says: a refusal may be EC2 holding the snapshot's lock, read then.
func (s *Deleter) deleteOne(ctx context.Context, t deletionTarget) error {
	c, err := s.clientsOf(t.via)(ctx, t.region)
	if err != nil {
		return err
	}
	_, err = c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(t.id)})
	answer := decideDeleteAnswer(t, err, nil)
	if answer.readLock {
		var lock *types.LockedSnapshotsInfo
		if l, lerr := lockOf(ctx, c, t.id); lerr == nil {
			lock = &l
		}
		answer = decideDeleteAnswer(t, err, lock)
	}
	switch {
	case answer.keep != "":
		s.keep(ctx, t, answer.keep)
	case answer.err == nil:
		s.Log.Infof("Deleted snapshot %s", t)
	}
	return answer.err
}

// clientsOf are the clients of the credentials via names.
func (s *Deleter) clientsOf(via credentialsOf) ec2api.Regional {
	if via == vaultCredentials {
		return s.Vault
	}
	return s.clients
}

// readVaultCopies adds the vault copies of the source, through the vault's credentials: in
// the vault region the location names and the one the source was tagged with. Without a
// vault there are none to find; without credentials for it, nothing is deleted.
func (s *Deleter) readVaultCopies(ctx context.Context, seen *deletionSeen) error {
	regions := map[string]bool{}
	account := s.cfg.Vault.AccountID
	if s.cfg.Vault.Enabled() {
		regions[s.cfg.Vault.Region] = true
	}
	if src := seen.source; src != nil && model.TagValue(src.Tags, model.TagVaultRegion) != "" {
		regions[model.TagValue(src.Tags, model.TagVaultRegion)] = true
		account = cmp.Or(model.TagValue(src.Tags, model.TagVaultAccount), account)
	}
	if len(regions) == 0 {
		return nil
	}
	if s.Vault == nil {
		return fmt.Errorf("snapshot %s has vault copies in account %s, but the location names no credentials for the vault (%s or %s); nothing deleted",
			seen.sourceID, account, model.ConfigVaultCredentialSecret, model.ConfigVaultProfile)
	}
	var errs []error
	for _, region := range slices.Sorted(maps.Keys(regions)) {
		copies, err := ebs.CopiesOf(ctx, s.Vault, region, seen.sourceID)
		if err != nil {
			errs = append(errs, fmt.Errorf("vault account: %w", err))
			continue
		}
		for _, c := range copies {
			if owner := aws.ToString(c.OwnerId); owner != "" && account != "" && owner != account {
				// The vault's credentials are another account's (the source's, mistyped): what
				// they find is that account's copy, not a vault copy, and no vault request goes
				// there.
				s.Log.Warnf("Left copy %s in %s alone as a vault copy: the vault's credentials are of account %s, not vault account %s", aws.ToString(c.SnapshotId), region, owner, account)
				continue
			}
			if f := found(region, vaultCredentials, c); !slices.ContainsFunc(seen.copies, func(o foundSnapshot) bool { return o.regionalSnapshot == f.regionalSnapshot }) {
				seen.copies = append(seen.copies, f)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w; nothing deleted, so that a later deletion still finds every copy of %s", err, seen.sourceID)
	}
	return nil
}

// readLocks reads the lock states of the copies asked to be locked (TagVaultLock), through
// the credentials each was found with, one request per region and credentials.
func (s *Deleter) readLocks(ctx context.Context, copies []foundSnapshot) (map[regionalSnapshot]types.LockState, error) {
	type place struct {
		region string
		via    credentialsOf
	}
	asked := map[place][]types.Snapshot{}
	for _, c := range copies {
		if model.TagValue(c.snap.Tags, model.TagVaultLock) != "" {
			p := place{c.region, c.via}
			asked[p] = append(asked[p], c.snap)
		}
	}
	locks := map[regionalSnapshot]types.LockState{}
	for p, snaps := range asked {
		c, err := s.clientsOf(p.via)(ctx, p.region)
		if err != nil {
			return nil, err
		}
		states := map[string]types.LockState{}
		if err := ebs.DescribeLocks(ctx, c, snaps, states); err != nil {
			return nil, fmt.Errorf("reading the locks of copies in %s: %w", p.region, err)
		}
		for id, st := range states {
			locks[regionalSnapshot{p.region, id}] = st
		}
	}
	return locks, nil
}

// lockOf returns the snapshot's lock as EC2 describes it; the zero value when it has none.
func lockOf(ctx context.Context, c ec2api.EC2, id string) (types.LockedSnapshotsInfo, error) {
	out, err := c.DescribeLockedSnapshots(ctx, &ec2.DescribeLockedSnapshotsInput{SnapshotIds: []string{id}})
	if err != nil || len(out.Snapshots) == 0 {
		return types.LockedSnapshotsInfo{}, err
	}
	return out.Snapshots[0], nil
}

// keep leaves a snapshot in place after its backup's deletion, saying why, and tags it with
// when its backup was deleted so that it can be found and deleted later.
func (s *Deleter) keep(ctx context.Context, t deletionTarget, why string) {
	c, err := s.clientsOf(t.via)(ctx, t.region)
	if err == nil {
		_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{
			Resources: []string{t.id},
			Tags:      []types.Tag{{Key: aws.String(model.TagBackupDeletedAt), Value: aws.String(s.Clock.Now().UTC().Format(time.RFC3339))}},
		})
	}
	if err != nil {
		s.Log.WithError(err).Warnf("Could not tag kept snapshot %s with %s", t, model.TagBackupDeletedAt)
	}
	s.Log.Warnf("Kept snapshot %s of the deleted backup: %s. It is tagged %s; delete it once that no longer holds", t, why, model.TagBackupDeletedAt)
}
