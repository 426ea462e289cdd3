package ebs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// percentUnits is the unit of reported progress: each phase (snapshot, copy) counts 100.
const percentUnits = "%"

// Tracker follows each volume's snapshot, and its copy into another region, to completion. It
// starts copies as sources complete, keeping every copy slot of a destination busy. It keeps no
// state that matters across calls: each backup's snapshots are described at most once per cache
// lifetime and shared by every operation of that backup.
type Tracker struct {
	clients ec2api.Regional
	settings

	mu    sync.Mutex
	views map[viewKey]*backupView
}

type viewKey struct{ region, backup string }

// NewTracker returns a Tracker that reaches EC2 through clients.
func NewTracker(clients ec2api.Regional, opts ...Option) *Tracker {
	return &Tracker{clients: clients, settings: newSettings(opts), views: map[viewKey]*backupView{}}
}

// Progress reports an operation. EC2 being slow, throttling or failing never fails the
// operation: it is reported as still in progress, with the reason.
func (t *Tracker) Progress(ctx context.Context, operationID string, backup *velerov1.Backup) (velero.OperationProgress, error) {
	op, err := ParseOperationID(operationID)
	if err != nil {
		return velero.OperationProgress{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	p := velero.OperationProgress{Updated: now, OperationUnits: percentUnits}
	v, err := t.view(ctx, op.Region, backup.Name)
	if err != nil {
		if ec2api.IsTransient(err) {
			p.Description = "waiting for EC2: " + err.Error()
			return p, nil
		}
		return velero.OperationProgress{}, err
	}
	src := v.source(op.VolumeID)
	if src == nil {
		return t.notFound(op, backup, v, p), nil
	}
	srcID := aws.ToString(src.SnapshotId)
	tags := tagMap(src.Tags)
	dest := tags[TagCopyToRegion]
	p.Started = aws.ToTime(src.StartTime)
	p.NTotal = 100
	if dest != "" {
		p.NTotal = 200
	}
	var fillErr error
	if dest != "" {
		fillErr = t.fillCopySlots(ctx, v, dest)
	}
	switch src.State {
	case types.SnapshotStateError:
		p.Completed = true
		p.Err = fmt.Sprintf("snapshot %s of volume %s in %s failed: %s", srcID, op.VolumeID, op.Region, aws.ToString(src.StateMessage))
		return p, nil
	case types.SnapshotStatePending:
		p.NCompleted = percent(src.Progress)
		p.Description = fmt.Sprintf("snapshot %s in %s: %s", srcID, op.Region, progressText(src.Progress))
		return p, nil
	}
	p.NCompleted = 100
	if dest == "" {
		p.Completed = true
		p.Description = fmt.Sprintf("snapshot %s in %s completed", srcID, op.Region)
		return p, nil
	}
	cp := v.copyOf(srcID)
	switch {
	case cp == nil && v.refused[srcID] != "":
		p.Completed = true
		p.Err = v.refused[srcID]
	case cp == nil && fillErr != nil:
		p.Description = fmt.Sprintf("waiting to copy %s to %s: %v", srcID, dest, fillErr)
	case cp == nil && v.recentlyRequested(src, now, t.listingLag):
		p.Description = fmt.Sprintf("copy of %s to %s requested; waiting for EC2 to list it", srcID, dest)
	case cp == nil && v.inFlight(dest) < t.copyLimit:
		p.Description = fmt.Sprintf("waiting for EC2's CopySnapshot request rate in %s (%d in flight)", dest, v.inFlight(dest))
	case cp == nil:
		p.Description = fmt.Sprintf("waiting for a copy slot in %s (%d in flight)", dest, v.inFlight(dest))
	case cp.State == types.SnapshotStateError:
		p.Completed = true
		p.Err = fmt.Sprintf("copy %s of snapshot %s to %s failed: %s", aws.ToString(cp.SnapshotId), srcID, dest, aws.ToString(cp.StateMessage))
	case cp.State == types.SnapshotStatePending:
		p.NCompleted += percent(cp.Progress)
		p.Description = fmt.Sprintf("copy %s to %s: %s", aws.ToString(cp.SnapshotId), dest, progressText(cp.Progress))
	default:
		p.Completed = true
		p.NCompleted = 200
		p.Description = fmt.Sprintf("snapshot %s in %s and its copy %s in %s completed", srcID, op.Region, aws.ToString(cp.SnapshotId), dest)
	}
	return p, nil
}

// notFound reports an operation whose snapshot EC2 does not list. Velero took no native
// snapshot of the volume (a volume policy chose another method, or CreateSnapshot failed) when
// every snapshot Velero completed for the backup is listed, or when the grace period is over;
// until then EC2 may just be slow to list it.
func (t *Tracker) notFound(op Operation, backup *velerov1.Backup, v *backupView, p velero.OperationProgress) velero.OperationProgress {
	listed := 0
	for _, ss := range v.sources {
		listed += len(ss)
	}
	itemsDone := backup.Status.Phase == velerov1.BackupPhaseWaitingForPluginOperations ||
		backup.Status.Phase == velerov1.BackupPhaseWaitingForPluginOperationsPartiallyFailed
	if itemsDone && listed >= backup.Status.VolumeSnapshotsCompleted || p.Updated.Sub(op.Issued) > t.notFoundGrace {
		p.Completed = true
		p.Description = fmt.Sprintf("no native snapshot of volume %s was taken for this backup", op.VolumeID)
		return p
	}
	p.Description = fmt.Sprintf("waiting for EC2 to list the snapshot of volume %s in %s", op.VolumeID, op.Region)
	return p
}

// Cancel deletes the operation's copy if it is still pending. The source snapshot belongs to
// the backup and goes with it.
func (t *Tracker) Cancel(ctx context.Context, operationID string, backup *velerov1.Backup) error {
	op, err := ParseOperationID(operationID)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	v, err := t.view(ctx, op.Region, backup.Name)
	if err != nil {
		return err
	}
	src := v.source(op.VolumeID)
	if src == nil {
		return nil
	}
	cp := v.copyOf(aws.ToString(src.SnapshotId))
	if cp == nil || cp.State != types.SnapshotStatePending {
		return nil
	}
	dest := tagMap(src.Tags)[TagCopyToRegion]
	c, err := t.clients(ctx, dest)
	if err != nil {
		return err
	}
	if _, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: cp.SnapshotId}); err != nil && !ec2api.IsNotFound(err) {
		return fmt.Errorf("deleting pending copy %s in %s: %w", aws.ToString(cp.SnapshotId), dest, err)
	}
	t.log.Infof("Cancelled: deleted pending copy %s of %s in %s", aws.ToString(cp.SnapshotId), aws.ToString(src.SnapshotId), dest)
	return nil
}

// view returns the backup's snapshots in region, described again when the cached description
// is older than the cache lifetime. A failed description is cached as well, so the other
// operations of a reconcile do not each ask a throttling EC2 again.
func (t *Tracker) view(ctx context.Context, region, backup string) (*backupView, error) {
	key := viewKey{region, backup}
	v, ok := t.views[key]
	switch {
	case !ok:
		v = &backupView{region: region, backup: backup, requested: map[string]time.Time{}, refused: map[string]string{}}
		t.views[key] = v
	case v.loadErr != nil && t.clock.Since(v.loadFailed) < t.cacheTTL:
		return nil, v.loadErr
	case v.loadErr == nil && t.clock.Since(v.fetched) < t.cacheTTL:
		return v, nil
	}
	v.loadErr = t.load(ctx, v)
	if v.loadErr != nil {
		v.loadFailed = t.clock.Now()
		return nil, v.loadErr
	}
	return v, nil
}

// fillCopySlots starts copies into dest for the backup's completed sources, oldest first, while
// the destination has free slots. Each batch is first marked on its sources (one CreateTags), so
// a restarted plugin that cannot see a just-made copy yet waits for it instead of copying again.
func (t *Tracker) fillCopySlots(ctx context.Context, v *backupView, dest string) error {
	if err := v.queued[dest]; err != nil {
		return err // asked already; the next description of EC2 tells whether slots freed up
	}
	now := t.clock.Now()
	free := min(t.copyLimit-v.inFlight(dest), copyRequestAllowance(v, dest, now))
	if free <= 0 {
		return nil
	}
	batch := v.awaitingCopy(dest, now, t.listingLag)
	if len(batch) == 0 {
		return nil
	}
	if len(batch) > free {
		batch = batch[:free]
	}
	src, err := t.clients(ctx, v.region)
	if err != nil {
		return err
	}
	dst, err := t.clients(ctx, dest)
	if err != nil {
		return err
	}
	ids := make([]string, len(batch))
	for i, s := range batch {
		ids[i] = aws.ToString(s.SnapshotId)
	}
	requestedAt := now.UTC().Format(time.RFC3339)
	if _, err := src.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: ids,
		Tags:      []types.Tag{{Key: aws.String(TagCopyRequestedAt), Value: aws.String(requestedAt)}},
	}, ec2api.FewAttempts); err != nil {
		if ec2api.Code(err) != ec2api.CodeUnauthorized {
			return fmt.Errorf("marking copy requests: %w", err)
		}
		// A permission missing from the policy does not come back by waiting: fail these
		// copies with EC2's message, as a refused CopySnapshot does.
		for _, id := range ids {
			v.refused[id] = fmt.Sprintf("marking snapshot %s for its copy to %s refused: %v", id, dest, err)
		}
		return nil
	}
	var unmark []string
	var queued error
	for i, s := range batch {
		id := ids[i]
		if queued != nil {
			unmark = append(unmark, id)
			continue
		}
		out, err := dst.CopySnapshot(ctx, copyInput(s, v.region), ec2api.RetryThrottlingOnly, ec2api.FewAttempts)
		switch {
		case err == nil:
			t.recordCopy(v, dest, s, aws.ToString(out.SnapshotId), now)
			t.log.Infof("Copying snapshot %s from %s to %s as %s", id, v.region, dest, aws.ToString(out.SnapshotId))
		case ec2api.IsAmbiguous(err):
			v.requested[id] = now
			t.log.WithError(err).Warnf("CopySnapshot of %s to %s may have taken effect; waiting for EC2 to list the copy", id, dest)
		case ec2api.Code(err) == ec2api.CodeResourceLimitExceeded || ec2api.IsThrottle(err):
			queued = fmt.Errorf("EC2 queued the copy: %s", ec2api.Code(err))
			v.queued[dest] = queued
			unmark = append(unmark, id)
		default:
			v.refused[id] = fmt.Sprintf("copy of snapshot %s to %s refused: %v", id, dest, err)
			unmark = append(unmark, id)
		}
	}
	if len(unmark) > 0 {
		// Without the mark, the next call may ask again at once; left in place, the mark only
		// delays those sources by the listing lag.
		if _, err := src.DeleteTags(ctx, &ec2.DeleteTagsInput{
			Resources: unmark,
			Tags:      []types.Tag{{Key: aws.String(TagCopyRequestedAt)}},
		}, ec2api.FewAttempts); err != nil {
			t.log.WithError(err).Warn("Could not clear copy-request marks")
		}
		for _, s := range batch {
			if contains(unmark, aws.ToString(s.SnapshotId)) {
				setTag(v.sourceByID(aws.ToString(s.SnapshotId)), TagCopyRequestedAt, "")
			}
		}
	}
	for _, s := range batch {
		if id := aws.ToString(s.SnapshotId); !contains(unmark, id) {
			setTag(v.sourceByID(id), TagCopyRequestedAt, requestedAt)
		}
	}
	return queued
}

// copyRequestAllowance is how many CopySnapshot requests EC2's rate allows now, judged from the
// backup's copies into dest: a bucket of B requests refilled at R per second is full again B/R
// seconds after it was empty, so at least B minus the requests of the last B/R seconds are left.
// A fresh plugin process per reconcile cannot carry a client-side bucket; the copies' start
// times can.
func copyRequestAllowance(v *backupView, dest string, now time.Time) int {
	window := time.Duration(ec2api.CopySnapshotBurst/ec2api.CopySnapshotRefill) * time.Second
	return ec2api.CopySnapshotBurst - v.copiesStartedSince(dest, now.Add(-window))
}

// recordCopy adds a copy this process just started to the cached view, so the rest of the
// reconcile counts it.
func (t *Tracker) recordCopy(v *backupView, dest string, src types.Snapshot, copyID string, now time.Time) {
	if v.copies[dest] == nil {
		v.copies[dest] = map[string][]types.Snapshot{}
	}
	srcID := aws.ToString(src.SnapshotId)
	v.copies[dest][srcID] = append(v.copies[dest][srcID], types.Snapshot{
		SnapshotId: aws.String(copyID),
		State:      types.SnapshotStatePending,
		Progress:   aws.String("0%"),
		StartTime:  aws.Time(now),
		Tags:       copyTags(src, v.region),
	})
}

// copyInput is the CopySnapshot request for src, following the copy intent tagged on it.
func copyInput(src types.Snapshot, sourceRegion string) *ec2.CopySnapshotInput {
	tags := tagMap(src.Tags)
	id := aws.ToString(src.SnapshotId)
	in := &ec2.CopySnapshotInput{
		SourceRegion:      aws.String(sourceRegion),
		SourceSnapshotId:  src.SnapshotId,
		Description:       aws.String(truncate(fmt.Sprintf("Copy of %s from %s for Velero backup %s", id, sourceRegion, tags[TagBackup]), 255)),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: copyTags(src, sourceRegion)}},
	}
	if k := tags[TagCopyKMSKeyID]; k != "" {
		in.Encrypted = aws.Bool(true)
		in.KmsKeyId = aws.String(k)
	}
	if m, err := strconv.Atoi(tags[TagCopyCompletionMinutes]); err == nil && m > 0 {
		in.CompletionDurationMinutes = aws.Int32(int32(m))
	}
	return in
}

// setTag sets (or, with an empty value, removes) a tag on a cached snapshot.
func setTag(s *types.Snapshot, key, value string) {
	if s == nil {
		return
	}
	kept := s.Tags[:0:0]
	for _, t := range s.Tags {
		if aws.ToString(t.Key) != key {
			kept = append(kept, t)
		}
	}
	if value != "" {
		kept = append(kept, types.Tag{Key: aws.String(key), Value: aws.String(value)})
	}
	s.Tags = kept
}

// percent reads EC2's progress ("45%") as a number from 0 to 100.
func percent(p *string) int64 {
	n, err := strconv.Atoi(strings.TrimSuffix(aws.ToString(p), "%"))
	if err != nil || n < 0 {
		return 0
	}
	if n > 100 {
		return 100
	}
	return int64(n)
}

func progressText(p *string) string {
	return strconv.FormatInt(percent(p), 10) + "%"
}
