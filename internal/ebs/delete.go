package ebs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// regionalSnapshot names a snapshot and the region that holds it.
type regionalSnapshot struct{ region, id string }

func (r regionalSnapshot) String() string { return r.id + " in " + r.region }

// DeleteSnapshot deletes a snapshot Velero recorded and every copy of it. The ID may name a
// source in this location's region, or (for a location in the copy region) a source elsewhere
// or a copy here: the tags lead from each to the others. A piece already gone counts as deleted.
//
// The order keeps whatever a later deletion needs to find the rest: copies are looked for first
// (in every region that may hold one; if a region cannot be asked, nothing is deleted), then the
// source is deleted, and the copies only once the source is gone. A source whose copy may still
// be starting is first marked as being deleted, so that no tracker starts a copy afterwards, and a
// copy asked for just before is waited for. Other snapshots the same CreateSnapshot call made go
// with the source. Every failure is named in the error.
func (s *Snapshotter) DeleteSnapshot(ctx context.Context, snapshotID string) error {
	if !awsid.IsSnapshotID(snapshotID) {
		return fmt.Errorf("%q is not an EBS snapshot ID", snapshotID)
	}
	here := s.cfg.Region
	snap, found, err := s.describeSnapshot(ctx, here, snapshotID)
	if err != nil {
		return err
	}
	// The source's region stays unknown when this region does not hold the snapshot: then it is
	// the source of a copy here (a location in the copy region), and the copy names it.
	source := regionalSnapshot{id: snapshotID}
	copyRegions := map[string]bool{here: true, s.cfg.CopyToRegion: true}
	var src *types.Snapshot
	if found {
		tags := tagMap(snap.Tags)
		source.region = here
		if id := tags[TagSourceSnapshotID]; id != "" {
			source = regionalSnapshot{region: tags[TagSourceRegion], id: id}
		} else {
			src = &snap
		}
		copyRegions[tags[TagCopyToRegion]] = true
	}
	copies, err := s.findCopies(ctx, copyRegions, &source)
	if err != nil {
		return err
	}
	if source.region == "" {
		source.region = here
	}
	if src == nil && source.region != here {
		sn, ok, err := s.describeSnapshot(ctx, source.region, source.id)
		if err != nil {
			return fmt.Errorf("%w; nothing deleted, so that a later deletion still finds the copies of %s", err, source)
		}
		if ok {
			src = &sn
			copyRegions[tagMap(sn.Tags)[TagCopyToRegion]] = true
		}
	}
	vaultCopies, err := s.findVaultCopies(ctx, source.id, src)
	if err != nil {
		return err
	}
	var siblings []regionalSnapshot
	if src != nil {
		if copies, vaultCopies, err = s.stopCopies(ctx, source, src, copies, vaultCopies); err != nil {
			return err
		}
		siblings, err = s.siblings(ctx, source, src)
		if err != nil {
			return err
		}
	}
	if err := s.deleteOne(ctx, s.clients, source); err != nil {
		return fmt.Errorf("%w; its copies are kept, so that a later deletion still finds them", err)
	}
	var errs []error
	for _, t := range append(siblings, copies...) {
		if err := s.deleteOne(ctx, s.clients, t); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range vaultCopies {
		if err := s.deleteVaultCopy(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// findCopies lists the copies of source in regions, learning the source's region from a copy
// when it is unknown.
func (s *Snapshotter) findCopies(ctx context.Context, regions map[string]bool, source *regionalSnapshot) ([]regionalSnapshot, error) {
	var out []regionalSnapshot
	var errs []error
	for _, region := range slices.Sorted(maps.Keys(regions)) {
		if region == "" || region == source.region {
			continue
		}
		copies, err := copiesOf(ctx, s.clients, region, source.id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range copies {
			out = append(out, regionalSnapshot{region: region, id: aws.ToString(c.SnapshotId)})
			if source.region == "" {
				source.region = tagMap(c.Tags)[TagSourceRegion]
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w; nothing deleted, so that a later deletion still finds every copy of %s", err, source.id)
	}
	return out, nil
}

// stopCopies makes sure no copy (or vault copy) of a source that has none yet starts after its
// deletion: it marks the source, then reads its copy-requested marks again; a copy asked for
// within EC2's listing lag is waited for and added to copies (or vaultCopies).
func (s *Snapshotter) stopCopies(ctx context.Context, source regionalSnapshot, src *types.Snapshot, copies, vaultCopies []regionalSnapshot) ([]regionalSnapshot, []regionalSnapshot, error) {
	dest, vaultRegion := tagValue(src.Tags, TagCopyToRegion), tagValue(src.Tags, TagVaultRegion)
	needCopy := dest != "" && len(copies) == 0
	needVault := vaultRegion != "" && len(vaultCopies) == 0 && s.vault != nil
	if !needCopy && !needVault || src.State != types.SnapshotStateCompleted {
		return copies, vaultCopies, nil
	}
	c, err := s.clients(ctx, source.region)
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: []string{source.id},
		Tags:      []types.Tag{{Key: aws.String(TagDeletionRequestedAt), Value: aws.String(s.clock.Now().UTC().Format(time.RFC3339))}},
	}); err != nil && !ec2api.IsNotFound(err) {
		s.log.WithError(err).Warnf("Could not mark snapshot %s as being deleted; looking for a copy started meanwhile", source)
	}
	again, ok, err := s.describeSnapshot(ctx, source.region, source.id)
	if err != nil || !ok {
		return copies, vaultCopies, err
	}
	if needCopy && s.copyJustRequested(tagValue(again.Tags, TagCopyRequestedAt)) {
		if copies, err = s.awaitCopies(ctx, s.clients, dest, source.id); err != nil {
			return nil, nil, err
		}
	}
	if needVault && s.copyJustRequested(tagValue(again.Tags, TagVaultRequestedAt)) {
		if vaultCopies, err = s.awaitCopies(ctx, s.vault, vaultRegion, source.id); err != nil {
			return nil, nil, err
		}
	}
	return copies, vaultCopies, nil
}

// siblings lists the other snapshots made by the CreateSnapshot call that made src, when that
// call marked src as the recorded one (it may have made more than one).
func (s *Snapshotter) siblings(ctx context.Context, source regionalSnapshot, src *types.Snapshot) ([]regionalSnapshot, error) {
	tags := tagMap(src.Tags)
	token := tags[TagCreateToken]
	if tags[TagRecorded] != recordedTrue || token == "" {
		return nil, nil
	}
	c, err := s.clients(ctx, source.region)
	if err != nil {
		return nil, err
	}
	snaps, err := describeSnapshots(ctx, c, []types.Filter{tagFilter(TagCreateToken, token)})
	if err != nil {
		return nil, fmt.Errorf("looking for other snapshots made with %s: %w", source, err)
	}
	var out []regionalSnapshot
	for _, sn := range snaps {
		if id := aws.ToString(sn.SnapshotId); id != source.id {
			out = append(out, regionalSnapshot{region: source.region, id: id})
		}
	}
	return out, nil
}

// copyJustRequested reports whether a source's copy-requested-at mark is recent enough that
// EC2 may not list the copy yet.
func (s *Snapshotter) copyJustRequested(requestedAt string) bool {
	at, err := time.Parse(time.RFC3339, requestedAt)
	return err == nil && s.clock.Since(at) < s.listingLag
}

// awaitCopies looks for the copies of a source in region, through clients, for as long as EC2
// may lag in listing them: a copy requested moments ago may not be listed yet, and deleting only
// the source would leak it.
func (s *Snapshotter) awaitCopies(ctx context.Context, clients ec2api.Regional, region, sourceID string) ([]regionalSnapshot, error) {
	end := s.clock.Now().Add(s.listingLag)
	for wait := time.Second; ; wait *= 2 {
		left := end.Sub(s.clock.Now())
		if left <= 0 {
			return nil, nil
		}
		if err := sleep(ctx, s.clock, min(wait, left)); err != nil {
			return nil, err
		}
		copies, err := copiesOf(ctx, clients, region, sourceID)
		if err != nil || len(copies) > 0 {
			return inRegion(region, copies), err
		}
	}
}

// inRegion names snaps as snapshots of region.
func inRegion(region string, snaps []types.Snapshot) []regionalSnapshot {
	out := make([]regionalSnapshot, len(snaps))
	for i, sn := range snaps {
		out[i] = regionalSnapshot{region: region, id: aws.ToString(sn.SnapshotId)}
	}
	return out
}

// deleteOne deletes a snapshot through clients. One whose lock has not expired is kept (see
// keep), not reported as a failed deletion that Velero would report at every try until the lock
// ends.
func (s *Snapshotter) deleteOne(ctx context.Context, clients ec2api.Regional, t regionalSnapshot) error {
	c, err := clients(ctx, t.region)
	if err != nil {
		return err
	}
	_, err = c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(t.id)})
	switch {
	case err == nil || ec2api.IsNotFound(err):
		s.log.Infof("Deleted snapshot %s", t)
		return nil
	case ec2api.IsTransient(err):
		return fmt.Errorf("deleting snapshot %s: %w", t, err)
	}
	if lock, lerr := lockOf(ctx, c, t.id); lerr == nil && locked(lock.LockState) {
		s.keep(ctx, c, t, fmt.Sprintf("its %s lock lasts until %s", lock.LockState, aws.ToTime(lock.LockExpiresOn).UTC().Format(time.RFC3339)))
		return nil
	}
	return fmt.Errorf("deleting snapshot %s: %w", t, err)
}

// describeSnapshot returns one snapshot by ID; found is false when EC2 does not know it.
func (s *Snapshotter) describeSnapshot(ctx context.Context, region, id string) (types.Snapshot, bool, error) {
	c, err := s.clients(ctx, region)
	if err != nil {
		return types.Snapshot{}, false, err
	}
	out, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{id}})
	if ec2api.IsNotFound(err) || err == nil && len(out.Snapshots) == 0 {
		return types.Snapshot{}, false, nil
	}
	if err != nil {
		return types.Snapshot{}, false, fmt.Errorf("describing snapshot %s in %s: %w", id, region, err)
	}
	return out.Snapshots[0], true, nil
}

// copiesOf lists the copies of a source snapshot that region holds, seen through clients.
func copiesOf(ctx context.Context, clients ec2api.Regional, region, sourceID string) ([]types.Snapshot, error) {
	c, err := clients(ctx, region)
	if err != nil {
		return nil, err
	}
	copies, err := describeSnapshots(ctx, c, []types.Filter{tagFilter(TagSourceSnapshotID, sourceID)})
	if err != nil {
		return nil, fmt.Errorf("looking for copies of snapshot %s in %s: %w", sourceID, region, err)
	}
	return copies, nil
}
