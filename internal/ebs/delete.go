package ebs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

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
	source := regionalSnapshot{region: here, id: snapshotID}
	copyRegions := map[string]bool{here: true, s.cfg.CopyToRegion: true}
	if found {
		tags := tagMap(snap.Tags)
		if id := tags[TagSourceSnapshotID]; id != "" {
			source = regionalSnapshot{region: tags[TagSourceRegion], id: id}
		}
		copyRegions[tags[TagCopyToRegion]] = true
	}
	var targets []regionalSnapshot
	for region := range copyRegions {
		if region == "" || region == source.region {
			continue
		}
		copies, err := s.copiesOf(ctx, region, source.id)
		if err != nil {
			return err
		}
		for _, c := range copies {
			targets = append(targets, regionalSnapshot{region: region, id: aws.ToString(c.SnapshotId)})
			if !found && region == here {
				// Velero recorded the source's ID, and this location holds only its copy.
				source.region = tagMap(c.Tags)[TagSourceRegion]
			}
		}
	}
	if source.region != "" {
		targets = append(targets, source)
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].String() < targets[j].String() })
	var errs []error
	for _, t := range targets {
		if err := s.deleteOne(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
