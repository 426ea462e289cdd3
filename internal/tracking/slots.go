package tracking

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// copyRequestWindow is how long EC2's CopySnapshot request bucket takes to fill up again from
// empty: a bucket of B requests refilled at R per second is full B/R seconds after it was.
const copyRequestWindow = time.Duration(ec2api.CopySnapshotBurst/ec2api.CopySnapshotRefill) * time.Second

// slotKey names one account's copies into one target, as one location's credentials (or its
// vault's) see them.
type slotKey struct {
	location string
	tg       model.Target
}

// fill is what starting copies into one target found: the account's slots it judged from, and
// why it started none, when it could not ask EC2; for a vault, what confirming the vault
// credentials' account decided.
type fill struct {
	slots *copySlots
	err   error
	vault vaultCheck
}

// copySlots is what EC2 lists of one account's copies in flight into one destination region,
// plus the copies this process asked for that EC2 does not list yet. EC2's quota of concurrent
// copies per destination region and its CopySnapshot request rate belong to the account, shared
// by every backup waiting at once (of this install or another) and by other tools, so free
// slots are judged from this, never from one backup's copies. It owns its state: only its
// methods change it.
//
// Which pending snapshots are copies: EC2 reports a TransferType ("standard" or "time-based")
// only for snapshots made by CopySnapshot ("Only for snapshot copies", EC2 API reference), and
// the plugin tags its own copies with TagSourceSnapshotID. A pending snapshot with neither is a
// CreateSnapshot under way in that region and is not counted: counting it would stop every copy
// into a region where the account also takes snapshots (a cluster there backing up the other
// way) for as long as those run, while a copy missed only costs a ResourceLimitExceeded answer,
// which queues the copy. The volume ID EC2 gives copies is documented as arbitrary, so it is not
// used to tell them apart.
type copySlots struct {
	cycle
	place ebs.Place
	tg    model.Target

	pending  []types.Snapshot     // the account's copies in flight into the target, as last listed
	listed   map[string]bool      // source IDs of the plugin's copies among them
	unlisted map[string]time.Time // source ID -> when this process asked for its copy, until EC2 lists it
	queued   error                // why EC2 queued a copy into the target since the last listing
}

func newCopySlots(place ebs.Place, tg model.Target, clk clock.Clock) *copySlots {
	return &copySlots{cycle: cycle{clock: clk}, place: place, tg: tg, unlisted: map[string]time.Time{}}
}

// load lists the account's pending snapshots in the destination (one paginated
// DescribeSnapshots) when the last listing is older than ttl, and keeps the copies.
func (a *copySlots) load(ctx context.Context, ttl, listingLag time.Duration) error {
	return a.refresh(ttl, func() error { return a.list(ctx, listingLag) })
}

func (a *copySlots) list(ctx context.Context, listingLag time.Duration) error {
	c, _, err := a.place.ClientsFor(ctx, a.tg)
	if err != nil {
		return err
	}
	pendingOnly := types.Filter{Name: aws.String("status"), Values: []string{string(types.SnapshotStatePending)}}
	snaps, err := ebs.DescribeSnapshots(ctx, c, []types.Filter{pendingOnly}, ec2api.Bounded)
	if err != nil {
		return fmt.Errorf("describing the account's pending copies in %s %s: %w", a.tg, a.place.Where(), err)
	}
	a.pending = slices.DeleteFunc(snaps, func(s types.Snapshot) bool { return !isCopy(s) })
	a.listed = map[string]bool{}
	for _, s := range a.pending {
		if src := model.TagMap(s.Tags)[model.TagSourceSnapshotID]; src != "" {
			a.listed[src] = true
		}
	}
	now := a.clock.Now()
	for src, at := range a.unlisted {
		if a.listed[src] || now.Sub(at) >= listingLag {
			delete(a.unlisted, src)
		}
	}
	a.queued = nil
	return nil
}

// isCopy reports whether s was made by CopySnapshot (see copySlots).
func isCopy(s types.Snapshot) bool {
	return s.TransferType != "" || model.TagMap(s.Tags)[model.TagSourceSnapshotID] != ""
}

// inFlight counts the account's copies into the destination in flight: those listed, and those
// this process asked for that EC2 does not list yet.
func (a *copySlots) inFlight() int { return len(a.pending) + len(a.unlisted) }

// startedSince counts the account's copies into the destination started at or after t, among
// those inFlight counts.
func (a *copySlots) startedSince(t time.Time) int {
	n := 0
	for _, s := range a.pending {
		if !aws.ToTime(s.StartTime).Before(t) {
			n++
		}
	}
	for _, at := range a.unlisted {
		if !at.Before(t) {
			n++
		}
	}
	return n
}

// started records that this process asked for a copy of the source with this ID, made or of
// unknown outcome; it counts until EC2 lists it or the listing lag has passed.
func (a *copySlots) started(sourceID string, at time.Time) { a.unlisted[sourceID] = at }

// queue records that EC2 queued a copy into the destination: no copy is asked for until the
// next listing.
func (a *copySlots) queue(why error) { a.queued = why }

// copyRequestAllowance is how many CopySnapshot requests EC2's rate allows now: at least the
// bucket's size less the requests of the last copyRequestWindow. Those are judged from the
// copies started in that window: the account's in flight, and the backup's that finished
// already (a listing of pending snapshots misses those). A fresh plugin process per reconcile
// cannot carry a client-side bucket; the copies' start times can.
func copyRequestAllowance(v *backupView, a *copySlots, now time.Time) int {
	return ec2api.CopySnapshotBurst - recentCopyRequests(v, a, now)
}

// recentCopyRequests counts the CopySnapshot requests into the destination judged to be in the
// last copyRequestWindow (see copyRequestAllowance).
func recentCopyRequests(v *backupView, a *copySlots, now time.Time) int {
	since := now.Add(-copyRequestWindow)
	return a.startedSince(since) + v.finishedCopiesStartedSince(a.tg, since)
}

// slotCounts says how many copies are in flight into the destination: in the account, and of
// the backup.
func slotCounts(v *backupView, a *copySlots) string {
	return fmt.Sprintf("%d copies in flight in the account, %d of this backup", a.inFlight(), v.inFlight(a.tg))
}

// slotNote is slotCounts in parentheses after a space, or nothing without a listing of the
// account.
func slotNote(v *backupView, a *copySlots) string {
	if a == nil {
		return ""
	}
	return " (" + slotCounts(v, a) + ")"
}

// slotWait says why the copy of a source that may be copied is not started: no copy slot is
// free in the account, EC2's request rate is spent, or this description's time for starting
// copies is. Without a listing of the account (nothing of the backup awaited a copy), it says
// only what the backup shows.
func slotWait(v *backupView, a *copySlots, srcID string, tg model.Target, now time.Time, copyLimit int) string {
	switch {
	case a == nil && v.inFlight(tg) >= copyLimit:
		return fmt.Sprintf("waiting for a copy slot in %s (%d copies of this backup in flight, EC2's limit)", tg, v.inFlight(tg))
	case a == nil:
		return fmt.Sprintf("waiting to copy %s to %s (%d copies of this backup in flight)", srcID, tg, v.inFlight(tg))
	case a.inFlight() >= copyLimit:
		return "waiting for a copy slot in " + tg.String() + slotNote(v, a)
	case copyRequestAllowance(v, a, now) <= 0:
		return fmt.Sprintf("waiting for EC2's CopySnapshot request rate in %s (%d copies started in the last %s; %s)",
			tg, recentCopyRequests(v, a, now), copyRequestWindow, slotCounts(v, a))
	default:
		return fmt.Sprintf("waiting to copy %s to %s: this reconcile's time for starting copies is spent%s", srcID, tg, slotNote(v, a))
	}
}
