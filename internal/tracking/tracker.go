// Package tracking takes a backup's snapshots and follows each, and its copies into the copy
// region and the vault account, to its end: the VolumeSnapshotter's CreateSnapshot, and the
// BackupItemAction's Progress and Cancel. Each call reads EC2, decides in pure functions
// (decide*.go), then acts on what they return.
package tracking

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// percentUnits is the unit of reported progress: each phase (snapshot, copy) counts 100.
const percentUnits = "%"

// Tracker follows each volume's snapshot, and its copy into another region, to completion. It
// follows exactly the snapshot CreateSnapshot returned to Velero: one of the operation's PV and
// volume, of this backup (by UID, or by the time window the operation was opened in), never a
// snapshot of another backup of the same name. It starts copies as sources complete, keeping
// every copy slot of a destination busy, and keeps no state that matters across calls: each
// backup's snapshots are described at most once per cache lifetime and shared by every
// operation of that backup, and so are the account's copies in flight into a destination.
//
// Each Progress and Cancel reads EC2 through those cached descriptions, decides with the pure
// functions of decide.go (of what it read, the operation, Velero's record of the backup, the
// settings and the time) what to report and which requests to make, then makes them within the
// description's time budget.
type Tracker struct {
	clients ec2api.Regional
	ebs.Settings

	mu    sync.Mutex
	views map[viewKey]*backupView
	slots map[slotKey]*copySlots
}

// NewTracker returns a Tracker that reaches EC2 through clients, or through the locations a
// Locator (WithLocator) finds.
func NewTracker(clients ec2api.Regional, opts ...ebs.Option) *Tracker {
	return &Tracker{clients: clients, Settings: ebs.NewSettings(opts), views: map[viewKey]*backupView{}, slots: map[slotKey]*copySlots{}}
}

// Progress reports an operation. EC2 being slow, throttling or failing, and credentials that
// cannot be had yet, never fail the operation: it is reported as still in progress, with the
// reason.
func (t *Tracker) Progress(ctx context.Context, operationID string, backup *velerov1.Backup) (velero.OperationProgress, error) {
	op, err := model.ParseOperationID(operationID)
	if err != nil {
		return velero.OperationProgress{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := velero.OperationProgress{Updated: t.Clock.Now(), OperationUnits: percentUnits}
	l, err := t.lookup(ctx, op, backup)
	if err != nil {
		p.Completed = true
		p.Err = err.Error()
		return p, nil
	}
	unnamedPV := ""
	var foreign velero.OperationProgress
	var foreignDecided bool
	if l.view != nil && l.res.Source != nil {
		foreign, foreignDecided = decideForeignSource(op, l.res.Source, l.view.place, backup.Spec.VolumeSnapshotLocations, decideCfgOf(t.Settings), p)
		unnamedPV = decideUnnamedPV(op, l.res.Source, backup.Status, l, decideCfgOf(t.Settings), p.Updated)
	}
	switch {
	case unnamedPV != "":
		p.Description = unnamedPV
	case foreignDecided:
		p = foreign
	case l.view != nil && l.res.Source != nil && neverReturned(op, l.res.Source, backup.Status):
		t.deleteStrays(ctx, l.view, l.res.Strays)
		var del bool
		if p, del = decideUnreturned(op, l.res.Source, backup.Status, decideCfgOf(t.Settings), p); del {
			// Until the snapshot is gone the operation stays open, so that a later call (or
			// Cancel at the item-operation timeout) deletes it: nothing else would.
			if err := t.deleteUnreturned(ctx, l.view, l.res.Source); err != nil {
				p.Completed, p.Err = false, ""
				p.Description = fmt.Sprintf("%v; trying again (it was made by a CreateSnapshot that returned an error to Velero)", err)
			}
		}
	case l.view != nil && l.res.Source != nil:
		t.deleteStrays(ctx, l.view, l.res.Strays)
		p = t.report(ctx, l.view, op, l.res.Source, p)
	default:
		p = decideUnresolved(op, backup.Status, backup.Name, l, decideCfgOf(t.Settings), p)
	}
	if l.note != "" && !p.Completed {
		p.Description += " (" + l.note + ")"
	}
	if p.Completed && l.view != nil && l.res.Source != nil {
		l.view.end(aws.ToString(l.res.Source.SnapshotId))
	}
	return p, nil
}

// lookup finds the operation's snapshot in the places of its backup and region.
func (t *Tracker) lookup(ctx context.Context, op model.Operation, backup *velerov1.Backup) (lookup, error) {
	places := ebs.FixedPlace(t.clients, t.Vault)
	if t.Locator != nil {
		var err error
		if places, err = t.Locator.BackupPlaces(ctx, backup, op.Region); err != nil {
			return lookup{}, err
		}
	}
	var l lookup
	id := model.IdentityOf(backup)
	if t.Install != nil {
		id.Install = t.Install()
	}
	for _, pl := range places {
		if l.note == "" {
			l.note = pl.Note
		}
		if pl.Config != nil {
			if _, err := model.ParseConfig(pl.Config); err != nil {
				l.badConfig = append(l.badConfig, fmt.Sprintf("location %s: %v", pl.Location, err))
			}
		}
		v, err := t.view(ctx, pl, op.Region, id)
		if v != nil {
			v.setOperationTimeout(backup.Spec.ItemOperationTimeout.Duration, t.CreateWindow())
		}
		switch {
		case err != nil && ec2api.IsTransient(err):
			l.waiting = append(l.waiting, err)
			continue
		case err != nil:
			l.refused = append(l.refused, err)
			continue
		}
		r, u := v.recordedCount()
		l.recorded, l.unnamed = l.recorded+r, l.unnamed+u
		l.where = pl.Where()
		if res := v.resolveOp(op, t.CreateWindow()); res.Source != nil || len(res.Ambiguous) > 0 {
			l.view, l.res = v, res
			return l, nil
		}
	}
	return l, nil
}

// report reports an operation whose snapshot is known, starting copies on the way. Each
// phase counts 100 units: the snapshot, then its copy and its vault copy when asked for. Every
// decision of one report is made at one time, p.Updated: when the call began.
func (t *Tracker) report(ctx context.Context, v *backupView, op model.Operation, src *types.Snapshot, p velero.OperationProgress) velero.OperationProgress {
	now := p.Updated
	srcID := aws.ToString(src.SnapshotId)
	targets := model.TargetsOf(src)
	p.Started = aws.ToTime(src.StartTime)
	p.NTotal = 100 * int64(1+len(targets))
	fills := make([]fill, len(targets))
	for i, tg := range targets {
		if tg.Vault() {
			if fills[i].vault = t.checkVaultAccount(ctx, v, tg); !fills[i].vault.ok() {
				continue // nothing is shared before the vault account is confirmed
			}
		}
		fills[i].slots, fills[i].err = t.fillCopySlots(ctx, v, tg, now)
	}
	if cur := v.sourceByID(srcID); cur != nil { // as marked by the fill
		src = cur
	}
	p, settled := decideSource(op, src, p)
	if settled {
		return p
	}
	phases := make([]phase, len(targets))
	for i, tg := range targets {
		phases[i] = t.copyPhase(ctx, v, src, tg, fills[i], now)
	}
	for _, i := range decideAbandon(targets, phases) {
		phases[i] = t.abandonVault(ctx, v, src, targets[i], phases[i])
	}
	return decideReport(op, srcID, phases, p)
}

// Cancel stops the operation's copy for good. The source is marked first, so that no Progress
// call starts its copy again (without the mark no fill copies a source past its timeout rule's
// bound, see timedOut); then its share with a vault is removed and, within the
// reconcile's time for EC2 requests, a copy still pending is deleted (a locked one stays).
// The source snapshot belongs to the backup and goes with it, and so does a pending copy left
// for lack of time.
func (t *Tracker) Cancel(ctx context.Context, operationID string, backup *velerov1.Backup) error {
	op, err := model.ParseOperationID(operationID)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l, err := t.lookup(ctx, op, backup)
	if err != nil {
		return err
	}
	if l.view == nil || l.res.Source == nil {
		return errors.Join(append(l.refused, l.waiting...)...)
	}
	v, src := l.view, l.res.Source
	plan := decideCancel(v, op, src, backup.Status, decideCfgOf(t.Settings), t.Clock.Now())
	if plan.deleteUnreturned {
		return t.timed(v, func() error { return t.deleteUnreturned(ctx, v, src) })
	}
	if !plan.markCancelled {
		return nil
	}
	srcID := aws.ToString(src.SnapshotId)
	v.cancel(srcID)
	var errs []error
	if err := t.timed(v, func() error { return t.markCancelled(ctx, v, srcID) }); err != nil {
		errs = append(errs, err)
	}
	for _, st := range plan.steps {
		if err := t.cancelStep(ctx, v, src, st); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// markCancelled writes the cancelled mark on the source.
func (t *Tracker) markCancelled(ctx context.Context, v *backupView, srcID string) error {
	c, err := v.place.Clients(ctx, v.region)
	if err == nil {
		err = t.tag(ctx, c, []string{srcID}, map[string]string{model.TagCopyCancelled: t.Clock.Now().UTC().Format(time.RFC3339)})
	}
	if err != nil {
		return fmt.Errorf("marking snapshot %s as cancelled (no copy of it is started past Velero's item-operation timeout all the same): %w", srcID, err)
	}
	v.setTag([]string{srcID}, model.TagCopyCancelled, t.Clock.Now().UTC().Format(time.RFC3339))
	return nil
}

// cancelStep removes a vault's share of the source, always (nothing may stay shared), or
// deletes a pending copy, while the reconcile's time for EC2 requests lasts.
func (t *Tracker) cancelStep(ctx context.Context, v *backupView, src *types.Snapshot, st cancelStep) error {
	if st.unshare {
		return t.timed(v, func() error { return t.unshare(ctx, v, src, st.tg) })
	}
	if v.fillTimeLeft() <= 0 {
		return fmt.Errorf("pending %s %s in %s left to complete (%s); it is deleted with its backup", st.tg.CopyName(), st.copyID, st.tg, budgetSpent)
	}
	return t.timed(v, func() error {
		dc, ok, err := v.place.ClientsFor(ctx, st.tg)
		if err != nil || !ok {
			return err
		}
		if _, err := dc.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(st.copyID)}, ec2api.Bounded); err != nil && !ec2api.IsNotFound(err) {
			return fmt.Errorf("deleting pending %s %s in %s: %w", st.tg.CopyName(), st.copyID, st.tg, err)
		}
		t.Log.Infof("Cancelled: deleted pending %s %s of %s in %s", st.tg.CopyName(), st.copyID, aws.ToString(src.SnapshotId), st.tg)
		return nil
	})
}

// deleteStrays deletes snapshots the CreateSnapshot call of an operation made besides the one
// it returned to Velero: nobody else would, and they would be leaked.
func (t *Tracker) deleteStrays(ctx context.Context, v *backupView, strays []types.Snapshot) {
	for _, s := range strays {
		id := aws.ToString(s.SnapshotId)
		if v.deleted[id] {
			continue
		}
		c, err := v.place.Clients(ctx, v.region)
		if err == nil {
			_, err = c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: s.SnapshotId}, ec2api.Bounded)
		}
		if err != nil && !ec2api.IsNotFound(err) {
			t.Log.WithError(err).Warnf("Could not delete snapshot %s, made besides the one Velero recorded; trying again later", id)
			continue
		}
		v.forgetStray(id)
		t.Log.Infof("Deleted snapshot %s of volume %s: made by the same CreateSnapshot as the one Velero recorded", id, aws.ToString(s.VolumeId))
	}
}

// deleteUnreturned deletes a source whose CreateSnapshot returned an error to Velero; an error
// says why it could not be deleted yet.
func (t *Tracker) deleteUnreturned(ctx context.Context, v *backupView, src *types.Snapshot) error {
	id := aws.ToString(src.SnapshotId)
	c, err := v.place.Clients(ctx, v.region)
	if err == nil {
		_, err = c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: src.SnapshotId}, ec2api.Bounded)
	}
	if err != nil && !ec2api.IsNotFound(err) {
		return fmt.Errorf("deleting snapshot %s, which Velero recorded as failed, in %s: %w", id, v.region, err)
	}
	t.Log.Infof("Deleted snapshot %s of volume %s: its CreateSnapshot returned an error to Velero, which recorded no snapshot", id, aws.ToString(src.VolumeId))
	return nil
}

// view returns the backup's snapshots in region as place sees them, described again when the
// cached description is older than the cache lifetime. A failed description is cached as
// well, so the other operations of a reconcile do not each ask a throttling EC2 again.
func (t *Tracker) view(ctx context.Context, place ebs.Place, region string, id model.BackupIdentity) (*backupView, error) {
	key := viewKey{region: region, backup: id.Name, uid: id.UID, location: place.Location}
	v, ok := t.views[key]
	if !ok {
		v = newBackupView(place, region, id, t.Clock)
		t.views[key] = v
	}
	if err := v.load(ctx, t.CacheTTL, t.ListingLag); err != nil {
		return nil, err
	}
	return v, nil
}

// accountSlots returns the account's copies in flight into the target as place sees them, listed again
// when the cached listing is older than the cache lifetime; a failed listing is cached as well.
func (t *Tracker) accountSlots(ctx context.Context, place ebs.Place, tg model.Target) (*copySlots, error) {
	key := slotKey{location: place.Location, tg: tg}
	a, ok := t.slots[key]
	if !ok {
		a = newCopySlots(place, tg, t.Clock)
		t.slots[key] = a
	}
	if err := a.load(ctx, t.CacheTTL, t.ListingLag); err != nil {
		return nil, err
	}
	return a, nil
}

// maxDescriptionLen is EC2's limit on a snapshot's description.
const maxDescriptionLen = 255

// fillCopySlots starts copies into the target for the sources of the backup decideFill lets be
// copied (any an operation follows, not only the one of the call: one batch each time), oldest first, while the target account has free copy slots in the target region, EC2's
// request rate allows and this description's time budget lasts; it returns the account's copies
// into the target it judged from (nil when nothing of the backup awaits a copy there, or its own
// copies in flight fill every slot: then EC2 is not asked). Each batch is first marked on its sources (one CreateTags), so a restarted
// plugin that cannot see a just-made copy yet waits for it instead of copying again; a source EC2
// will not mark, or whose deletion has begun, is left out of the batch. A vault copy's source is
// shared with the vault account first (the report asks only once the vault credentials'
// account is confirmed), and copied with the vault's credentials.
//
// Between backups waiting at once, free slots go first come, first served: the backup whose
// Progress call finds them takes as many as it has sources ready. Which other backups wait is
// not known from EC2 without listing every source of the account, so no backup holds slots back
// for others (that would leave them idle). The turns are fair all the same: Velero's operations
// controller reconciles waiting backups one after another every sync period, in the order its
// informer cache lists them, which Go's map iteration makes different every period.
func (t *Tracker) fillCopySlots(ctx context.Context, v *backupView, tg model.Target, now time.Time) (*copySlots, error) {
	judge := func(s *types.Snapshot) verdict { return decideFill(fillFactsOf(v, s, tg, now, t.ListingLag)) }
	if tg.Vault() && v.place.Vault == nil || v.inFlight(tg) >= t.CopyLimit || len(v.awaitingCopy(tg, 1, judge)) == 0 {
		return nil, nil // the backup's own copies fill the account's slots, or none awaits
	}
	a, err := t.accountSlots(ctx, v.place, tg)
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
	batch := v.awaitingCopy(tg, free, judge)
	// The requests begin now: their marks and records say so, never an earlier time, or a
	// later call would take a copy made within the listing lag for one never asked for.
	start := t.Clock.Now()
	defer func() { v.spend(t.Clock.Since(start)) }()
	src, err := v.place.Clients(ctx, v.region)
	if err != nil {
		return a, err
	}
	dst, _, err := v.place.ClientsFor(ctx, tg)
	if err != nil {
		return a, err
	}
	requestedAt := start.UTC().Format(time.RFC3339)
	marked, err := t.markForCopy(ctx, src, v, batch, tg, requestedAt)
	if err != nil {
		return a, err
	}
	var unmark, refused []string
	var shareErr error // why a source could not be shared yet
	for _, s := range marked {
		id := aws.ToString(s.SnapshotId)
		if a.queued != nil || t.Clock.Since(start) >= v.fillTimeLeft() {
			unmark = append(unmark, id)
			continue
		}
		if ok, err := t.share(ctx, src, v, tg, s); !ok {
			shareErr = cmp.Or(shareErr, err)
			unmark = append(unmark, id)
			if err == nil {
				refused = append(refused, id)
			}
			continue
		}
		in := copyInput(s, v.region, tg)
		out, err := dst.CopySnapshot(ctx, in, ec2api.Bounded, ec2api.RetryThrottlingOnly)
		switch d := decideCopyAnswer(tg, id, err, sharedAt(s), now, t.ListingLag); d.outcome {
		case copyMade:
			v.recordCopy(tg, s, aws.ToString(out.SnapshotId), in.TagSpecifications[0].Tags, start)
			a.started(id, start)
			t.Log.Infof("Copying snapshot %s from %s to %s as %s", id, v.region, tg, aws.ToString(out.SnapshotId))
		case copyMaybeMade:
			v.markRequested(tg, id, start)
			a.started(id, start)
			t.Log.WithError(err).Warnf("CopySnapshot of %s to %s may have taken effect; waiting for EC2 to list the copy", id, tg)
		case copyQueued:
			a.queue(errors.New(d.why))
			unmark = append(unmark, id)
		default:
			v.refuse(tg, id, d.why)
			unmark = append(unmark, id)
			refused = append(refused, id)
		}
	}
	t.unmark(ctx, src, v, tg, unmark)
	t.endRefused(ctx, v, tg, refused)
	if a.queued != nil {
		return a, a.queued
	}
	return a, shareErr
}

// endRefused ends the copies of the sources whose copy into the target EC2 refused in this fill
// (endCopies: marked copy-failed, their share removed) before the Progress call returns: the
// operation of such a source fails, and may have ended already, when an earlier mark was lost,
// with no later Progress call to remove the share. What fails here is tried again by the
// source's operation, while it is open.
func (t *Tracker) endRefused(ctx context.Context, v *backupView, tg model.Target, ids []string) {
	for _, id := range ids {
		if s := v.sourceByID(id); s != nil {
			if err := t.endCopies(ctx, v, s, tg, true); err != nil {
				t.Log.WithError(err).Warnf("Could not end the copies of snapshot %s, whose %s to %s was refused", id, tg.CopyName(), tg)
			}
		}
	}
}

// markForCopy writes the target's copy-requested mark (and, for a vault, the shared mark, once:
// its time is when the source was first shared, so that a vault account that cannot see the
// share is told after the listing lag) on the batch's sources with one CreateTags per set of
// marks, then re-reads them so that a source whose deletion began meanwhile is not copied (a
// deletion marks the source before it looks for copies; whichever marks first is seen by the
// other). When EC2 refuses to mark the whole batch, each source is marked on its own, and only
// those EC2 refuses fail: one snapshot that cannot be tagged holds up no other.
func (t *Tracker) markForCopy(ctx context.Context, src ec2api.EC2, v *backupView, batch []types.Snapshot, tg model.Target, requestedAt string) ([]types.Snapshot, error) {
	var firstShare, again []string
	for _, s := range batch {
		id := aws.ToString(s.SnapshotId)
		if tg.Vault() && model.TagValue(s.Tags, model.TagVaultSharedAt) == "" {
			firstShare = append(firstShare, id)
		} else {
			again = append(again, id)
		}
	}
	var ids []string
	for _, group := range []struct {
		ids   []string
		marks map[string]string
	}{
		{firstShare, map[string]string{tg.RequestedTag(): requestedAt, model.TagVaultSharedAt: requestedAt}},
		{again, map[string]string{tg.RequestedTag(): requestedAt}},
	} {
		if len(group.ids) == 0 {
			continue
		}
		kept, err := t.markGroup(ctx, src, v, group.ids, tg, group.marks)
		if err != nil {
			t.unmark(ctx, src, v, tg, ids)
			return nil, err
		}
		ids = append(ids, kept...)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	current, err := ebs.DescribeSnapshots(ctx, src, []types.Filter{{Name: aws.String("snapshot-id"), Values: ids}}, ec2api.Bounded)
	if err != nil {
		t.unmark(ctx, src, v, tg, ids)
		return nil, fmt.Errorf("re-reading the sources marked for copies: %w", err)
	}
	deleting := map[string]bool{}
	for _, s := range current {
		if model.TagValue(s.Tags, model.TagDeletionRequestedAt) != "" {
			deleting[aws.ToString(s.SnapshotId)] = true
		}
	}
	var marked []types.Snapshot
	for _, s := range batch {
		if id := aws.ToString(s.SnapshotId); slices.Contains(ids, id) && !deleting[id] {
			if now := v.sourceByID(id); now != nil {
				s = *now // with the marks just written
			}
			marked = append(marked, s)
		}
	}
	gone := slices.Collect(maps.Keys(deleting))
	v.setTag(gone, model.TagDeletionRequestedAt, "deleting")
	t.unmark(ctx, src, v, tg, gone)
	return marked, nil
}

// markGroup writes marks on the sources with these IDs and returns those marked; a transient
// failure of the whole request is returned, a refusal recorded per source.
func (t *Tracker) markGroup(ctx context.Context, src ec2api.EC2, v *backupView, ids []string, tg model.Target, marks map[string]string) ([]string, error) {
	err := t.tag(ctx, src, ids, marks)
	switch {
	case err != nil && ec2api.IsTransient(err):
		return nil, fmt.Errorf("marking copy requests: %w", err)
	case err != nil && len(ids) == 1:
		v.refuse(tg, ids[0], fmt.Sprintf("marking snapshot %s for its %s to %s refused: %v", ids[0], tg.CopyName(), tg, err))
		return nil, nil
	case err != nil:
		var kept []string
		for _, id := range ids {
			switch err := t.tag(ctx, src, []string{id}, marks); {
			case err == nil:
				kept = append(kept, id)
			case !ec2api.IsTransient(err):
				v.refuse(tg, id, fmt.Sprintf("marking snapshot %s for its %s to %s refused: %v", id, tg.CopyName(), tg, err))
			}
		}
		ids = kept
	}
	for k, val := range marks {
		v.setTag(ids, k, val)
	}
	return ids, nil
}

// tag sets tags on snapshots.
func (t *Tracker) tag(ctx context.Context, c ec2api.EC2, ids []string, tags map[string]string) error {
	in := &ec2.CreateTagsInput{Resources: ids}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		in.Tags = append(in.Tags, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	_, err := c.CreateTags(ctx, in, ec2api.Bounded)
	return err
}

// unmark clears the target's copy-requested mark of sources whose copy was not asked for.
// Without the mark the next call may ask again at once; left in place, it only delays them by
// the listing lag. A vault's shared mark stays: it goes only once the share is removed.
func (t *Tracker) unmark(ctx context.Context, c ec2api.EC2, v *backupView, tg model.Target, ids []string) {
	if len(ids) == 0 {
		return
	}
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{
		Resources: ids,
		Tags:      []types.Tag{{Key: aws.String(tg.RequestedTag())}},
	}, ec2api.Bounded); err != nil {
		t.Log.WithError(err).Warn("Could not clear copy-request marks")
		return
	}
	v.setTag(ids, tg.RequestedTag(), "")
}

// copyInput is the CopySnapshot request for src into the target, following the copy intent
// tagged on it.
func copyInput(src types.Snapshot, sourceRegion string, tg model.Target) *ec2.CopySnapshotInput {
	id := aws.ToString(src.SnapshotId)
	tags := model.CopyTags(src, sourceRegion)
	kms := model.TagValue(src.Tags, model.TagCopyKMSKeyID)
	if tg.Vault() {
		for _, kv := range [][2]string{{model.TagSourceAccount, aws.ToString(src.OwnerId)}, {model.TagVaultLock, model.TagValue(src.Tags, model.TagVaultLock)}} {
			if kv[1] != "" {
				tags = append(tags, types.Tag{Key: aws.String(kv[0]), Value: aws.String(kv[1])})
			}
		}
		kms = model.TagValue(src.Tags, model.TagVaultKMSKeyID)
	}
	in := &ec2.CopySnapshotInput{
		SourceRegion:      aws.String(sourceRegion),
		SourceSnapshotId:  src.SnapshotId,
		Description:       aws.String(truncate(fmt.Sprintf("Copy of %s from %s for Velero backup %s", id, sourceRegion, model.TagValue(src.Tags, model.TagBackup)), maxDescriptionLen)),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tags}},
	}
	if kms != "" {
		in.Encrypted = aws.Bool(true)
		in.KmsKeyId = aws.String(kms)
	}
	if m, err := strconv.Atoi(model.TagValue(src.Tags, model.TagCopyCompletionMinutes)); err == nil && m > 0 && !tg.Vault() {
		in.CompletionDurationMinutes = aws.Int32(int32(m))
	}
	return in
}

// freeSlots is how many copies into the destination may be asked for now: the slots the
// account's copies leave free, at most what EC2's request rate allows.
func (t *Tracker) freeSlots(v *backupView, a *copySlots, now time.Time) int {
	return min(t.CopyLimit-a.inFlight(), copyRequestAllowance(v, a, now))
}

// copyPhase reports the copy of a completed source into the target, failing it (once nothing
// is left shared) or running the vault steps when the decision says so.
func (t *Tracker) copyPhase(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, f fill, now time.Time) phase {
	d := decideCopyPhase(v, src, tg, f, now, t.ListingLag, t.CopyLimit)
	switch {
	case d.fail != "":
		return t.failCopy(ctx, v, src, tg, d.fail, d.mark)
	case d.vaultCopy != nil:
		return t.vaultSteps(ctx, v, src, tg, d.vaultCopy)
	}
	return d.phase
}

// failCopy fails the operation for why, once nothing of its source is left shared with a vault
// and, when mark says so, the source is marked copy-failed: a mark or a removal of the share
// that may yet succeed is waited for; a removal EC2 refuses is named.
func (t *Tracker) failCopy(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, why string, mark bool) phase {
	switch err := t.endCopies(ctx, v, src, tg, mark); {
	case err != nil && ec2api.IsTransient(err):
		return phase{busy: true, desc: fmt.Sprintf("%s; before failing: %v", why, err)}
	case err != nil && tg.Vault():
		return phase{err: fmt.Sprintf("%s; the snapshot may be left shared with account %s (%s is still set): %v", why, tg.Account, model.TagVaultSharedAt, err)}
	}
	return phase{err: why}
}

// endCopies takes the step that ends the copies of a source whose operation fails: when mark
// says so (nothing in EC2 shows why, as a refused copy), it marks the source copy-failed, so
// that no later fill, in this process or another, shares or copies it again; then it removes
// its share with a vault. A copy in error needs no mark: EC2 lists it, and a fill never copies
// a source with a copy in error (decideFill).
//
// A mark EC2 refuses does not hold up the removal of the share. Without the mark (refused, or
// its answer lost), a later fill may share the source again; the copy is then refused again, and
// the fill, meeting the refusal, takes this same step: it removes the share before its Progress
// call returns, and tries the mark again. So nothing stays shared past the listing lag. Only this
// plugin writes the mark, on sources of its own backups: a snapshot of another install is never a
// source of this backup's view.
func (t *Tracker) endCopies(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, mark bool) error {
	var markErr error
	if mark {
		markErr = t.timed(v, func() error { return t.markFailed(ctx, v, src) })
	}
	if markErr != nil && !ec2api.IsTransient(markErr) {
		t.Log.WithError(markErr).Warnf("Could not mark snapshot %s %s", aws.ToString(src.SnapshotId), model.TagCopyFailed)
		markErr = nil
	}
	if !tg.Vault() {
		return markErr
	}
	if err := t.timed(v, func() error { return t.unshare(ctx, v, src, tg) }); err != nil {
		return err
	}
	return markErr
}

// markFailed writes the copy-failed mark on the source, unless it carries it.
func (t *Tracker) markFailed(ctx context.Context, v *backupView, src *types.Snapshot) error {
	if model.TagValue(src.Tags, model.TagCopyFailed) != "" {
		return nil
	}
	id := aws.ToString(src.SnapshotId)
	c, err := v.place.Clients(ctx, v.region)
	if err != nil {
		return err
	}
	at := t.Clock.Now().UTC().Format(time.RFC3339)
	if err := t.tag(ctx, c, []string{id}, map[string]string{model.TagCopyFailed: at}); err != nil {
		return fmt.Errorf("marking snapshot %s %s: %w", id, model.TagCopyFailed, err)
	}
	v.setTag([]string{id}, model.TagCopyFailed, at)
	model.SetTag(src, model.TagCopyFailed, at)
	return nil
}

// abandonVault ends the vault phase of an operation another phase fails, with no vault copy to
// finish: no copy of the source is started any more, and its share with the vault account is
// removed, waited for while the removal may yet succeed.
func (t *Tracker) abandonVault(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, ph phase) phase {
	switch err := t.timed(v, func() error { return t.unshare(ctx, v, src, tg) }); {
	case err != nil && ec2api.IsTransient(err):
		return phase{units: ph.units, busy: true, desc: fmt.Sprintf("removing the share of %s with vault account %s before failing: %v", aws.ToString(src.SnapshotId), tg.Account, err)}
	case err != nil:
		return phase{units: ph.units, err: fmt.Sprintf("the snapshot may be left shared with account %s (%s is still set): %v", tg.Account, model.TagVaultSharedAt, err)}
	}
	return phase{units: ph.units, desc: fmt.Sprintf("no %s to %s is started", tg.CopyName(), tg)}
}

// codeOperationNotPermitted is EC2's answer to sharing a snapshot under the default aws/ebs key.
const codeOperationNotPermitted = "OperationNotPermitted"

// share lets the vault account copy the source. It reports whether the copy may be asked for
// now; a refusal is recorded, and a transient or ambiguous failure, returned, is tried again at
// a later call (sharing is idempotent).
func (t *Tracker) share(ctx context.Context, c ec2api.EC2, v *backupView, tg model.Target, s types.Snapshot) (bool, error) {
	if !tg.Vault() {
		return true, nil
	}
	id := aws.ToString(s.SnapshotId)
	err := setShare(ctx, c, id, tg.Account, types.OperationTypeAdd)
	if ec2api.IsAmbiguous(err) {
		if shared, serr := sharedWith(ctx, c, id, tg.Account); serr == nil && shared {
			err = nil // it took effect
		}
	}
	switch {
	case err == nil:
		return true, nil
	case ec2api.Code(err) == codeOperationNotPermitted:
		v.refuse(tg, id, fmt.Sprintf("snapshot %s is encrypted with KMS key %s, which EC2 will not share with vault account %s "+
			"(snapshots under the default key aws/ebs cannot be shared): encrypt the volumes with a customer managed key whose key policy lets account %s use it (see the README): %v",
			id, aws.ToString(s.KmsKeyId), tg.Account, tg.Account, err))
	case ec2api.IsTransient(err):
		t.Log.WithError(err).Warnf("Could not share snapshot %s with vault account %s yet; trying again later", id, tg.Account)
		return false, fmt.Errorf("sharing %s with vault account %s: %w", id, tg.Account, err)
	default:
		v.refuse(tg, id, fmt.Sprintf("sharing snapshot %s with vault account %s refused: %v", id, tg.Account, err))
	}
	return false, nil
}

// setShare adds or removes the account's permission to create volumes from (and copy) the
// snapshot.
func setShare(ctx context.Context, c ec2api.EC2, id, account string, op types.OperationType) error {
	perm := []types.CreateVolumePermission{{UserId: aws.String(account)}}
	mods := &types.CreateVolumePermissionModifications{Add: perm}
	if op == types.OperationTypeRemove {
		mods = &types.CreateVolumePermissionModifications{Remove: perm}
	}
	// A lost answer is settled by DescribeSnapshotAttribute, not by the SDK asking again.
	_, err := c.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{
		SnapshotId:             aws.String(id),
		Attribute:              types.SnapshotAttributeNameCreateVolumePermission,
		CreateVolumePermission: mods,
	}, ec2api.Bounded, ec2api.RetryThrottlingOnly)
	return err
}

// sharedWith reports whether EC2 says the snapshot is shared with the account: how an answer
// lost after a share or its removal is settled.
func sharedWith(ctx context.Context, c ec2api.EC2, id, account string) (bool, error) {
	out, err := c.DescribeSnapshotAttribute(ctx, &ec2.DescribeSnapshotAttributeInput{
		SnapshotId: aws.String(id),
		Attribute:  types.SnapshotAttributeNameCreateVolumePermission,
	}, ec2api.Bounded)
	if err != nil {
		return false, err
	}
	for _, p := range out.CreateVolumePermissions {
		if aws.ToString(p.UserId) == account || p.Group == types.PermissionGroupAll {
			return true, nil
		}
	}
	return false, nil
}

// unshare removes the source's share with the vault account and then its shared mark; nil once
// nothing is left shared (or never was). A source already deleted shares nothing.
func (t *Tracker) unshare(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target) error {
	id := aws.ToString(src.SnapshotId)
	if model.TagValue(src.Tags, model.TagVaultSharedAt) == "" {
		return nil
	}
	c, err := v.place.Clients(ctx, v.region)
	if err != nil {
		return err
	}
	err = setShare(ctx, c, id, tg.Account, types.OperationTypeRemove)
	if ec2api.IsAmbiguous(err) {
		if shared, serr := sharedWith(ctx, c, id, tg.Account); serr == nil && !shared {
			err = nil // it took effect
		}
	}
	if err != nil && !ec2api.IsNotFound(err) {
		return fmt.Errorf("removing the share of snapshot %s with account %s: %w", id, tg.Account, err)
	}
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{
		Resources: []string{id},
		Tags:      []types.Tag{{Key: aws.String(model.TagVaultSharedAt)}},
	}, ec2api.Bounded); err != nil && !ec2api.IsNotFound(err) {
		return fmt.Errorf("share removed; clearing the mark %s on %s: %w", model.TagVaultSharedAt, id, err)
	}
	v.setTag([]string{id}, model.TagVaultSharedAt, "")
	t.Log.Infof("Removed the share of snapshot %s with vault account %s", id, tg.Account)
	return nil
}

// sharedAt is when the source was marked for sharing with the vault; zero when it is not.
func sharedAt(s types.Snapshot) time.Time {
	at, _ := time.Parse(time.RFC3339, model.TagValue(s.Tags, model.TagVaultSharedAt))
	return at
}

// vaultSteps takes the steps decideVaultSteps asks for on a vault copy EC2 lists, one after
// another, and reports the phase they leave it in.
func (t *Tracker) vaultSteps(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, cp *types.Snapshot) phase {
	cpID := aws.ToString(cp.SnapshotId)
	for range maxVaultSteps {
		d := decideVaultSteps(v, src, tg, cp)
		switch {
		case d.lock != nil:
			if err := t.timed(v, func() error { return t.lockVaultCopy(ctx, v, tg, cpID, *d.lock) }); err != nil {
				if ec2api.IsTransient(err) {
					return phase{units: d.phase.units, busy: true, desc: fmt.Sprintf("vault copy %s in %s: %s; locking it: %v", cpID, tg, progressText(cp.Progress), err)}
				}
				return t.failCopy(ctx, v, src, tg, fmt.Sprintf("locking vault copy %s in %s refused: %v", cpID, tg, err), false)
			}
		case d.unshare:
			if err := t.timed(v, func() error { return t.unshare(ctx, v, src, tg) }); err != nil {
				return phase{units: d.phase.units, busy: true, desc: fmt.Sprintf("vault copy %s in %s completed%s; %v", cpID, tg, d.lockNote, err)}
			}
		default:
			return d.phase
		}
	}
	return decideVaultSteps(v, src, tg, cp).phase
}

// maxVaultSteps bounds the steps one report takes on a vault copy: its lock and the removal of
// its source's share.
const maxVaultSteps = 2

// timed runs a step's requests, counting their time against the description's budget (the
// one copies are started within): EC2's rate for mutating requests (5 a second) would
// otherwise make one reconcile of a large backup's vault steps last minutes.
func (t *Tracker) timed(v *backupView, step func() error) error {
	start := t.Clock.Now()
	defer func() { v.spend(t.Clock.Since(start)) }()
	return step()
}

// lockVaultCopy locks a vault copy with the vault's credentials. An answer that may have taken
// effect is checked by the next description's DescribeLockedSnapshots, so it is transient here.
func (t *Tracker) lockVaultCopy(ctx context.Context, v *backupView, tg model.Target, cpID string, l model.Lock) error {
	c, _, err := v.place.ClientsFor(ctx, tg)
	if err != nil {
		return err
	}
	in := &ec2.LockSnapshotInput{
		SnapshotId:   aws.String(cpID),
		LockMode:     types.LockMode(l.Mode),
		LockDuration: aws.Int32(l.Days),
	}
	if l.CoolOffHours > 0 {
		in.CoolOffPeriod = aws.Int32(l.CoolOffHours)
	}
	out, err := c.LockSnapshot(ctx, in, ec2api.Bounded, ec2api.RetryThrottlingOnly) // a lost answer: the next description tells
	switch {
	case err == nil:
		v.recordLock(cpID, out.LockState)
		t.Log.Infof("Locked vault copy %s in %s (%s)", cpID, tg, l.Term())
		return nil
	case ec2api.IsAmbiguous(err):
		return errors.Join(err, errors.New("the lock may have taken effect; the next description tells"))
	}
	return err
}

// checkVaultAccount confirms that the view's vault credentials are the target's vault
// account's: they list no snapshot another account owns, and STS names the vault account,
// when the place can ask (once per description: a failure is not asked again by every
// operation of a reconcile).
func (t *Tracker) checkVaultAccount(ctx context.Context, v *backupView, tg model.Target) vaultCheck {
	if c, settled := decideVaultListing(tg, v.stranger(tg), v.ownsVaultCopy(tg)); settled {
		return c
	}
	if v.place.VaultIdentity == nil || v.place.Vault == nil {
		return vaultCheck{}
	}
	if c, ok := v.vaultChecked(tg); ok {
		return c
	}
	account, err := v.place.VaultIdentity(ctx)
	c := decideVaultAccount(tg, account, err)
	v.recordVaultCheck(tg, c)
	return c
}
