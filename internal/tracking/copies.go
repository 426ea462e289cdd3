package tracking

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// maxDescriptionLen is EC2's limit on a snapshot's description.
const maxDescriptionLen = 255

// fillCopySlots starts copies into the target for the sources of the backup decideFill lets be
// copied (any an operation follows, not only the one of the call: one batch each time), oldest first, while the target account has free copy slots in the target region, EC2's
// request rate allows and this description's time budget lasts; it returns the account's copies
// into the target it judged from (nil when nothing of the backup awaits a copy there, or its own
// copies in flight fill every slot: then EC2 is not asked). Each batch is first marked on its sources (one CreateTags), so a restarted
// plugin that cannot see a just-made copy yet waits for it instead of copying again; a source EC2
// will not mark, or whose deletion has begun, is left out of the batch. A vault copy's source is
// shared with the vault account first (the report asks only once the vault credentials'
// account is confirmed), and copied with the vault's credentials.
//
// Between backups waiting at once, free slots go first come, first served: the backup whose
// Progress call finds them takes as many as it has sources ready. Which other backups wait is
// not known from EC2 without listing every source of the account, so no backup holds slots back
// for others (that would leave them idle). The turns are fair all the same: Velero's operations
// controller reconciles waiting backups one after another every sync period, in the order its
// informer cache lists them, which Go's map iteration makes different every period.
func (t *Tracker) fillCopySlots(ctx context.Context, v *backupView, tg model.Target, now time.Time) (*copySlots, error) {
	if tg.Vault() && v.place.Vault == nil || v.inFlight(tg) >= t.CopyLimit || len(v.awaitingCopy(tg, now, t.ListingLag, 1)) == 0 {
		return nil, nil // the backup's own copies fill the account's slots, or none awaits
	}
	a, err := t.accountSlots(ctx, v.place, tg)
	if err != nil {
		return nil, err
	}
	if a.queued != nil {
		return a, a.queued // asked already; the next listing tells whether slots freed up
	}
	free := t.freeSlots(v, a, now)
	if free <= 0 || v.fillTimeLeft() <= 0 {
		return a, nil
	}
	batch := v.awaitingCopy(tg, now, t.ListingLag, free)
	// The requests begin now: their marks and records say so, never an earlier time, or a
	// later call would take a copy made within the listing lag for one never asked for.
	start := t.Clock.Now()
	defer func() { v.spend(t.Clock.Since(start)) }()
	src, err := v.place.Clients(ctx, v.region)
	if err != nil {
		return a, err
	}
	dst, _, err := v.place.ClientsFor(ctx, tg)
	if err != nil {
		return a, err
	}
	requestedAt := start.UTC().Format(time.RFC3339)
	marked, err := t.markForCopy(ctx, src, v, batch, tg, requestedAt)
	if err != nil {
		return a, err
	}
	var unmark, refused []string
	var shareErr error // why a source could not be shared yet
	for _, s := range marked {
		id := aws.ToString(s.SnapshotId)
		if a.queued != nil || t.Clock.Since(start) >= v.fillTimeLeft() {
			unmark = append(unmark, id)
			continue
		}
		if ok, err := t.share(ctx, src, v, tg, s); !ok {
			shareErr = cmp.Or(shareErr, err)
			unmark = append(unmark, id)
			if err == nil {
				refused = append(refused, id)
			}
			continue
		}
		in := copyInput(s, v.region, tg)
		out, err := dst.CopySnapshot(ctx, in, ec2api.Bounded, ec2api.RetryThrottlingOnly)
		switch d := decideCopyAnswer(tg, id, err, sharedAt(s), now, t.ListingLag); d.outcome {
		case copyMade:
			v.recordCopy(tg, s, aws.ToString(out.SnapshotId), in.TagSpecifications[0].Tags, start)
			a.started(id, start)
			t.Log.Infof("Copying snapshot %s from %s to %s as %s", id, v.region, tg, aws.ToString(out.SnapshotId))
		case copyMaybeMade:
			v.markRequested(tg, id, start)
			a.started(id, start)
			t.Log.WithError(err).Warnf("CopySnapshot of %s to %s may have taken effect; waiting for EC2 to list the copy", id, tg)
		case copyQueued:
			a.queue(errors.New(d.why))
			unmark = append(unmark, id)
		default:
			v.refuse(tg, id, d.why)
			unmark = append(unmark, id)
			refused = append(refused, id)
		}
	}
	t.unmark(ctx, src, v, tg, unmark)
	t.endRefused(ctx, v, tg, refused)
	if a.queued != nil {
		return a, a.queued
	}
	return a, shareErr
}

// endRefused ends the copies of the sources whose copy into the target EC2 refused in this fill
// (endCopies: marked copy-failed, their share removed) before the Progress call returns: the
// operation of such a source fails, and may have ended already, when an earlier mark was lost,
// with no later Progress call to remove the share. What fails here is tried again by the
// source's operation, while it is open.
func (t *Tracker) endRefused(ctx context.Context, v *backupView, tg model.Target, ids []string) {
	for _, id := range ids {
		if s := v.sourceByID(id); s != nil {
			if err := t.endCopies(ctx, v, s, tg, true); err != nil {
				t.Log.WithError(err).Warnf("Could not end the copies of snapshot %s, whose %s to %s was refused", id, tg.CopyName(), tg)
			}
		}
	}
}

// markForCopy writes the target's copy-requested mark (and, for a vault, the shared mark, once:
// its time is when the source was first shared, so that a vault account that cannot see the
// share is told after the listing lag) on the batch's sources with one CreateTags per set of
// marks, then re-reads them so that a source whose deletion began meanwhile is not copied (a
// deletion marks the source before it looks for copies; whichever marks first is seen by the
// other). When EC2 refuses to mark the whole batch, each source is marked on its own, and only
// those EC2 refuses fail: one snapshot that cannot be tagged holds up no other.
func (t *Tracker) markForCopy(ctx context.Context, src ec2api.EC2, v *backupView, batch []types.Snapshot, tg model.Target, requestedAt string) ([]types.Snapshot, error) {
	var firstShare, again []string
	for _, s := range batch {
		id := aws.ToString(s.SnapshotId)
		if tg.Vault() && model.TagValue(s.Tags, model.TagVaultSharedAt) == "" {
			firstShare = append(firstShare, id)
		} else {
			again = append(again, id)
		}
	}
	var ids []string
	for _, group := range []struct {
		ids   []string
		marks map[string]string
	}{
		{firstShare, map[string]string{tg.RequestedTag(): requestedAt, model.TagVaultSharedAt: requestedAt}},
		{again, map[string]string{tg.RequestedTag(): requestedAt}},
	} {
		if len(group.ids) == 0 {
			continue
		}
		kept, err := t.markGroup(ctx, src, v, group.ids, tg, group.marks)
		if err != nil {
			t.unmark(ctx, src, v, tg, ids)
			return nil, err
		}
		ids = append(ids, kept...)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	current, err := ebs.DescribeSnapshots(ctx, src, []types.Filter{{Name: aws.String("snapshot-id"), Values: ids}}, ec2api.Bounded)
	if err != nil {
		t.unmark(ctx, src, v, tg, ids)
		return nil, fmt.Errorf("re-reading the sources marked for copies: %w", err)
	}
	deleting := map[string]bool{}
	for _, s := range current {
		if model.TagValue(s.Tags, model.TagDeletionRequestedAt) != "" {
			deleting[aws.ToString(s.SnapshotId)] = true
		}
	}
	var marked []types.Snapshot
	for _, s := range batch {
		if id := aws.ToString(s.SnapshotId); slices.Contains(ids, id) && !deleting[id] {
			if now := v.sourceByID(id); now != nil {
				s = *now // with the marks just written
			}
			marked = append(marked, s)
		}
	}
	gone := slices.Collect(maps.Keys(deleting))
	v.setTag(gone, model.TagDeletionRequestedAt, "deleting")
	t.unmark(ctx, src, v, tg, gone)
	return marked, nil
}

// markGroup writes marks on the sources with these IDs and returns those marked; a transient
// failure of the whole request is returned, a refusal recorded per source.
func (t *Tracker) markGroup(ctx context.Context, src ec2api.EC2, v *backupView, ids []string, tg model.Target, marks map[string]string) ([]string, error) {
	err := t.tag(ctx, src, ids, marks)
	switch {
	case err != nil && ec2api.IsTransient(err):
		return nil, fmt.Errorf("marking copy requests: %w", err)
	case err != nil && len(ids) == 1:
		v.refuse(tg, ids[0], fmt.Sprintf("marking snapshot %s for its %s to %s refused: %v", ids[0], tg.CopyName(), tg, err))
		return nil, nil
	case err != nil:
		var kept []string
		for _, id := range ids {
			switch err := t.tag(ctx, src, []string{id}, marks); {
			case err == nil:
				kept = append(kept, id)
			case !ec2api.IsTransient(err):
				v.refuse(tg, id, fmt.Sprintf("marking snapshot %s for its %s to %s refused: %v", id, tg.CopyName(), tg, err))
			}
		}
		ids = kept
	}
	for k, val := range marks {
		v.setTag(ids, k, val)
	}
	return ids, nil
}

// tag sets tags on snapshots.
func (t *Tracker) tag(ctx context.Context, c ec2api.EC2, ids []string, tags map[string]string) error {
	in := &ec2.CreateTagsInput{Resources: ids}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		in.Tags = append(in.Tags, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	_, err := c.CreateTags(ctx, in, ec2api.Bounded)
	return err
}

// unmark clears the target's copy-requested mark of sources whose copy was not asked for.
// Without the mark the next call may ask again at once; left in place, it only delays them by
// the listing lag. A vault's shared mark stays: it goes only once the share is removed.
func (t *Tracker) unmark(ctx context.Context, c ec2api.EC2, v *backupView, tg model.Target, ids []string) {
	if len(ids) == 0 {
		return
	}
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{
		Resources: ids,
		Tags:      []types.Tag{{Key: aws.String(tg.RequestedTag())}},
	}, ec2api.Bounded); err != nil {
		t.Log.WithError(err).Warn("Could not clear copy-request marks")
		return
	}
	v.setTag(ids, tg.RequestedTag(), "")
}

// copyInput is the CopySnapshot request for src into the target, following the copy intent
// tagged on it.
func copyInput(src types.Snapshot, sourceRegion string, tg model.Target) *ec2.CopySnapshotInput {
	id := aws.ToString(src.SnapshotId)
	tags := model.CopyTags(src, sourceRegion)
	kms := model.TagValue(src.Tags, model.TagCopyKMSKeyID)
	if tg.Vault() {
		for _, kv := range [][2]string{{model.TagSourceAccount, aws.ToString(src.OwnerId)}, {model.TagVaultLock, model.TagValue(src.Tags, model.TagVaultLock)}} {
			if kv[1] != "" {
				tags = append(tags, types.Tag{Key: aws.String(kv[0]), Value: aws.String(kv[1])})
			}
		}
		kms = model.TagValue(src.Tags, model.TagVaultKMSKeyID)
	}
	in := &ec2.CopySnapshotInput{
		SourceRegion:      aws.String(sourceRegion),
		SourceSnapshotId:  src.SnapshotId,
		Description:       aws.String(truncate(fmt.Sprintf("Copy of %s from %s for Velero backup %s", id, sourceRegion, model.TagValue(src.Tags, model.TagBackup)), maxDescriptionLen)),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tags}},
	}
	if kms != "" {
		in.Encrypted = aws.Bool(true)
		in.KmsKeyId = aws.String(kms)
	}
	if m, err := strconv.Atoi(model.TagValue(src.Tags, model.TagCopyCompletionMinutes)); err == nil && m > 0 && !tg.Vault() {
		in.CompletionDurationMinutes = aws.Int32(int32(m))
	}
	return in
}
