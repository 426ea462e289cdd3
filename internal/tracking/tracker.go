// Package tracking takes a backup's snapshots and follows each, and its copies into the copy
// region and the vault account, to its end: the VolumeSnapshotter's CreateSnapshot, and the
// BackupItemAction's Progress and Cancel. Each call reads EC2, decides in pure functions
// (decide*.go), then acts on what they return.
package tracking

import (
	"context"
	"errors"
	"fmt"
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
	foreign := ""
	if l.view != nil && l.res.Source != nil {
		foreign = decideForeignSource(l.res.Source, l.view.place, backup.Spec.VolumeSnapshotLocations)
	}
	switch {
	case foreign != "":
		p.Completed = true
		p.Err = foreign
	case l.view != nil && l.res.Source != nil && model.Unreturned(l.res.Source):
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
			v.setOperationTimeout(backup.Spec.ItemOperationTimeout.Duration)
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
// call starts its copy again (and without the mark no fill copies a source past Velero's
// item-operation timeout); then its share with a vault is removed and, within the
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
	srcID := aws.ToString(src.SnapshotId)
	if model.Unreturned(src) {
		// Nothing else would delete a snapshot Velero recorded as failed: the same rule as
		// Progress decides whether it is one.
		p := velero.OperationProgress{Updated: t.Clock.Now()}
		if _, del := decideUnreturned(op, src, backup.Status, decideCfgOf(t.Settings), p); del {
			return t.timed(v, func() error { return t.deleteUnreturned(ctx, v, src) })
		}
		return nil
	}
	if len(model.TargetsOf(src)) == 0 {
		return nil
	}
	steps := decideCancel(v, src)
	v.cancel(srcID)
	var errs []error
	if err := t.timed(v, func() error { return t.markCancelled(ctx, v, srcID) }); err != nil {
		errs = append(errs, err)
	}
	for _, st := range steps {
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
