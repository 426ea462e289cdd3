package ebs

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// viewKey names one backup's view: the backup (by name and UID), the source region, and the
// location whose credentials describe it.
type viewKey struct{ region, backup, uid, location string }

// backupView is what EC2 holds for one backup in one source region, seen with one location's
// credentials: the snapshots tagged with the backup's name by volume, and their copies by
// destination region, as described at one moment; plus what this process has learnt and done
// since. It owns all of that state: only its methods change it.
type backupView struct {
	cycle
	place  Place
	region string
	id     backupIdentity

	sources   map[string][]types.Snapshot            // volume ID -> snapshots tagged with the backup's name
	byID      map[string]*types.Snapshot             // source ID -> its snapshot in sources
	owns      int                                    // how many of the sources the backup owns
	copies    map[string]map[string][]types.Snapshot // destination -> source ID -> copies
	pending   map[string]int                         // destination -> copies still pending
	finished  map[string][]time.Time                 // destination -> start times of the copies no longer pending, earliest first
	queue     *copyQueue                             // the sources that may await a copy
	fillSpent time.Duration                          // time spent starting copies since the last description

	requested map[string]time.Time // source ID -> when this process asked for a copy EC2 does not list yet
	refused   map[string]string    // source ID -> why its copy cannot be made
	claimed   map[string]bool      // source IDs an operation of this process follows
	cancelled map[string]bool      // source IDs whose operation Velero cancelled
	deleted   map[string]bool      // strays this process deleted
}

func newBackupView(place Place, region string, id backupIdentity, clk clock.Clock) *backupView {
	return &backupView{
		cycle: cycle{clock: clk}, place: place, region: region, id: id,
		requested: map[string]time.Time{}, refused: map[string]string{},
		claimed: map[string]bool{}, cancelled: map[string]bool{}, deleted: map[string]bool{},
	}
}

// load describes the backup's snapshots in the source region, then their copies in every region
// the sources name (one paginated DescribeSnapshots per region), when the last description is
// older than ttl.
func (v *backupView) load(ctx context.Context, ttl, listingLag time.Duration) error {
	return v.refresh(ttl, func() error { return v.describe(ctx, listingLag) })
}

func (v *backupView) describe(ctx context.Context, listingLag time.Duration) error {
	c, err := v.place.Clients(ctx, v.region)
	if err != nil {
		return err
	}
	snaps, err := describeSnapshots(ctx, c, []types.Filter{tagFilter(TagBackup, v.id.name)}, ec2api.Bounded)
	if err != nil {
		return fmt.Errorf("describing the snapshots of backup %s in %s %s: %w", v.id.name, v.region, v.place.where(), err)
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
		dc, err := v.place.Clients(ctx, d)
		if err != nil {
			return err
		}
		found, err := describeSnapshots(ctx, dc, []types.Filter{tagFilter(TagBackup, v.id.name), tagFilter(TagSourceRegion, v.region)}, ec2api.Bounded)
		if err != nil {
			return fmt.Errorf("describing the copies of backup %s in %s %s: %w", v.id.name, d, v.place.where(), err)
		}
		copies[d] = map[string][]types.Snapshot{}
		for _, cp := range found {
			src := tagMap(cp.Tags)[TagSourceSnapshotID]
			copies[d][src] = append(copies[d][src], cp)
		}
	}
	v.sources, v.copies, v.fillSpent = sources, copies, 0
	v.index()
	now := v.clock.Now()
	for id, at := range v.requested {
		if v.copyOf(id) != nil || now.Sub(at) >= listingLag {
			delete(v.requested, id)
		}
	}
	return nil
}

// index derives from a new description what each Progress call would otherwise walk every
// snapshot for: the sources by ID, how many the backup owns, the copies' counts by destination
// and the sources that may await a copy.
func (v *backupView) index() {
	v.byID, v.owns, v.queue = map[string]*types.Snapshot{}, 0, newCopyQueue()
	for _, ss := range v.sources {
		for i := range ss {
			s := &ss[i]
			v.byID[aws.ToString(s.SnapshotId)] = s
			if v.id.owns(s) {
				v.owns++
			}
		}
	}
	for _, s := range v.byID {
		if dest := tagValue(s.Tags, TagCopyToRegion); dest != "" && s.State == types.SnapshotStateCompleted {
			v.queue.add(s, dest, v.claimed[aws.ToString(s.SnapshotId)] || v.id.hasUID(s) && v.onlyTaggedOfItsPV(s))
		}
	}
	v.queue.sort()
	v.pending, v.finished = map[string]int{}, map[string][]time.Time{}
	for dest, bySource := range v.copies {
		for _, cs := range bySource {
			for _, c := range cs {
				if c.State == types.SnapshotStatePending {
					v.pending[dest]++
				} else {
					v.finished[dest] = append(v.finished[dest], aws.ToTime(c.StartTime))
				}
			}
		}
		slices.SortFunc(v.finished[dest], time.Time.Compare)
	}
}

// resolveOp finds the snapshot op follows among the volume's, and claims it for copying.
func (v *backupView) resolveOp(op Operation, window time.Duration) resolution {
	res := resolve(candidates(v.sources[op.VolumeID], op, v.id, window), op.Issued)
	if res.source != nil {
		id := aws.ToString(res.source.SnapshotId)
		v.claimed[id] = true
		v.queue.claim(id, tagValue(res.source.Tags, TagCopyToRegion))
	}
	return res
}

// owned counts the snapshots of the backup this view lists, over every volume.
func (v *backupView) owned() int { return v.owns }

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
	n := v.pending[dest]
	for id := range v.requested {
		if s := v.sourceByID(id); s != nil && tagValue(s.Tags, TagCopyToRegion) == dest && v.copyOf(id) == nil {
			n++
		}
	}
	return n
}

// finishedCopiesStartedSince counts the backup's copies into dest started at or after t that
// are no longer pending.
func (v *backupView) finishedCopiesStartedSince(dest string, t time.Time) int {
	starts := v.finished[dest]
	i, _ := slices.BinarySearchFunc(starts, t, time.Time.Compare)
	return len(starts) - i
}

func (v *backupView) sourceByID(id string) *types.Snapshot { return v.byID[id] }

// copyVerdict says whether this process may start the copy of s, a completed source an
// operation follows.
func (v *backupView) copyVerdict(s *types.Snapshot, now time.Time, lag time.Duration) verdict {
	id := aws.ToString(s.SnapshotId)
	switch {
	case v.copyOf(id) != nil || v.refused[id] != "" || v.cancelled[id] ||
		tagValue(s.Tags, TagCopyCancelled) != "" || tagValue(s.Tags, TagDeletionRequestedAt) != "":
		return copyNever
	case v.recentlyRequested(s, now, lag):
		return copyLater
	}
	return copyNow
}

// onlyTaggedOfItsPV reports whether s is the one snapshot of its volume and PV carrying the
// backup's UID, or the one of them marked recorded.
func (v *backupView) onlyTaggedOfItsPV(s *types.Snapshot) bool {
	pvName := tagValue(s.Tags, TagPV)
	res := resolve(candidates(v.sources[aws.ToString(s.VolumeId)], Operation{PV: pvName}, v.id, 0), time.Time{})
	return res.source != nil && aws.ToString(res.source.SnapshotId) == aws.ToString(s.SnapshotId)
}

// awaitingCopy returns up to limit sources bound for dest whose copy this process may start,
// oldest first.
func (v *backupView) awaitingCopy(dest string, now time.Time, lag time.Duration, limit int) []types.Snapshot {
	return v.queue.take(dest, limit, func(s *types.Snapshot) verdict { return v.copyVerdict(s, now, lag) })
}

// recentlyRequested reports whether a copy of s was asked for within lag of now.
func (v *backupView) recentlyRequested(s *types.Snapshot, now time.Time, lag time.Duration) bool {
	if at, ok := v.requested[aws.ToString(s.SnapshotId)]; ok && now.Sub(at) < lag {
		return true
	}
	at, err := time.Parse(time.RFC3339, tagValue(s.Tags, TagCopyRequestedAt))
	return err == nil && now.Sub(at) < lag
}

// setTag sets (or, with an empty value, removes) a tag on the cached sources with these IDs,
// as EC2 now holds it.
func (v *backupView) setTag(ids []string, key, value string) {
	for _, id := range ids {
		setTag(v.sourceByID(id), key, value)
	}
}

// recordCopy adds a copy this process just started to the cached view, so the rest of the
// reconcile counts it, and keeps it counted as requested until EC2 lists it.
func (v *backupView) recordCopy(dest string, src types.Snapshot, copyID string, now time.Time) {
	if v.copies[dest] == nil {
		v.copies[dest] = map[string][]types.Snapshot{}
	}
	srcID := aws.ToString(src.SnapshotId)
	v.requested[srcID] = now
	v.pending[dest]++
	v.copies[dest][srcID] = append(v.copies[dest][srcID], types.Snapshot{
		SnapshotId: aws.String(copyID),
		State:      types.SnapshotStatePending,
		Progress:   aws.String("0%"),
		StartTime:  aws.Time(now),
		Tags:       copyTags(src, v.region),
	})
}

// markRequested records a copy request whose outcome is unknown.
func (v *backupView) markRequested(id string, at time.Time) { v.requested[id] = at }

// refuse records why a source's copy cannot be made; its operation fails with it.
func (v *backupView) refuse(id, why string) { v.refused[id] = why }

// cancel records that the operation following id was cancelled.
func (v *backupView) cancel(id string) { v.cancelled[id] = true }

// forgetStray records that a stray snapshot was deleted.
func (v *backupView) forgetStray(id string) { v.deleted[id] = true }

// spend adds time spent starting copies to this description's budget.
func (v *backupView) spend(d time.Duration) { v.fillSpent += d }

// fillTimeLeft is how much of this description's budget for starting copies is left.
func (v *backupView) fillTimeLeft() time.Duration { return fillBudget - v.fillSpent }
