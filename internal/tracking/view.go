package tracking

import (
	"context"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// viewKey names one backup's view: the backup (by name and UID), the source region, and the
// location whose credentials describe it.
type viewKey struct{ region, backup, uid, location string }

// vaultCheck is what confirming the vault credentials' account decided: wrong (they are another
// account's) fails the vault phase; unconfirmed (STS refused to name their account) fails it
// unless a vault copy is under way; wait (STS did not answer) delays it; none of them when the
// account is the vault's (or is not checked).
type vaultCheck struct{ wrong, unconfirmed, wait string }

func (c vaultCheck) ok() bool { return c.wrong == "" && c.unconfirmed == "" && c.wait == "" }

// backupView is what EC2 holds for one backup in one source region, seen with one location's
// credentials: the snapshots tagged with the backup's name by volume, their copies by target
// (the copy region, the vault account) and the vault copies' locks, as described at one moment;
// plus what this process has learnt and done since. It owns all of that state: only its
// methods change it.
type backupView struct {
	cycle
	place  ebs.Place
	region string
	id     model.BackupIdentity

	sources   map[string][]types.Snapshot                  // volume ID -> snapshots tagged with the backup's name
	byID      map[string]*types.Snapshot                   // source ID -> its snapshot in sources
	recorded  int                                          // distinct recorded sources of this backup (see recordedSources)
	unnamed   int                                          // sources of the backup's name without its UID
	copies    map[model.Target]map[string][]types.Snapshot // target -> source ID -> copies
	locks     map[string]types.LockState                   // vault copy ID -> its lock's state, when locked
	strangers map[model.Target]string                      // vault -> another account owning what the vault credentials list
	checks    map[model.Target]vaultCheck                  // vault -> what confirming its credentials' account decided, this description
	pending   map[model.Target]int                         // target -> copies still pending
	finished  map[model.Target][]time.Time                 // target -> start times of the copies no longer pending, earliest first
	queue     *copyQueue                                   // the sources that may await a copy
	fillSpent time.Duration                                // time spent starting copies since the last description

	requested map[model.Target]map[string]time.Time // source ID -> when this process asked for a copy EC2 does not list yet
	refused   map[model.Target]map[string]string    // source ID -> why its copy cannot be made
	claimed   map[string]bool                       // source IDs an operation of this process follows
	followed  map[string]bool                       // source IDs an operation follows or certainly will, this description
	ended     map[string]bool                       // source IDs whose operation this process reported ended
	deleted   map[string]bool                       // strays this process deleted
	timeout   time.Duration                         // the backup's item-operation timeout; 0 when unknown
	// createWindow is how long before a snapshot started its operation may have been opened.
	createWindow time.Duration
	cancelled    map[string]bool // source IDs whose operation Velero cancelled
}

func newBackupView(place ebs.Place, region string, id model.BackupIdentity, clk clock.Clock) *backupView {
	return &backupView{
		cycle: cycle{clock: clk}, place: place, region: region, id: id,
		requested: map[model.Target]map[string]time.Time{}, refused: map[model.Target]map[string]string{},
		claimed: map[string]bool{}, followed: map[string]bool{}, ended: map[string]bool{}, cancelled: map[string]bool{}, deleted: map[string]bool{},
	}
}

// load describes the backup's snapshots in the source region, then their copies in every target
// the sources name (one paginated DescribeSnapshots per target) and the vault copies' locks,
// when the last description is older than ttl.
func (v *backupView) load(ctx context.Context, ttl, listingLag time.Duration) error {
	return v.refresh(ttl, func() error { return v.describe(ctx, listingLag) })
}

// describe reads the backup's snapshots (readBackup) and takes what the read shows as the
// view's description (classifyBackup), forgetting the copy requests the read lists or that a
// listing lag before it began would list.
func (v *backupView) describe(ctx context.Context, listingLag time.Duration) error {
	r, err := readBackup(ctx, v.place, v.region, v.id.Name, v.clock.Now())
	if err != nil {
		return err
	}
	v.sources, v.copies, v.strangers = classifyBackup(r)
	v.locks, v.fillSpent = r.locks, 0
	v.checks = map[model.Target]vaultCheck{}
	v.index()
	for tg, ids := range v.requested {
		for id, at := range ids {
			if v.copyOf(tg, id) != nil || r.began.Sub(at) >= listingLag {
				delete(ids, id)
			}
		}
	}
	return nil
}

// classifyBackup sorts what a read of the backup showed: the sources by volume (the snapshots
// that are no copy), the copies by target and source, and, per vault target, an account other
// than the vault's that owns a snapshot there (its credentials are not the vault's: none of
// what they list is a vault copy).
func classifyBackup(r backupRead) (sources map[string][]types.Snapshot, copies map[model.Target]map[string][]types.Snapshot, strangers map[model.Target]string) {
	sources, copies, strangers = map[string][]types.Snapshot{}, map[model.Target]map[string][]types.Snapshot{}, map[model.Target]string{}
	for _, sn := range r.listed {
		if model.TagValue(sn.Tags, model.TagSourceSnapshotID) != "" {
			continue
		}
		vol := aws.ToString(sn.VolumeId)
		sources[vol] = append(sources[vol], sn)
	}
	for tg, found := range r.copies {
		copies[tg] = map[string][]types.Snapshot{}
		for _, cp := range found {
			if owner := aws.ToString(cp.OwnerId); tg.Vault() && owner != tg.Account {
				strangers[tg] = owner // never a vault copy: the vault credentials are another account's
				continue
			}
			src := model.TagValue(cp.Tags, model.TagSourceSnapshotID)
			copies[tg][src] = append(copies[tg][src], cp)
		}
	}
	return sources, copies, strangers
}

// index derives from a new description what each Progress call would otherwise walk every
// snapshot for: the sources by ID, how many recorded sources of the backup EC2 lists, the
// copies' counts by target and the sources that may await a copy.
func (v *backupView) index() {
	v.byID, v.followed, v.queue = map[string]*types.Snapshot{}, map[string]bool{}, newCopyQueue()
	var all []*types.Snapshot
	for _, ss := range v.sources {
		for i := range ss {
			s := &ss[i]
			v.byID[aws.ToString(s.SnapshotId)] = s
			all = append(all, s)
		}
	}
	v.recorded, v.unnamed = v.id.RecordedSources(all)
	for _, s := range v.byID {
		if s.State != types.SnapshotStateCompleted {
			continue
		}
		id := aws.ToString(s.SnapshotId)
		if v.claimed[id] || v.id.HasUID(s) && v.onlyTaggedOfItsPV(s) {
			v.followed[id] = true
		}
		for _, tg := range model.TargetsOf(s) {
			v.queue.add(s, tg)
		}
	}
	v.queue.sort()
	v.pending, v.finished = map[model.Target]int{}, map[model.Target][]time.Time{}
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
func (v *backupView) resolveOp(op model.Operation, window time.Duration) model.Resolution {
	res := model.Resolve(model.Candidates(v.sources[op.VolumeID], op, v.id, window), op.Issued)
	if res.Source != nil {
		id := aws.ToString(res.Source.SnapshotId)
		v.claimed[id], v.followed[id] = true, true
		v.queue.claim(id)
	}
	return res
}

// recordedCount is how many distinct recorded sources of the backup this view lists, over every
// volume, and how many snapshots of the backup's name without its UID it lists besides.
func (v *backupView) recordedCount() (recorded, unnamed int) { return v.recorded, v.unnamed }

// copyOf returns a source's copy in the target: a completed one, else a pending one, else a
// failed one.
func (v *backupView) copyOf(tg model.Target, sourceID string) *types.Snapshot {
	return preferred(v.copies[tg][sourceID], types.SnapshotStatePending, types.SnapshotStateError)
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

// inFlight counts the backup's copies into the target that are still pending, including those
// requested by this process that EC2 does not list yet.
func (v *backupView) inFlight(tg model.Target) int {
	n := v.pending[tg]
	for id := range v.requested[tg] {
		if v.copyOf(tg, id) == nil {
			n++
		}
	}
	return n
}

// finishedCopiesStartedSince counts the backup's copies into the target started at or after t
// that are no longer pending.
func (v *backupView) finishedCopiesStartedSince(tg model.Target, t time.Time) int {
	starts := v.finished[tg]
	i, _ := slices.BinarySearchFunc(starts, t, time.Time.Compare)
	return len(starts) - i
}

func (v *backupView) sourceByID(id string) *types.Snapshot { return v.byID[id] }

// end records that the operation following the source with this ID has ended: no copy of it
// is started afterwards.
func (v *backupView) end(id string) { v.ended[id] = true }

// setOperationTimeout records the backup's item-operation timeout, as the Backup passed says, and
// how long before a snapshot started its operation may have been opened (the create window).
func (v *backupView) setOperationTimeout(d, createWindow time.Duration) {
	v.timeout, v.createWindow = d, createWindow
}

// timedOut reports whether Velero's item-operation timeout may have passed for the operation of
// source s: Velero cancels it a timeout after it was opened, which was up to the create window
// before s started (its CreateSnapshot riding out EC2's limits; the window holds the clock-skew
// margin). From then on its copy is never started, whether or not Cancel could mark the source:
// a copy that late could not complete before the timeout. A timeout shorter than four create
// windows keeps three quarters of it for the copy: there, the source of an operation whose
// CreateSnapshot took longer than a quarter of it is kept from a copy by Cancel's mark alone.
func (v *backupView) timedOut(s *types.Snapshot, now time.Time) bool {
	return v.timeout > 0 && now.After(aws.ToTime(s.StartTime).Add(v.timeout-model.CopyStartMargin(v.timeout, v.createWindow)))
}

// onlyTaggedOfItsPV reports whether s is the one snapshot of its volume and PV carrying the
// backup's UID, or the one of them marked recorded: the source its PV's operation follows,
// whether or not it is asked about in this process.
func (v *backupView) onlyTaggedOfItsPV(s *types.Snapshot) bool {
	pvName := model.TagValue(s.Tags, model.TagPV)
	res := model.Resolve(model.Candidates(v.sources[aws.ToString(s.VolumeId)], model.Operation{PV: pvName}, v.id, 0), time.Time{})
	return res.Source != nil && aws.ToString(res.Source.SnapshotId) == aws.ToString(s.SnapshotId)
}

// awaitingCopy returns up to limit sources bound for the target whose copy judge lets this
// process start, oldest first.
func (v *backupView) awaitingCopy(tg model.Target, limit int, judge func(*types.Snapshot) verdict) []types.Snapshot {
	return v.queue.take(tg, limit, judge)
}

// recentlyRequested reports whether a copy of s into the target was asked for within lag of
// now: pass the time the view's description began (seenAt), since a copy asked for a lag before
// the description ended may still be missing from it.
func (v *backupView) recentlyRequested(s *types.Snapshot, tg model.Target, now time.Time, lag time.Duration) bool {
	if at, ok := v.requested[tg][aws.ToString(s.SnapshotId)]; ok && now.Sub(at) < lag {
		return true
	}
	at, err := time.Parse(time.RFC3339, model.TagValue(s.Tags, tg.RequestedTag()))
	return err == nil && now.Sub(at) < lag
}

// refusal is why the source's copy into the target cannot be made; "" when it can.
func (v *backupView) refusal(tg model.Target, id string) string { return v.refused[tg][id] }

// setTag sets (or, with an empty value, removes) a tag on the cached sources with these IDs,
// as EC2 now holds it.
func (v *backupView) setTag(ids []string, key, value string) {
	for _, id := range ids {
		model.SetTag(v.sourceByID(id), key, value)
	}
}

// recordCopy adds a copy this process just started to the cached view, so the rest of the
// reconcile counts it, and keeps it counted as requested until EC2 lists it.
func (v *backupView) recordCopy(tg model.Target, src types.Snapshot, copyID string, tags []types.Tag, now time.Time) {
	if v.copies[tg] == nil {
		v.copies[tg] = map[string][]types.Snapshot{}
	}
	srcID := aws.ToString(src.SnapshotId)
	v.markRequested(tg, srcID, now)
	v.pending[tg]++
	v.copies[tg][srcID] = append(v.copies[tg][srcID], types.Snapshot{
		SnapshotId: aws.String(copyID),
		State:      types.SnapshotStatePending,
		Progress:   aws.String("0%"),
		StartTime:  aws.Time(now),
		Tags:       tags,
	})
}

// markRequested records a copy request into the target whose outcome is unknown.
func (v *backupView) markRequested(tg model.Target, id string, at time.Time) {
	if v.requested[tg] == nil {
		v.requested[tg] = map[string]time.Time{}
	}
	v.requested[tg][id] = at
}

// refuse records why a source's copy into the target cannot be made; its operation fails with it.
func (v *backupView) refuse(tg model.Target, id, why string) {
	if v.refused[tg] == nil {
		v.refused[tg] = map[string]string{}
	}
	v.refused[tg][id] = why
}

// stranger is the account, not the vault's, owning snapshots the vault credentials list as the
// backup's vault copies; "" when there is none.
func (v *backupView) stranger(tg model.Target) string { return v.strangers[tg] }

// ownsVaultCopy reports whether the vault credentials list a vault copy of the backup that the
// vault account owns: what they list is their account's own.
func (v *backupView) ownsVaultCopy(tg model.Target) bool {
	for _, cps := range v.copies[tg] {
		for _, cp := range cps {
			if aws.ToString(cp.OwnerId) == tg.Account {
				return true
			}
		}
	}
	return false
}

// vaultChecked returns what confirming the vault credentials' account decided since the last
// description, if it was asked.
func (v *backupView) vaultChecked(tg model.Target) (vaultCheck, bool) {
	c, ok := v.checks[tg]
	return c, ok
}

// recordVaultCheck records what confirming the vault credentials' account decided, so that the
// other operations of a reconcile hear the same answer instead of each asking STS again.
func (v *backupView) recordVaultCheck(tg model.Target, c vaultCheck) { v.checks[tg] = c }

// recordLock records the state of a vault copy's lock EC2 just reported.
func (v *backupView) recordLock(copyID string, state types.LockState) { v.locks[copyID] = state }

// cancel records that the operation following id was cancelled.
func (v *backupView) cancel(id string) { v.cancelled[id] = true }

// lockState is the vault copy's lock as last seen; "" when it has none.
func (v *backupView) lockState(copyID string) types.LockState { return v.locks[copyID] }

// forgetStray records that a stray snapshot was deleted.
func (v *backupView) forgetStray(id string) { v.deleted[id] = true }

// spend adds time spent starting copies to this description's budget.
func (v *backupView) spend(d time.Duration) { v.fillSpent += d }

// fillTimeLeft is how much of this description's budget for starting copies is left.
func (v *backupView) fillTimeLeft() time.Duration { return ebs.FillBudget - v.fillSpent }
