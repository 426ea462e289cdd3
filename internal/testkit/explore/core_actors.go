package explore

import "pgregory.net/rapid"

// The actors through which the core's blind spots show: a deletion landing inside a reconcile's
// call (race.go), another install's snapshot marked pending (pending_other.go) and a restore in
// the copy region while its copy is pending (restore_words.go). The restores' settings are
// judged on every restore (volumes.go).

// raceYields are when the reconcile goes on once the deletion has landed: after the deletion's
// first write (its mark, most often), after its second, or once it has ended (-1).
var raceYields = []int{1, 2, -1}

// coreActors lists those of the actors that may take the next step.
func (w *world) coreActors() []string {
	var out []string
	if w.itemPhaseDone() && w.waiting() && w.restarted && !w.deleted && !w.abandoned && w.deletions == 0 && !w.notInCluster {
		out = append(out, actRaceDeletion)
	}
	if len(w.foreign) < maxForeign {
		out = append(out, actPendingOther)
	}
	if len(w.pendingRestorable()) > 0 {
		out = append(out, actRestorePending)
	}
	return out
}

// stepCore draws and takes one step of actor, one of coreActors'.
func (w *world) stepCore(t *rapid.T, actor string) {
	switch actor {
	case actRaceDeletion:
		if i := w.firstPendingSource(); i >= 0 && rapid.Bool().Draw(t, "at the first reconcile to see a source completed") {
			// Where a fill starts copies, which a deletion racing it must not leave behind.
			start := w.clk.Now()
			w.advanceUntilSnapshotAt(i, 100)
			w.logf("clock: +%s, until the snapshot of %s completes", w.clk.Since(start), w.ops[i].pv)
		}
		kind := rapid.SampledFrom([]deletionKind{deleteBySource, deleteByGC}).Draw(t, "deleted by")
		write := rapid.IntRange(1, maxRaceWrites).Draw(t, "the deletion lands before the reconcile's write")
		w.raceDeletion(kind, write, rapid.SampledFrom(raceYields).Draw(t, "the reconcile goes on after the deletion's write (-1: at its end)"))
	case actPendingOther:
		pv, vol := rapid.SampledFrom(w.setup.pvs).Draw(t, "PV name"), w.otherVols[0]
		if ours := w.executed(); len(ours) > 0 && rapid.Bool().Draw(t, "of this backup's volume") {
			op := w.ops[rapid.SampledFrom(ours).Draw(t, "PV")]
			pv, vol = op.pv, op.volumeID
		}
		w.pendingOtherSnapshot(pv, vol, rapid.Bool().Draw(t, "with its UID"), rapid.SampledFrom([]string{theirInstall, ""}).Draw(t, "install tag (\"\": a release before it)"))
	case actRestorePending:
		w.restore(rapid.SampledFrom(w.pendingRestorable()).Draw(t, "PV"), copyRegion)
	}
}
