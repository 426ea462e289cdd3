package explore

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/deleting"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The steps actors take. Each is one event of Velero core, another install or tool, EC2 or the
// clock, with every choice made by the caller: the explorer draws them, a regression scenario
// names them.

// execute is an ItemBlock worker running the BackupItemAction's Execute on PV i: the handoff
// learns the backup's UID and the operation is opened.
func (w *world) execute(i int) {
	if w.setup.upgrade != nil {
		w.oldExecute(i)
		return
	}
	op := w.ops[i]
	op.executed, op.issued = true, w.clk.Now()
	w.handoff.Put(backupName, op.pv, op.volumeID, backupUID)
	op.id = model.Operation{Region: sourceRegion, VolumeID: op.volumeID, Issued: op.issued, PV: op.pv}.String()
	w.logf("velero: Execute %s -> operation %s", op.pv, op.id)
}

// createInterleaved is create(i) with another worker's Execute and CreateSnapshot of PV j
// running after `after` of its requests, in the same plugin process.
func (w *world) createInterleaved(i, j, after int) {
	w.hook = func() {
		w.logf("velero: (another ItemBlock worker, during CreateSnapshot %s)", w.ops[i].pv)
		w.execute(j)
		w.create(j)
	}
	w.hookAt = len(w.requests) + after
	w.create(i)
	w.hook, w.hookAt = nil, -1
}

// create is the worker asking for PV i's snapshot: through this plugin, in the item phase's
// process, or through the upstream plugin's location.
func (w *world) create(i int) {
	defer w.writeRecord()
	if w.setup.upgrade != nil {
		w.oldCreate(i)
		return
	}
	op := w.ops[i]
	op.attempted = true
	tags := veleroTags(op.pv)
	if op.upstream {
		if w.setup.restoredVolumes {
			maps.Copy(tags, restoredVolumeTags(i)) // the upstream plugin copies the volume's tags
		}
		w.createAs(op, "upstream", tags)
		w.logf("velero: CreateSnapshot %s through the upstream plugin -> %q %s", op.pv, op.snapshotID, op.createErr)
		return
	}
	var id string
	var err error
	ok := w.onClock(func(ctx context.Context) {
		if op.volumeType, op.iops, err = w.snapshotter.GetVolumeInfo(ctx, op.volumeID); err == nil {
			id, err = w.snapshotter.CreateSnapshot(ctx, op.volumeID, tags)
		}
	})
	switch {
	case !ok:
		w.violate(catHung, "CreateSnapshot of %s did not return", op.pv)
	case err != nil:
		op.createErr = err.Error()
	default:
		op.snapshotID, op.uidTagged = id, w.handoff.UID(backupName, op.pv, op.volumeID) != ""
	}
	w.logf("velero: CreateSnapshot %s -> %q %s", op.pv, op.snapshotID, op.createErr)
}

// reconcile is Velero's operations controller in a fresh plugin process: every open operation
// past its item-operation timeout is cancelled, every other one asked for progress.
func (w *world) reconcile() {
	tr := w.newTracker()
	b := w.backup()
	w.startReconcile()
	for _, op := range w.ops {
		if !op.executed || op.state != opOpen {
			continue
		}
		if !w.clk.Now().Before(op.issued.Add(w.setup.timeout)) {
			var err error
			start := w.clk.Now()
			w.cancels.inCancel = true
			if w.cancelLost {
				err, tr, w.cancelLost = errProcessLost, w.newTracker(), false
			} else if !w.onClock(func(ctx context.Context) { err = tr.Cancel(ctx, op.id, b) }) {
				w.violate(catHung, "Cancel of %s did not return", op.pv)
			}
			w.cancels.inCancel = false
			w.checkCall("Cancel", op.pv, w.clk.Since(start)-w.elsewhere, err)
			w.faults.callReturned()
			op.state, op.result, op.cancelledAt, op.endedAt, op.cancelErr = opFailed, "timed out", w.clk.Now(), w.clk.Now(), err
			op.copiesAtCancel = w.copiesOf(op.snapshotID)
			w.logf("velero: %s timed out; Cancel -> %v", op.pv, err)
			continue
		}
		var p struct {
			completed   bool
			desc, perr  string
			done, total int64
		}
		var err error
		op.polled = true
		start := w.clk.Now()
		if !w.onClock(func(ctx context.Context) {
			pr, e := tr.Progress(ctx, op.id, b)
			p.completed, p.desc, p.perr, p.done, p.total, err = pr.Completed, pr.Description, pr.Err, pr.NCompleted, pr.NTotal, e
		}) {
			w.violate(catHung, "Progress of %s did not return", op.pv)
			continue
		}
		w.checkCall("Progress", op.pv, w.clk.Since(start)-w.elsewhere, nil)
		w.faults.callReturned()
		if err == nil && !p.completed {
			w.checkForward(op, p.done, p.total, p.desc)
		}
		w.checkLive(op, p.completed, p.desc, p.perr)
		op.total = p.total
		switch {
		case err != nil:
			op.state, op.result = opFailed, err.Error()
		case p.completed && p.perr != "":
			op.state, op.result = opFailed, p.perr
		case p.completed:
			op.state, op.result = opCompleted, p.desc
		}
		if op.state != opOpen {
			op.endedAt = w.clk.Now()
			w.checkEndedOnOwn(op)
		}
		if p.completed && err == nil {
			w.process.ended[op.snapshotID] = true // the process remembers what it reported ended
		}
		w.checkFailedOnBlip(op)
		w.logf("velero: Progress %s -> %d/%d completed=%v %q %s", op.pv, p.done, p.total, p.completed, p.desc, p.perr)
		if op.state == opCompleted {
			w.checkCompleted(op)
		}
	}
}

// restoredVolumeTags are the tags of the backup's i-th volume when this plugin restored it:
// its restore token.
func restoredVolumeTags(i int) map[string]string {
	return map[string]string{model.TagRestoreToken: fmt.Sprintf("restore-%d", i)}
}

// reconcileAtTimeout is Velero's first reconcile after the earliest open operation's
// item-operation timeout, by past: the clock moves there (unless it is there already).
func (w *world) reconcileAtTimeout(past time.Duration) {
	var at time.Time
	for _, op := range w.ops {
		if due := op.issued.Add(w.setup.timeout); op.executed && op.state == opOpen && (at.IsZero() || due.Before(at)) {
			at = due
		}
	}
	if d := at.Add(past).Sub(w.clk.Now()); !at.IsZero() && d > 0 {
		w.advance(d)
	}
	w.reconcile()
}

// advance moves the clock.
func (w *world) advance(d time.Duration) {
	w.clk.Step(d)
	w.logf("clock: +%s", d)
}

// maxAdvances bounds the seconds advanceUntilSnapshotAt waits.
const maxAdvances = 600

// advanceUntilSnapshotAt moves the clock in steps of a second until the simulator shows the
// snapshot of PV i at least at percent, or no longer pending.
func (w *world) advanceUntilSnapshotAt(i int, percent int) {
	for range maxAdvances {
		s, ok := w.snapshotOf(w.ops[i])
		n, _ := strconv.Atoi(strings.TrimSuffix(s.Progress, "%"))
		if ok && (s.State != "pending" || n >= percent) {
			return
		}
		w.clk.Step(time.Second)
	}
}

// firstPendingSource is the first open operation, in Velero's order, whose snapshot EC2 is
// still taking; -1 when there is none.
func (w *world) firstPendingSource() int {
	for i, op := range w.ops {
		if s, ok := w.snapshotOf(op); ok && op.executed && op.state == opOpen && s.State == "pending" {
			return i
		}
	}
	return -1
}

// snapshotOf is the simulator's record of the snapshot Velero recorded for op, if any.
func (w *world) snapshotOf(op *operation) (ec2sim.Snapshot, bool) {
	if op.snapshotID == "" {
		return ec2sim.Snapshot{}, false
	}
	for _, s := range w.sim.SnapshotsIn(sourceAccount, sourceRegion) {
		if s.ID == op.snapshotID {
			return s, true
		}
	}
	return ec2sim.Snapshot{}, false
}

// setDown takes a region down (every request to it goes unanswered) or brings it back.
func (w *world) setDown(region string, down bool) {
	if down {
		w.down[region] = true
	} else {
		delete(w.down, region)
	}
	w.logf("ec2: region %s down=%v", region, down)
}

// restart is the Velero server restarting: it forgets which backups wait for operations, so a
// deletion of this one is no longer refused.
func (w *world) restart() {
	w.restarted = true
	w.logf("velero: server restart (backup %s no longer known to wait)", backupName)
}

// deletionKind is who deletes the backup, with which location config.
type deletionKind string

const (
	deleteBySource deletionKind = "source cluster"
	deleteByGC     deletionKind = "garbage collection"
	// deleteByRecovery is a recovery cluster whose location of the same name is in the copy
	// region, with copyToRegion back to the source region.
	deleteByRecovery deletionKind = "recovery cluster (copy-region location)"
	// deleteByVaultRecovery is a recovery cluster restoring from the vault: the vault region, the vault's credentials.
	deleteByVaultRecovery deletionKind = "recovery cluster (restore-from-vault location)"
)

// deleter is the VolumeSnapshotter a deletion of kind runs in, and whether it reaches every
// piece of the backup (the restore-from-vault location cannot reach the source account).
func (w *world) deleter(kind deletionKind) (s *deleting.Deleter, reachesAll bool) {
	switch kind {
	case deleteByRecovery:
		// As the README's disaster-recovery setup and the e2e drill have it: the copy region,
		// copying back to the source region.
		cfg := w.cfg
		cfg.Region, cfg.CopyToRegion = copyRegion, sourceRegion
		return deleting.NewDeleter(cfg, w.regional("recovery", sourceAccount, true), w.locationOptions(cfg, false)...), true
	case deleteByVaultRecovery:
		cfg, _ := model.ParseConfig(map[string]string{model.ConfigRegion: w.setup.vaultRegion})
		return deleting.NewDeleter(cfg, w.regional("vault-recovery", vaultAccount, true), w.options()...), false
	}
	return deleting.NewDeleter(w.cfg, w.regional("source", sourceAccount, true), w.locationOptions(w.cfg, false)...), true
}

// deleteBackup is a deletion of the backup: DeleteSnapshot of every snapshot Velero recorded.
// When hookAfter is not negative, a reconcile runs after that many of the deletion's requests
// and hookDelay more of fake time (the deletion's requests take time): Velero's operations
// controller working on the backup meanwhile.
func (w *world) deleteBackup(kind deletionKind, hookAfter int, hookDelay time.Duration) {
	s, reachesAll := w.deleter(kind)
	if kind == deleteByVaultRecovery {
		w.retainedByTagsOnly()
	}
	for _, op := range w.ops {
		if op.state == opOpen {
			op.deletedWhileOpen = true
		}
	}
	if hookAfter >= 0 && !w.deleted {
		w.hook = func() {
			w.clk.Step(hookDelay)
			w.logf("velero: (during the deletion, %s later) reconcile", hookDelay)
			w.reconcile()
		}
		w.hookAt = len(w.requests) + hookAfter
		w.logf("velero: deletion by %s, a reconcile after %d of its requests", kind, hookAfter)
	} else {
		w.logf("velero: deletion by %s", kind)
	}
	failed := false
	for _, op := range w.ops {
		if op.snapshotID == "" {
			continue
		}
		var err error
		if op.upstream {
			if kind != deleteByVaultRecovery {
				_, err = w.client("upstream", sourceAccount, sourceRegion, false).DeleteSnapshot(context.Background(), &ec2.DeleteSnapshotInput{SnapshotId: aws.String(op.snapshotID)})
			}
		} else if !w.onClock(func(ctx context.Context) { err = s.DeleteSnapshot(ctx, op.snapshotID) }) {
			w.violate(catHung, "DeleteSnapshot %s did not return", op.snapshotID)
		}
		if err != nil {
			failed = true
		}
		w.logf("velero: DeleteSnapshot %s (%s) -> %v", op.snapshotID, op.pv, err)
	}
	w.hook, w.hookAt = nil, -1
	w.deleted, w.deletionFailed = true, failed
	if !failed && reachesAll {
		w.deletions++
	}
	if !failed {
		w.deleteRecord()
	}
}

// retainedByTagsOnly narrows the vault copies kept by vaultRetainOnDelete to those whose tags,
// or their source's, say so: a recovery cluster's location restoring from the vault reads its
// own config only, not the source cluster's, so a copy made before vaultRetainOnDelete was
// turned on there goes with a deletion through it (the README's limit of a setting turned on
// later).
func (w *world) retainedByTagsOnly() {
	snaps := w.everything()
	for id := range w.retained {
		s := snaps[id]
		if s.Tags[model.TagVaultRetainOnDelete] != "true" && snaps[s.SourceSnapshotID].Tags[model.TagVaultRetainOnDelete] != "true" {
			delete(w.retained, id)
		}
	}
}

// otherInstallSnapshot is another install in the same account snapshotting its own volume for
// a backup of the same name, PV pv: with its UID tag (this plugin), or without (the upstream
// plugin, or a lost handoff).
func (w *world) otherInstallSnapshot(withUID bool, pv string) {
	tags := veleroTags(pv)
	if withUID {
		tags[model.TagBackupUID] = otherUID
		if w.setup.copyTo {
			tags[model.TagCopyToRegion] = copyRegion
		}
	}
	if id := w.otherSnapshot(tags); id != "" {
		w.logf("other install: snapshot %s of %s, backup %s, PV %s, UID tag %v", id, w.otherVols[0], backupName, pv, withUID)
	}
}

// otherSnapshot is another install snapshotting its own volume in the source account with tags:
// the snapshot's ID, "" when EC2 refused.
func (w *world) otherSnapshot(tags map[string]string) string {
	out, err := w.other(sourceRegion).CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{
		VolumeId:          aws.String(w.otherVols[0]),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(tags)}},
	})
	if err != nil {
		w.logf("other install: CreateSnapshot refused: %v", err)
		return ""
	}
	id := aws.ToString(out.SnapshotId)
	w.foreign[id] = foreignSnapshot{account: sourceAccount, region: sourceRegion, tags: tags}
	return id
}

// toolCopy is another tool copying a snapshot (another install's, or one Velero recorded for
// this backup) into the copy region with its own tags: a pending copy not of this plugin.
func (w *world) toolCopy(ofOurs bool) {
	var src string
	if op := w.recordedOne(); ofOurs && op != nil {
		src = op.snapshotID
	} else if !ofOurs {
		for id, f := range w.foreign {
			if f.region == sourceRegion && (src == "" || id < src) {
				src = id
			}
		}
	}
	if src == "" {
		w.logf("tool: nothing to copy")
		return
	}
	tags := map[string]string{"backup-tool/copy-of": src}
	out, err := w.other(copyRegion).CopySnapshot(context.Background(), &ec2.CopySnapshotInput{
		SourceRegion: aws.String(sourceRegion), SourceSnapshotId: aws.String(src),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(tags)}},
	})
	if err != nil {
		w.logf("tool: CopySnapshot of %s refused: %v", src, err)
		return
	}
	id := aws.ToString(out.SnapshotId)
	w.foreign[id] = foreignSnapshot{account: sourceAccount, region: copyRegion, tags: tags}
	w.logf("tool: copy %s of %s into %s", id, src, copyRegion)
}

// toolSnapshot is a backup tool's policy snapshotting the volume of PV i with its own tags: a
// snapshot of this backup's volume that is not this backup's, which takes one of EC2's pending
// snapshots of the volume (the only one of an st1 volume).
func (w *world) toolSnapshot(i int) {
	vol := w.ops[i].volumeID
	tags := map[string]string{"backup-tool/policy": "hourly"}
	out, err := w.other(sourceRegion).CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{
		VolumeId:          aws.String(vol),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(tags)}},
	})
	if err != nil {
		w.logf("tool: CreateSnapshot of %s refused: %v", vol, err)
		return
	}
	id := aws.ToString(out.SnapshotId)
	w.foreign[id] = foreignSnapshot{account: sourceAccount, region: sourceRegion, tags: tags, volumeID: vol, started: w.clk.Now()}
	w.logf("tool: snapshot %s of this backup's volume %s", id, vol)
}

// toolTag is another tool tagging a snapshot Velero recorded for this backup with its own tag.
func (w *world) toolTag() {
	op := w.recordedOne()
	if op == nil {
		w.logf("tool: nothing to tag")
		return
	}
	_, err := w.other(sourceRegion).CreateTags(context.Background(), &ec2.CreateTagsInput{
		Resources: []string{op.snapshotID}, Tags: tagList(map[string]string{"backup-tool/checked": "true"}),
	})
	w.logf("tool: tag %s backup-tool/checked -> %v", op.snapshotID, err)
}

// recordedOne returns the first operation with a snapshot this plugin took, or nil.
func (w *world) recordedOne() *operation {
	for _, op := range w.ops {
		if op.snapshotID != "" && !op.upstream {
			return op
		}
	}
	return nil
}

// String names an operation's state for the trace.
func (s opState) String() string {
	return [...]string{"open", "completed", "failed"}[s]
}

func (op *operation) String() string {
	return fmt.Sprintf("%s %s snapshot %q: %s", op.pv, op.state, op.snapshotID, op.result)
}

// createAs takes op's snapshot with tags as another plugin (who) does, outside this release's
// Snapshotter: one CreateSnapshot, its answer recorded on op.
func (w *world) createAs(op *operation, who string, tags map[string]string) {
	out, err := w.client(who, sourceAccount, sourceRegion, false).CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{
		VolumeId:          aws.String(op.volumeID),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(tags)}},
	})
	if err != nil {
		op.createErr = err.Error()
	} else {
		op.snapshotID = aws.ToString(out.SnapshotId)
	}
}
