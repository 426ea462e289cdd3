package explore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// What a plugin process loses when it exits, and the snapshots of another backup of the same
// name on this backup's volumes: the draws through which the rules telling this backup's
// snapshots from others' (the UID, the operation's window) and Cancel's marks show.

// errProcessLost is what Velero's call of a plugin process that exited returns.
var errProcessLost = errors.New("plugin process exited (rpc error: code = Unavailable)")

// restartItemProcess is the item phase's plugin process exiting and Velero starting another:
// what Execute handed to CreateSnapshot (the backup's UID) is lost, so the next CreateSnapshot
// tags no UID and its snapshot is told by its operation's window.
func (w *world) restartItemProcess() {
	w.handoff = ebs.NewHandoff(w.clk)
	w.snapshotter = w.itemSnapshotter()
	w.logf("velero: the item phase's plugin process restarted (what Execute handed to CreateSnapshot is lost)")
}

// reconcileLosingCancel is a reconcile whose plugin process exits as its first Cancel begins,
// before any request: Velero fails the operation all the same, and goes on with the backup's
// other operations in a fresh process.
func (w *world) reconcileLosingCancel() {
	w.cancelLost = true
	w.reconcile()
	w.cancelLost = false
}

// timedOutBeside reports whether an open operation has passed the item-operation timeout while
// another is open and has not: a reconcile cancels the one and asks the other for progress.
func (w *world) timedOutBeside() bool {
	var past, within bool
	for _, op := range w.ops {
		if !op.executed || op.state != opOpen {
			continue
		}
		if w.clk.Now().Before(op.issued.Add(w.setup.timeout)) {
			within = true
		} else {
			past = true
		}
	}
	return past && within
}

// sameVolumeMaker is what took another backup's snapshot of this backup's volume.
type sameVolumeMaker int

const (
	// byThisRelease: this plugin, of this release, in another cluster or a later backup.
	byThisRelease sameVolumeMaker = iota
	// byUpstream: the upstream AWS plugin.
	byUpstream
	// byEarliestRelease: this plugin's earliest release, in another cluster not upgraded yet.
	byEarliestRelease
)

// sameVolumeSnapshot is another backup of the same name (another cluster's on the same volume,
// or a later backup) snapshotting PV i's volume, with the tags its maker writes.
//   - byThisRelease, it carries the tags this release's CreateSnapshot writes: its own UID when
//     withUID, none when its handoff was lost too. Without a UID, within the window of an
//     operation of the volume, it could be that operation's own by every rule (the README's
//     rules 1 and 2 take the one marked returned): it then carries its UID.
//   - byUpstream, it carries Velero core's tags only: no UID, no create token, no recorded mark.
//     Within an operation's window it is then a candidate the rules tell apart from the
//     operation's own once that is listed (rule 7), or find ambiguous beside the upstream
//     plugin's or an unmarked earlier release's, and never a stray (rule 2: snapshots without a
//     token are never each other's strays).
//   - byEarliestRelease, it carries core's tags and the volume type, as this plugin's earliest
//     release wrote them: no UID, no create token, no recorded mark. Beside an earlier
//     release's snapshot of this backup, marked returned, it is a candidate no rule but rule 2
//     keeps from being taken for that call's stray.
func (w *world) sameVolumeSnapshot(i int, withUID bool, maker sameVolumeMaker) {
	op := w.ops[i]
	tags := veleroTags(op.pv)
	switch maker {
	case byEarliestRelease:
		tags[model.TagVolumeType] = oldVolumeType
	case byThisRelease:
		for _, o := range w.ops {
			if o.executed && o.volumeID == op.volumeID && w.inWindow(o, w.clk.Now()) {
				withUID = true
			}
		}
		tags[model.TagCreateToken], tags[model.TagRecorded] = fmt.Sprintf("theirs-%d", len(w.foreign)), recordedReturnedMark
		if withUID {
			tags[model.TagBackupUID] = otherUID
		}
	}
	out, err := w.other(sourceRegion).CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{
		VolumeId:          aws.String(op.volumeID),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(tags)}},
	})
	if err != nil {
		w.logf("other install: CreateSnapshot of %s refused: %v", op.volumeID, err)
		return
	}
	id := aws.ToString(out.SnapshotId)
	w.foreign[id] = foreignSnapshot{account: sourceAccount, region: sourceRegion, tags: tags, volumeID: op.volumeID, started: w.clk.Now()}
	w.logf("other install: snapshot %s of this backup's volume %s, backup %s, PV %s, tags %v", id, op.volumeID, backupName, op.pv, tags)
}

// executed lists the operations Velero has opened.
func (w *world) executed() []int {
	var out []int
	for i, op := range w.ops {
		if op.executed {
			out = append(out, i)
		}
	}
	return out
}
