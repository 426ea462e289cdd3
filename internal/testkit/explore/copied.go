package explore

import (
	"net/url"
	"slices"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The promises on which sources a plugin process shares or copies, judged on each request as it
// is sent: rule 6's "Never copied: a source marked copy-failed", and "nothing stays shared once
// its operation has ended": a process that saw a source's operation end, or one of its copies
// refused, neither shares nor copies it again.
const (
	catCopiedMarkedFailed category = "a source marked copy-failed shared or copied again"
	catCopiedAfterEnded   category = "a source shared or copied by a plugin process that saw its operation end or a copy of it refused"
)

// processState is what the checks remember of the plugin process under way (a reconcile's).
type processState struct {
	// ended holds the sources whose operation this process reported ended to Velero.
	ended map[string]bool
	// refused holds the sources of the copies EC2 refused this process.
	refused map[string]bool
	// marksRefused says EC2 refuses this process every copy-failed mark (setup.markRefused).
	marksRefused bool
}

// startProcess forgets what the last plugin process saw.
func (w *world) startProcess() {
	w.process = processState{ended: map[string]bool{}, refused: map[string]bool{}}
}

// copySource is the source a request shares with another account or copies, "" for any other
// request.
func copySource(action string, form url.Values) string {
	switch action {
	case "CopySnapshot":
		return form.Get("SourceSnapshotId")
	case "ModifySnapshotAttribute":
		for k := range form {
			if strings.HasPrefix(k, "CreateVolumePermission.Add.") {
				return form.Get("SnapshotId")
			}
		}
	}
	return ""
}

// checkCopyRequest checks a request of the plugin before EC2 serves it: a source it shares or
// copies is not marked copy-failed, and its process saw neither its operation end nor a copy of
// it refused. An earlier release's operations are left out: they may follow another snapshot
// than the one Velero recorded.
func (w *world) checkCopyRequest(q request, form url.Values) {
	id := copySource(q.action, form)
	if id == "" || w.setup.upgrade != nil {
		return
	}
	for _, s := range w.sim.SnapshotsIn(sourceAccount, sourceRegion) {
		if s.ID == id && s.Tags[model.TagCopyFailed] != "" {
			w.violate(catCopiedMarkedFailed, "%s of %s, marked %s=%s", q.action, id, model.TagCopyFailed, s.Tags[model.TagCopyFailed])
		}
	}
	switch {
	case w.process.ended[id]:
		w.violate(catCopiedAfterEnded, "%s of %s after its operation ended in the same plugin process", q.action, id)
	case w.process.refused[id]:
		w.violate(catCopiedAfterEnded, "%s of %s after a copy of it was refused in the same plugin process", q.action, id)
	}
}

// noteRefusal records the source of a copy EC2 refuses the plugin process.
func (w *world) noteRefusal(q request, form url.Values) {
	if id := copySource(q.action, form); id != "" && q.action == "CopySnapshot" {
		w.process.refused[id] = true
	}
}

// refuses reports whether the account's policy refuses q now (setup.refuses), once begun.
func (w *world) refuses(q request) bool {
	return (!w.setup.refusalLate || w.refusalBegun) && w.setup.refuses(q)
}

// queues reports whether EC2 queues q now: a regional copy, or a vault one, before a late
// refusal begins (setup.regionalQueued, setup.vaultQueued).
func (w *world) queues(q request) bool {
	return w.setup.regionalQueued && regionalCopy(q) || w.setup.vaultQueued && q.action == "CopySnapshot" && q.role == "vault" ||
		q.action == "CopySnapshot" && w.slotsHeld()
}

// slotsHeld reports whether another tool's copies hold the account's copy slots now
// (setup.slotsHeldPast): until that long after the first timeout of an open operation.
func (w *world) slotsHeld() bool {
	if w.setup.slotsHeldPast == 0 {
		return false
	}
	for _, op := range w.ops {
		if op.executed && w.clk.Now().After(op.issued.Add(w.setup.timeout+w.setup.slotsHeldPast)) {
			return false
		}
	}
	return true
}

// refusesMark reports whether EC2 refuses q, a CreateTags of a copy-failed mark with the
// location's credentials, made by the first plugin process that writes one (setup.markRefused).
func (w *world) refusesMark(q request, form url.Values) bool {
	if !w.setup.markRefused || w.markRefusedOnce && !w.process.marksRefused || q.action != "CreateTags" || q.role == "vault" {
		return false
	}
	for k, vs := range form {
		if strings.HasPrefix(k, "Tag.") && strings.HasSuffix(k, ".Key") && slices.Contains(vs, model.TagCopyFailed) {
			w.markRefusedOnce, w.process.marksRefused = true, true
			w.logf("ec2: the CreateTags of the %s mark refused", model.TagCopyFailed)
			return true
		}
	}
	return false
}

// refuseOnceShared begins the refusal of regional copies EC2 queues (setup.regionalQueued) as
// soon as a step has shared a source with the vault account: the policy changes while the
// vault copy is under way and the regional one waits.
func (w *world) refuseOnceShared() {
	if w.setup.regionalQueued && slices.ContainsFunc(w.sim.SnapshotsIn(sourceAccount, sourceRegion), func(s ec2sim.Snapshot) bool { return len(s.SharedWith) > 0 }) {
		w.beginRefusal()
	}
}

// beginRefusal is the account's policy beginning to refuse the setup's refused copy; EC2's
// queue of regional copies, if any, drains.
func (w *world) beginRefusal() {
	w.refusalBegun = true
	w.setup.regionalQueued, w.setup.vaultQueued = false, false
	w.logf("account: from now on every %s is refused by its account's policy", w.setup.refusedCopy)
}
