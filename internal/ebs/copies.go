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
// first, while the destination has free slots, EC2's request rate allows and this
// description's time budget lasts. Each batch is first marked on its sources (one CreateTags),
// so a restarted plugin that cannot see a just-made copy yet waits for it instead of copying
// again; a source EC2 will not mark, or whose deletion has begun, is left out of the batch.
func (t *Tracker) fillCopySlots(ctx context.Context, v *backupView, dest string) error {
	if err := v.queued[dest]; err != nil {
		return err // asked already; the next description of EC2 tells whether slots freed up
	}
	if v.fillTimeLeft() <= 0 {
		return nil
	}
	now := t.clock.Now()
	free := min(t.copyLimit-v.inFlight(dest), copyRequestAllowance(v, dest, now))
	if free <= 0 {
		return nil
	}
	batch := v.awaitingCopy(dest, now, t.listingLag)
	if len(batch) == 0 {
		return nil
	}
	if len(batch) > free {
		batch = batch[:free]
	}
	start := t.clock.Now()
	defer func() { v.spend(t.clock.Since(start)) }()
	src, err := v.place.Clients(ctx, v.region)
	if err != nil {
		return err
	}
	dst, err := v.place.Clients(ctx, dest)
	if err != nil {
		return err
	}
	requestedAt := now.UTC().Format(time.RFC3339)
	marked, err := t.markForCopy(ctx, src, v, batch, dest, requestedAt)
	if err != nil {
		return err
	}
	var unmark []string
	var queued error
	for _, s := range marked {
		id := aws.ToString(s.SnapshotId)
		if queued != nil || t.clock.Since(start) >= v.fillTimeLeft() {
			unmark = append(unmark, id)
			continue
		}
		out, err := dst.CopySnapshot(ctx, copyInput(s, v.region), ec2api.Bounded, ec2api.RetryThrottlingOnly)
		switch {
		case err == nil:
			v.recordCopy(dest, s, aws.ToString(out.SnapshotId), now)
			t.log.Infof("Copying snapshot %s from %s to %s as %s", id, v.region, dest, aws.ToString(out.SnapshotId))
		case ec2api.IsAmbiguous(err):
			v.markRequested(id, now)
			t.log.WithError(err).Warnf("CopySnapshot of %s to %s may have taken effect; waiting for EC2 to list the copy", id, dest)
		case ec2api.Code(err) == ec2api.CodeResourceLimitExceeded || ec2api.IsThrottle(err) || ec2api.IsCredentialsFailure(err):
			queued = fmt.Errorf("EC2 queued the copy: %s", describeWait(err))
			v.queue(dest, queued)
			unmark = append(unmark, id)
		default:
			v.refuse(id, fmt.Sprintf("copy of snapshot %s to %s refused: %v", id, dest, err))
			unmark = append(unmark, id)
		}
	}
	t.unmark(ctx, src, v, unmark)
	return queued
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

// copyRequestAllowance is how many CopySnapshot requests EC2's rate allows now, judged from the
// backup's copies into dest: a bucket of B requests refilled at R per second is full again B/R
// seconds after it was empty, so at least B minus the requests of the last B/R seconds are left.
// A fresh plugin process per reconcile cannot carry a client-side bucket; the copies' start
// times can.
func copyRequestAllowance(v *backupView, dest string, now time.Time) int {
	window := time.Duration(ec2api.CopySnapshotBurst/ec2api.CopySnapshotRefill) * time.Second
	return ec2api.CopySnapshotBurst - v.copiesStartedSince(dest, now.Add(-window))
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
