package explore

import (
	"slices"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// A restore's own words: restoring in the copy region while the recorded snapshot's copy there
// is still pending fails, and its error says so, truthfully. It is the plugin that refuses (the
// README: a restore in the copy region needs a completed copy), before asking EC2 for a volume:
// EC2 refusing CreateVolume from a pending snapshot is another answer, and the error must not
// pass one off as the other.

// actRestorePending is Velero restoring a PV of the finished backup in the copy region while
// EC2 lists its copy there as pending (an operation that failed with its copy under way).
const actRestorePending = "velero: restore a PV in the copy region while its copy is pending"

// catRestoreWords is the promise on the words of a restore refused for a pending copy.
const catRestoreWords category = "a restore in the copy region, its copy pending there, does not fail saying so, or asks EC2 for a volume"

// pendingRestorable lists the PVs Velero may restore whose recorded snapshot EC2 lists in the
// copy region as pending copies only.
func (w *world) pendingRestorable() []int {
	if w.cfg.CopyToRegion == "" {
		return nil
	}
	var out []int
	for _, i := range w.restorable() {
		if len(w.pendingCopiesOnly(w.ops[i].snapshotID, copyRegion)) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// pendingCopiesOnly returns the copies of source this plugin made in region that EC2 lists
// (the listing lag has passed since they started) as pending, when it lists none completed
// there; nil otherwise.
func (w *world) pendingCopiesOnly(source, region string) []string {
	var pending []string
	for _, s := range w.sim.SnapshotsIn(sourceAccount, region) {
		if s.SourceSnapshotID != source || s.Tags[model.TagSourceSnapshotID] != source || s.DeletePending || w.clk.Now().Before(s.StartTime.Add(w.setup.listingLag)) {
			continue
		}
		switch s.State {
		case "completed":
			return nil
		case "pending":
			pending = append(pending, s.ID)
		}
	}
	return pending
}

// healthyReads reports whether EC2 answers a restore's reads in the step: no region down, and no
// fault but on CreateVolume (lost answers drawn for the restore).
func (w *world) healthyReads() bool {
	return len(w.down) == 0 && !slices.ContainsFunc(w.faults, func(r *faultRule) bool { return r.action != "CreateVolume" })
}

// checkRestoreWords checks a restore in the copy region whose copies there were pending when it
// began (pending), the requests it sent being sent: it failed, sent no CreateVolume, and its
// error names each pending copy and says it is pending.
func (w *world) checkRestoreWords(c restoreCall, pending []string, sent []request) {
	if len(pending) == 0 || c.volumeID != "" {
		return // a volume made from anything but a completed copy is judged by checkRestores
	}
	if slices.ContainsFunc(sent, func(q request) bool { return q.action == "CreateVolume" }) {
		w.violate(catRestoreWords, "the restore of %s in %s asked EC2 for a volume while its copies %v there are pending, and failed with EC2's answer: %s", c.pv, c.region, pending, c.err)
		return
	}
	for _, id := range pending {
		if !strings.Contains(c.err, id) || !strings.Contains(c.err, "pending") {
			w.violate(catRestoreWords, "the restore of %s in %s, its copy %s there pending, failed without saying so: %q", c.pv, c.region, id, c.err)
			return
		}
	}
}
