package ebs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// maxDescriptionLen is EC2's limit on a snapshot's description.
const maxDescriptionLen = 255

// fillCopySlots starts copies into dest for the sources the backup's operations follow, oldest
// first, while the account has free copy slots in dest, EC2's request rate allows and this
// description's time budget lasts; it returns the account's copies into dest it judged from
// (nil when nothing of the backup awaits a copy there: then EC2 is not asked). Each batch is
// first marked on its sources (one CreateTags), so a restarted plugin that cannot see a
// just-made copy yet waits for it instead of copying again; a source EC2 will not mark, or
// whose deletion has begun, is left out of the batch.
//
// Between backups waiting at once, free slots go first come, first served: the backup whose
// Progress call finds them takes as many as it has sources ready. Which other backups wait is
// not known from EC2 without listing every source of the account, so no backup holds slots back
// for others (that would leave them idle). The turns are fair all the same: Velero's operations
// controller reconciles waiting backups one after another every sync period, in the order its
// informer cache lists them, which Go's map iteration makes different every period.
func (t *Tracker) fillCopySlots(ctx context.Context, v *backupView, dest string) (*copySlots, error) {
	now := t.clock.Now()
	if len(v.awaitingCopy(dest, now, t.listingLag, 1)) == 0 {
		return nil, nil
	}
	a, err := t.accountSlots(ctx, v.place, dest)
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
	batch := v.awaitingCopy(dest, now, t.listingLag, free)
	start := t.clock.Now()
	defer func() { v.spend(t.clock.Since(start)) }()
	src, err := v.place.Clients(ctx, v.region)
	if err != nil {
		return a, err
	}
	dst, err := v.place.Clients(ctx, dest)
	if err != nil {
		return a, err
	}
	requestedAt := now.UTC().Format(time.RFC3339)
	marked, err := t.markForCopy(ctx, src, v, batch, dest, requestedAt)
	if err != nil {
		return a, err
	}
	var unmark []string
	for _, s := range marked {
		id := aws.ToString(s.SnapshotId)
		if a.queued != nil || t.clock.Since(start) >= v.fillTimeLeft() {
			unmark = append(unmark, id)
			continue
		}
		out, err := dst.CopySnapshot(ctx, copyInput(s, v.region), ec2api.Bounded, ec2api.RetryThrottlingOnly)
		switch {
		case err == nil:
			v.recordCopy(dest, s, aws.ToString(out.SnapshotId), now)
			a.started(id, now)
			t.log.Infof("Copying snapshot %s from %s to %s as %s", id, v.region, dest, aws.ToString(out.SnapshotId))
		case ec2api.IsAmbiguous(err):
			v.markRequested(id, now)
			a.started(id, now)
			t.log.WithError(err).Warnf("CopySnapshot of %s to %s may have taken effect; waiting for EC2 to list the copy", id, dest)
		case ec2api.Code(err) == ec2api.CodeResourceLimitExceeded || ec2api.IsThrottle(err) || ec2api.IsCredentialsFailure(err):
			a.queue(fmt.Errorf("EC2 queued the copy: %s", describeWait(err)))
			unmark = append(unmark, id)
		default:
			v.refuse(id, fmt.Sprintf("copy of snapshot %s to %s refused: %v", id, dest, err))
			unmark = append(unmark, id)
		}
	}
	t.unmark(ctx, src, v, unmark)
	return a, a.queued
}

// describeWait names why EC2 made the plugin wait: its error code, or the credential failure.
func describeWait(err error) string {
	if c := ec2api.Code(err); c != "" {
		return c
	}
	return err.Error()
}

// markForCopy writes the copy-requested mark on the batch's sources with one CreateTags, then
// re-reads them so that a source whose deletion began meanwhile is not copied (a deletion marks
// the source before it looks for copies; whichever marks first is seen by the other). When EC2
// refuses to mark the whole batch, each source is marked on its own, and only those EC2 refuses
// fail: one snapshot that cannot be tagged holds up no other.
func (t *Tracker) markForCopy(ctx context.Context, src ec2api.EC2, v *backupView, batch []types.Snapshot, dest, requestedAt string) ([]types.Snapshot, error) {
	ids := make([]string, len(batch))
	for i, s := range batch {
		ids[i] = aws.ToString(s.SnapshotId)
	}
	err := t.tag(ctx, src, ids, TagCopyRequestedAt, requestedAt)
	switch {
	case err != nil && ec2api.IsTransient(err):
		return nil, fmt.Errorf("marking copy requests: %w", err)
	case err != nil && len(ids) == 1:
		v.refuse(ids[0], fmt.Sprintf("marking snapshot %s for its copy to %s refused: %v", ids[0], dest, err))
		return nil, nil
	case err != nil:
		var kept []string
		for _, id := range ids {
			switch err := t.tag(ctx, src, []string{id}, TagCopyRequestedAt, requestedAt); {
			case err == nil:
				kept = append(kept, id)
			case !ec2api.IsTransient(err):
				v.refuse(id, fmt.Sprintf("marking snapshot %s for its copy to %s refused: %v", id, dest, err))
			}
		}
		ids = kept
	}
	v.setTag(ids, TagCopyRequestedAt, requestedAt)
	if len(ids) == 0 {
		return nil, nil
	}
	current, err := describeSnapshots(ctx, src, []types.Filter{{Name: aws.String("snapshot-id"), Values: ids}}, ec2api.Bounded)
	if err != nil {
		t.unmark(ctx, src, v, ids)
		return nil, fmt.Errorf("re-reading the sources marked for copies: %w", err)
	}
	deleting := map[string]bool{}
	for _, s := range current {
		if tagMap(s.Tags)[TagDeletionRequestedAt] != "" {
			deleting[aws.ToString(s.SnapshotId)] = true
		}
	}
	var marked []types.Snapshot
	for _, s := range batch {
		if id := aws.ToString(s.SnapshotId); slices.Contains(ids, id) && !deleting[id] {
			marked = append(marked, s)
		}
	}
	gone := slices.Collect(maps.Keys(deleting))
	v.setTag(gone, TagDeletionRequestedAt, "deleting")
	t.unmark(ctx, src, v, gone)
	return marked, nil
}

// tag sets one tag on snapshots.
func (t *Tracker) tag(ctx context.Context, c ec2api.EC2, ids []string, key, value string) error {
	_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: ids,
		Tags:      []types.Tag{{Key: aws.String(key), Value: aws.String(value)}},
	}, ec2api.Bounded)
	return err
}

// unmark clears the copy-requested mark of sources whose copy was not asked for. Without the
// mark the next call may ask again at once; left in place, it only delays them by the listing lag.
func (t *Tracker) unmark(ctx context.Context, c ec2api.EC2, v *backupView, ids []string) {
	if len(ids) == 0 {
		return
	}
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{
		Resources: ids,
		Tags:      []types.Tag{{Key: aws.String(TagCopyRequestedAt)}},
	}, ec2api.Bounded); err != nil {
		t.log.WithError(err).Warn("Could not clear copy-request marks")
		return
	}
	v.setTag(ids, TagCopyRequestedAt, "")
}

// copyInput is the CopySnapshot request for src, following the copy intent tagged on it.
func copyInput(src types.Snapshot, sourceRegion string) *ec2.CopySnapshotInput {
	tags := tagMap(src.Tags)
	id := aws.ToString(src.SnapshotId)
	in := &ec2.CopySnapshotInput{
		SourceRegion:      aws.String(sourceRegion),
		SourceSnapshotId:  src.SnapshotId,
		Description:       aws.String(truncate(fmt.Sprintf("Copy of %s from %s for Velero backup %s", id, sourceRegion, tags[TagBackup]), maxDescriptionLen)),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: copyTags(src, sourceRegion)}},
	}
	if k := tags[TagCopyKMSKeyID]; k != "" {
		in.Encrypted = aws.Bool(true)
		in.KmsKeyId = aws.String(k)
	}
	if m, err := strconv.Atoi(tags[TagCopyCompletionMinutes]); err == nil && m > 0 {
		in.CompletionDurationMinutes = aws.Int32(int32(m))
	}
	return in
}

// setTag sets (or, with an empty value, removes) a tag on a cached snapshot.
func setTag(s *types.Snapshot, key, value string) {
	if s == nil {
		return
	}
	s.Tags = slices.DeleteFunc(slices.Clone(s.Tags), func(t types.Tag) bool { return aws.ToString(t.Key) == key })
	if value != "" {
		s.Tags = append(s.Tags, types.Tag{Key: aws.String(key), Value: aws.String(value)})
	}
}
