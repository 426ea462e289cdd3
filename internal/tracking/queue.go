package tracking

import (
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// verdict is whether a source waiting in a copyQueue may be copied now.
type verdict int

const (
	// copyNow: nothing stands in the way of its copy.
	copyNow verdict = iota
	// copyLater: not now (its copy was just asked for), maybe later in the same description.
	copyLater
	// copyNever: ruled out until the next description (it has a copy, or its copy is refused,
	// cancelled or its deletion has begun).
	copyNever
	// copyOnClaim: not until an operation claims it (no operation follows it yet; a stray never).
	copyOnClaim
)

// copyQueue holds, per target, the completed sources of one description whose copy
// this process may start, oldest first. Sources ruled out are dropped as a walk meets them, and
// those waiting for an operation's claim set aside, so that each of a reconcile's Progress calls
// looks at only the few sources it starts or skips, however large the backup: a walk over every
// source in each call made a reconcile's cost grow with the square of its operations. It judges
// nothing itself: the judge passed to take does. It owns its state: only its methods change it.
type copyQueue struct {
	// ready holds, per target, the sources not yet ruled out nor set aside, oldest first.
	ready map[model.Target][]*types.Snapshot
	// unclaimed holds, by ID and target, the sources a walk set aside until an operation claims
	// them: they rejoin ready then.
	unclaimed map[string]map[model.Target]*types.Snapshot
}

func newCopyQueue() *copyQueue {
	return &copyQueue{ready: map[model.Target][]*types.Snapshot{}, unclaimed: map[string]map[model.Target]*types.Snapshot{}}
}

// add queues a completed source bound for the target.
func (q *copyQueue) add(s *types.Snapshot, tg model.Target) {
	q.ready[tg] = append(q.ready[tg], s)
}

// sort orders every target's sources oldest first; add leaves them unordered.
func (q *copyQueue) sort() {
	for _, ss := range q.ready {
		slices.SortFunc(ss, olderFirst)
	}
}

// claim moves the source with this ID, claimed by an operation, back into ready when a walk set
// it aside.
func (q *copyQueue) claim(id string) {
	for tg, s := range q.unclaimed[id] {
		ss := q.ready[tg]
		i, _ := slices.BinarySearchFunc(ss, s, olderFirst)
		q.ready[tg] = slices.Insert(ss, i, s)
	}
	delete(q.unclaimed, id)
}

// take returns up to limit of the target's sources that judge lets be copied now, oldest first,
// drops those it rules out and sets aside those waiting for a claim.
func (q *copyQueue) take(tg model.Target, limit int, judge func(*types.Snapshot) verdict) []types.Snapshot {
	var out []types.Snapshot
	ss := q.ready[tg]
	kept := ss[:0]
	i := 0
	for ; i < len(ss) && len(out) < limit; i++ {
		switch judge(ss[i]) {
		case copyNow:
			out = append(out, *ss[i])
			kept = append(kept, ss[i])
		case copyLater:
			kept = append(kept, ss[i])
		case copyOnClaim:
			id := aws.ToString(ss[i].SnapshotId)
			if q.unclaimed[id] == nil {
				q.unclaimed[id] = map[model.Target]*types.Snapshot{}
			}
			q.unclaimed[id][tg] = ss[i]
		}
	}
	q.ready[tg] = append(kept, ss[i:]...)
	return out
}

// olderFirst orders snapshots by start time, then ID.
func olderFirst(a, b *types.Snapshot) int {
	if c := aws.ToTime(a.StartTime).Compare(aws.ToTime(b.StartTime)); c != 0 {
		return c
	}
	return strings.Compare(aws.ToString(a.SnapshotId), aws.ToString(b.SnapshotId))
}
