package ebs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// regionalSnapshot names a snapshot and the region that holds it.
type regionalSnapshot struct{ region, id string }

func (r regionalSnapshot) String() string { return r.id + " in " + r.region }

// DeleteSnapshot deletes a snapshot Velero recorded and every copy of it. The ID may name a
// source in this location's region, or (for a location in the copy region) a source elsewhere
// or a copy here: the tags lead from each to the others. A piece already gone counts as deleted;
// one that cannot be deleted does not stop the others, and the error names each.
func (s *Snapshotter) DeleteSnapshot(ctx context.Context, snapshotID string) error {
	if !validSnapshotID(snapshotID) {
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
	var requestedAt string
	if found {
		tags := tagMap(snap.Tags)
		source.region = here
		if id := tags[TagSourceSnapshotID]; id != "" {
			source = regionalSnapshot{region: tags[TagSourceRegion], id: id}
		}
		copyRegions[tags[TagCopyToRegion]] = true
		requestedAt = tags[TagCopyRequestedAt]
	}
	var targets []regionalSnapshot
	var errs []error
	for _, region := range slices.Sorted(maps.Keys(copyRegions)) {
		if region == "" || region == source.region {
			continue
		}
		copies, err := s.copiesOf(ctx, region, source.id)
		if err == nil && len(copies) == 0 && s.copyJustRequested(requestedAt) {
			copies, err = s.awaitCopies(ctx, region, source.id)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range copies {
			targets = append(targets, regionalSnapshot{region: region, id: aws.ToString(c.SnapshotId)})
			if source.region == "" {
				source.region = tagMap(c.Tags)[TagSourceRegion]
			}
		}
	}
	if source.region == "" {
		source.region = here
	}
	targets = append(targets, source)
	for _, t := range targets {
		if err := s.deleteOne(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// copyJustRequested reports whether a source's copy-requested-at mark is recent enough that
// EC2 may not list the copy yet.
func (s *Snapshotter) copyJustRequested(requestedAt string) bool {
	at, err := time.Parse(time.RFC3339, requestedAt)
	return err == nil && s.clock.Since(at) < s.listingLag
}

// awaitCopies looks for the copies of a source for as long as EC2 may lag in listing it: a copy requested
// moments ago may not be listed yet, and deleting only the source would leak it.
func (s *Snapshotter) awaitCopies(ctx context.Context, region, sourceID string) ([]types.Snapshot, error) {
	end := s.clock.Now().Add(s.listingLag)
	for wait := time.Second; ; wait *= 2 {
		left := end.Sub(s.clock.Now())
		if left <= 0 {
			return nil, nil
		}
		if err := sleep(ctx, s.clock, min(wait, left)); err != nil {
			return nil, err
		}
		copies, err := s.copiesOf(ctx, region, sourceID)
		if err != nil || len(copies) > 0 {
			return copies, err
		}
	}
}

func (s *Snapshotter) deleteOne(ctx context.Context, t regionalSnapshot) error {
	c, err := s.clients(ctx, t.region)
	if err != nil {
		return err
	}
	_, err = c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(t.id)})
	if err != nil && !ec2api.IsNotFound(err) {
		return fmt.Errorf("deleting snapshot %s: %w", t, err)
	}
	s.log.Infof("Deleted snapshot %s", t)
	return nil
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

// copiesOf lists the copies of a source snapshot that region holds.
func (s *Snapshotter) copiesOf(ctx context.Context, region, sourceID string) ([]types.Snapshot, error) {
	c, err := s.clients(ctx, region)
	if err != nil {
		return nil, err
	}
	copies, err := describeSnapshots(ctx, c, []types.Filter{tagFilter(TagSourceSnapshotID, sourceID)})
	if err != nil {
		return nil, fmt.Errorf("looking for copies of snapshot %s in %s: %w", sourceID, region, err)
	}
	return copies, nil
}

// validSnapshotID reports whether s is snap- followed by 8 or 17 lowercase hex digits.
func validSnapshotID(s string) bool {
	hex := strings.TrimPrefix(s, "snap-")
	if hex == s || (len(hex) != 8 && len(hex) != 17) {
		return false
	}
	for _, r := range hex {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
