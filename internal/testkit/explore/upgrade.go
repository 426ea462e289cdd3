package explore

import (
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// Old operations across an upgrade: the backup's item phase ran on an earlier release, which
// issued v1 operation IDs (no PV in them) and took snapshots without a create token; the
// operations are then followed by this release. Two static PVs are on one EBS volume, so the
// operations of both name the same volume.

// oldRecordedMark is the recorded mark earlier releases wrote once CreateSnapshot returned.
const oldRecordedMark = "true"

// oldVolumeType is the type of an upgrade run's volumes, which the earlier release wrote on
// its snapshots (upgrade runs draw no st1 volumes).
const oldVolumeType = "gp3"

// oldRetryAfter is how long the earlier release's CreateSnapshot waited before asking again
// after a lost answer: EC2 takes one snapshot of a volume every 15 seconds.
const oldRetryAfter = 16 * time.Second

// oldRetries bounds the requests of the earlier release's CreateSnapshot after a lost answer.
const oldRetries = 3

// upgradePVs are the two static PVs of an upgrade run, both on the backup's first volume.
var upgradePVs = []string{"pvc-static-1", "pvc-static-2"}

// upgradeSetup is what an upgrade run's users configured: the two static PVs; the earlier
// release's snapshots carry the backup's UID tag and its recorded mark when withUID and marked.
func upgradeSetup(s setup, withUID, marked bool) setup {
	s.pvs, s.upstream = upgradePVs, []bool{false, false}
	s.copyTo, s.vault = false, false
	s.upgrade = &oldRelease{withUID: withUID, marked: marked}
	return s
}

// oldRelease is how the earlier release tagged its snapshots, and whether its first
// CreateSnapshot was retried after a lost answer (making two snapshots, the first unmarked).
type oldRelease struct{ withUID, marked, retried bool }

// oldExecute is the earlier release's Execute of PV i: a v1 operation ID.
func (w *world) oldExecute(i int) {
	op := w.ops[i]
	op.executed, op.issued = true, w.clk.Now()
	op.id = model.Operation{Region: sourceRegion, VolumeID: op.volumeID, Issued: op.issued}.String()
	w.logf("velero: Execute %s on the earlier release -> operation %s", op.pv, op.id)
}

// oldCreate is the earlier release's CreateSnapshot of PV i: no create token, the volume type
// every release wrote, and the UID tag and recorded mark as it wrote them.
func (w *world) oldCreate(i int) {
	op := w.ops[i]
	op.attempted = true
	tags := veleroTags(op.pv)
	tags[model.TagVolumeType] = oldVolumeType
	if w.setup.upgrade.withUID {
		tags[model.TagBackupUID] = backupUID
	}
	tries := 1
	if w.setup.upgrade.retried && w.firstCreate(op) {
		// The first request's answer was lost: the earlier release asked again once EC2's
		// per-volume rate allowed (riding it out), and marked only the snapshot it returned.
		w.createAs(op, "earlier release", tags)
		w.logf("velero: CreateSnapshot %s on the earlier release: the answer of %q is lost, and the request sent again once EC2's per-volume rate allows", op.pv, op.snapshotID)
		op.snapshotID, op.createErr, tries = "", "", oldRetries
		w.clk.Step(oldRetryAfter)
	}
	if w.setup.upgrade.marked {
		tags[model.TagRecorded] = oldRecordedMark
	}
	for try := 1; ; try++ {
		w.createAs(op, "earlier release", tags)
		if op.createErr == "" || try == tries {
			break
		}
		op.createErr = ""
		w.clk.Step(oldRetryAfter)
	}
	op.uidTagged = w.setup.upgrade.withUID
	w.logf("velero: CreateSnapshot %s on the earlier release -> %q %s", op.pv, op.snapshotID, op.createErr)
}

// firstCreate reports whether op's is the first CreateSnapshot of the run.
func (w *world) firstCreate(op *operation) bool {
	for _, o := range w.ops {
		if o != op && o.attempted {
			return false
		}
	}
	return true
}

// withoutSnapshotCategory is the promise an operation completed while its snapshot is not
// completed breaks: a v1 operation of a static PV on a shared volume tells a finding apart.
func (w *world) withoutSnapshotCategory() category {
	if w.setup.upgrade != nil {
		return catOldOperationOtherPV
	}
	return catCompletedWithoutSnapshot
}

// checkRecordedKept checks that no snapshot Velero recorded is deleted before the backup's
// deletion: not as a stray of another operation, nor for any other reason.
func (w *world) checkRecordedKept(snaps map[string]ec2sim.Snapshot) {
	if w.deleted || w.deletions > 0 {
		return
	}
	for _, op := range w.ops {
		if s, ok := snaps[op.snapshotID]; op.snapshotID != "" && (!ok || s.DeletePending) && !w.reportedDeleted[op.snapshotID] {
			w.violate(catRecordedDeleted, "%s, the snapshot Velero recorded for %s, was deleted while the backup is kept", op.snapshotID, op.pv)
		}
	}
}
