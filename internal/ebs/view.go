package ebs

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// backupView is what EC2 holds for one backup in one source region: its snapshots by volume and
// their copies by destination region, as described at one moment, plus what this process has
// done since (copies requested, copies refused).
type backupView struct {
	region, backup string
	fetched        time.Time // when the last description succeeded
	loadErr        error     // why the last description failed, if it did
	loadFailed     time.Time
	sources        map[string][]types.Snapshot            // volume ID -> snapshots of the backup
	copies         map[string]map[string][]types.Snapshot // destination -> source ID -> copies
	requested      map[string]time.Time                   // source ID -> when this process asked for a copy EC2 does not list yet
	refused        map[string]string                      // source ID -> why EC2 refused to copy it
	queued         map[string]error                       // destination -> why EC2 queued copies since the last load
}

// load describes the backup's snapshots in the source region, then their copies in every region
// the sources name: one paginated DescribeSnapshots per region.
func (t *Tracker) load(ctx context.Context, v *backupView) error {
	c, err := t.clients(ctx, v.region)
	if err != nil {
		return err
	}
	snaps, err := describeSnapshots(ctx, c, []types.Filter{tagFilter(TagBackup, v.backup)}, ec2api.FewAttempts)
	if err != nil {
		return fmt.Errorf("describing the snapshots of backup %s in %s: %w", v.backup, v.region, err)
	}
	sources := map[string][]types.Snapshot{}
	destinations := map[string]bool{}
	for _, sn := range snaps {
		tags := tagMap(sn.Tags)
		if tags[TagSourceSnapshotID] != "" {
			continue
		}
		vol := aws.ToString(sn.VolumeId)
		sources[vol] = append(sources[vol], sn)
		if d := tags[TagCopyToRegion]; d != "" {
			destinations[d] = true
		}
	}
	copies := map[string]map[string][]types.Snapshot{}
	for d := range destinations {
		dc, err := t.clients(ctx, d)
		if err != nil {
			return err
		}
		found, err := describeSnapshots(ctx, dc, []types.Filter{tagFilter(TagBackup, v.backup), tagFilter(TagSourceRegion, v.region)}, ec2api.FewAttempts)
		if err != nil {
			return fmt.Errorf("describing the copies of backup %s in %s: %w", v.backup, d, err)
		}
		copies[d] = map[string][]types.Snapshot{}
		for _, cp := range found {
			src := tagMap(cp.Tags)[TagSourceSnapshotID]
			copies[d][src] = append(copies[d][src], cp)
		}
	}
	v.sources, v.copies, v.fetched = sources, copies, t.clock.Now()
	v.queued = map[string]error{}
	for id, at := range v.requested {
		if v.copyOf(id) != nil || v.fetched.Sub(at) >= t.listingLag {
			delete(v.requested, id)
		}
	}
	return nil
}

// source returns the volume's snapshot for the backup: the earliest that did not fail, else
// the earliest.
func (v *backupView) source(volumeID string) *types.Snapshot {
	return preferred(v.sources[volumeID], types.SnapshotStateError)
}

// copyOf returns a source's copy in its destination: a completed one, else a pending one, else
// a failed one.
func (v *backupView) copyOf(sourceID string) *types.Snapshot {
	for _, byDest := range v.copies {
		if cs := byDest[sourceID]; len(cs) > 0 {
			if c := preferred(cs, types.SnapshotStatePending, types.SnapshotStateError); c != nil {
				return c
			}
		}
	}
	return nil
}

// preferred returns the earliest snapshot in the best state: states listed later are worse,
// and unlisted ones are best.
func preferred(snaps []types.Snapshot, worse ...types.SnapshotState) *types.Snapshot {
	rank := func(s types.SnapshotState) int {
		for i, w := range worse {
			if s == w {
				return i + 1
			}
		}
		return 0
	}
	var best *types.Snapshot
	for i := range snaps {
		s := &snaps[i]
		if best == nil || rank(s.State) < rank(best.State) ||
			rank(s.State) == rank(best.State) && aws.ToTime(s.StartTime).Before(aws.ToTime(best.StartTime)) {
			best = s
		}
	}
	return best
}

// inFlight counts the backup's copies into dest that are still pending, including those
// requested by this process that EC2 does not list yet.
func (v *backupView) inFlight(dest string) int {
	n := 0
	for _, cs := range v.copies[dest] {
		for _, c := range cs {
			if c.State == types.SnapshotStatePending {
				n++
			}
		}
	}
	for id := range v.requested {
		if s := v.sourceByID(id); s != nil && tagMap(s.Tags)[TagCopyToRegion] == dest {
			n++
		}
	}
	return n
}

// copiesStartedSince counts the backup's copies into dest started at or after t.
func (v *backupView) copiesStartedSince(dest string, t time.Time) int {
	n := 0
	for _, cs := range v.copies[dest] {
		for _, c := range cs {
			if !aws.ToTime(c.StartTime).Before(t) {
				n++
			}
		}
	}
	return n
}

func (v *backupView) sourceByID(id string) *types.Snapshot {
	for _, ss := range v.sources {
		for i := range ss {
			if aws.ToString(ss[i].SnapshotId) == id {
				return &ss[i]
			}
		}
	}
	return nil
}

// awaitingCopy returns the completed sources bound for dest that have no copy, were not
// refused, and were not asked for within lag (by this process, or by any, per the source's
// copy-requested-at tag), oldest first.
func (v *backupView) awaitingCopy(dest string, now time.Time, lag time.Duration) []types.Snapshot {
	var out []types.Snapshot
	for vol := range v.sources {
		s := v.source(vol)
		id := aws.ToString(s.SnapshotId)
		tags := tagMap(s.Tags)
		if s.State != types.SnapshotStateCompleted || tags[TagCopyToRegion] != dest ||
			v.copyOf(id) != nil || v.refused[id] != "" || v.recentlyRequested(s, now, lag) {
			continue
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		ti, tj := aws.ToTime(out[i].StartTime), aws.ToTime(out[j].StartTime)
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return aws.ToString(out[i].SnapshotId) < aws.ToString(out[j].SnapshotId)
	})
	return out
}

// recentlyRequested reports whether a copy of s was asked for within lag of now.
func (v *backupView) recentlyRequested(s *types.Snapshot, now time.Time, lag time.Duration) bool {
	if at, ok := v.requested[aws.ToString(s.SnapshotId)]; ok && now.Sub(at) < lag {
		return true
	}
	at, err := time.Parse(time.RFC3339, tagMap(s.Tags)[TagCopyRequestedAt])
	return err == nil && now.Sub(at) < lag
}
