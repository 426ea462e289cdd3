package explore

import (
	"slices"
	"time"

	"pgregory.net/rapid"
)

// The shape of a drawn run.
const (
	maxPVs   = 3
	minSteps = 4
	maxSteps = 60
	// faultFreeIn10 is how many steps in ten run on a healthy EC2.
	faultFreeIn10 = 6
	// kubeFaultFreeIn10 is how many steps in ten the Kubernetes API answers every read.
	kubeFaultFreeIn10 = 8
	// pollReconciles reconciles, pollEvery apart, make one poll: Velero's sync period over a minute.
	pollReconciles = 3
	pollEvery      = 20 * time.Second
	// maxPollsUntilEnded bounds the polls, a minute apart, of actPollUntilEnded.
	maxPollsUntilEnded = 30
)

// Actor kinds: who takes the next step.
const (
	actExecute   = "velero: Execute"
	actCreate    = "velero: CreateSnapshot"
	actReconcile = "velero: reconcile"
	actPoll      = "velero: poll for a minute"
	// actPollUntilEnded is Velero's operations controller polling, a minute at a time, until
	// every operation has ended (a night's backup, left to finish).
	actPollUntilEnded = "velero: poll until every operation ended"
	actRestart        = "velero: server restart"
	actDelete         = "velero: delete backup"
	actAdvance        = "clock: advance"
	actRegionDown     = "ec2: region down"
	actRegionUp       = "ec2: region up"
	actOtherInstall   = "other install: snapshot"
	actToolCopy       = "tool: copy"
	actToolTag        = "tool: tag"
	actRestore        = "velero: restore a PV"
	// actLoseCancel is a reconcile whose plugin process exits in its first Cancel (lost.go).
	actLoseCancel = "velero: reconcile, the plugin process lost in a Cancel"
	// actSameVolume is another backup of the same name snapshotting this backup's volume (lost.go).
	actSameVolume = "other install: snapshot of this backup's volume"
	// actFailedMark is the first reconcile to see a source completed (the clock moves until
	// one does), in which EC2 fails the location's CreateTags for the first plugin call that
	// sends one, and serves the next calls.
	actFailedMark = "velero: reconcile, EC2 failing one call's CreateTags"
	// actRefusalBegins is an account's policy beginning to refuse a copy mid-run (copied.go).
	actRefusalBegins = "account: policy begins refusing a copy"
	// actTimeoutReconcile is Velero's first reconcile after an open operation's item-operation
	// timeout: the clock moves to the earliest one, and a sync period at most past it.
	actTimeoutReconcile = "velero: reconcile at an item-operation timeout"
	// actToolSnapshot is a backup tool's policy (Data Lifecycle Manager's, say) snapshotting one
	// of this backup's volumes with its own tags.
	actToolSnapshot = "tool: snapshot of this backup's volume"
)

var (
	advances = []time.Duration{time.Second, syncPeriod, time.Minute, 5 * time.Minute, 20 * time.Minute, time.Hour}
	// itemAdvances are how far the clock may move while a PV's Execute waits for its
	// CreateSnapshot: core asks right after, in the same worker.
	itemAdvances = []time.Duration{time.Second, syncPeriod}
	listingLags  = []time.Duration{0, 5 * time.Second, 40 * time.Second}
	// timeouts are the item-operation timeouts users set: a short one (less than four create
	// windows) leaves a cancelled source copyable but for its copy-cancelled mark.
	timeouts = []time.Duration{20 * time.Minute, time.Hour, 4 * time.Hour}
	// slotReleases are how long after the first item-operation timeout another tool's copies
	// free the account's copy slots (setup.slotsHeldPast).
	slotReleases    = []time.Duration{syncPeriod, time.Minute, 3 * time.Minute}
	pvNames         = []string{"pvc-1", "pvc-2", "pvc-3"}
	maxForeign      = 4
	maxHookRequests = 12
	// hookDelays are how long after a deletion's request a reconcile may come.
	hookDelays = []time.Duration{0, 5 * time.Second, 30 * time.Second}
)

// drawSetup draws what the users configured.
func drawSetup(t *rapid.T) setup {
	n := rapid.IntRange(1, maxPVs).Draw(t, "PVs")
	s := setup{pvs: pvNames[:n]}
	for range n {
		s.upstream = append(s.upstream, rapid.IntRange(0, 7).Draw(t, "upstream plugin's PV (0)") == 0)
	}
	s.copyTo = rapid.Bool().Draw(t, "copyToRegion")
	s.vault = rapid.Bool().Draw(t, "vault")
	if s.vault {
		s.vaultRegion = rapid.SampledFrom([]string{copyRegion, farRegion}).Draw(t, "vaultRegion")
		s.lock = rapid.Bool().Draw(t, "vault lock")
		s.retain = rapid.Bool().Draw(t, "vaultRetainOnDelete")
		s.vaultCredsOf, s.vaultAccountID = vaultAccount, vaultAccount
		if rapid.IntRange(0, 3).Draw(t, "vault credentials of the source account (0)") == 0 {
			s.vaultCredsOf = sourceAccount
		}
		if rapid.IntRange(0, 5).Draw(t, "mistyped vaultAccountId (0)") == 0 {
			s.vaultAccountID = strangerAccount
		}
		if s.vaultBucket = rapid.IntRange(0, 2).Draw(t, "vaultBucket (0: none)") > 0; s.vaultBucket {
			s.recordLag = rapid.SampledFrom(recordLags).Draw(t, "the records' replication lag (-1ns: broken)")
		}
	}
	s.earlierBackup = rapid.IntRange(0, 3).Draw(t, "the bucket holds only this backup (0)") > 0
	s.listingLag = rapid.SampledFrom(listingLags).Draw(t, "listing lag")
	s.timeout = rapid.SampledFrom(timeouts).Draw(t, "item-operation timeout")
	s.seed = rapid.Int64().Draw(t, "simulator seed")
	if rapid.IntRange(0, 3).Draw(t, "EC2 at its mutating request rate (0)") == 0 {
		s.requestTime = mutatingRequestTime
	}
	if s.vault && rapid.Bool().Draw(t, "an account's policy refusing a copy") {
		s.refusedCopy = rapid.SampledFrom([]string{regionalCopyRefused, vaultCopyRefused}).Draw(t, "copy refused")
		// The refused copy beside the other target's: a regional refusal needs a regional copy.
		s.copyTo = s.copyTo || s.refusedCopy == regionalCopyRefused
		s.refusalLate = rapid.Bool().Draw(t, "the refusal begins mid-run")
		if s.refusedCopy == regionalCopyRefused {
			s.regionalQueued = s.refusalLate && rapid.Bool().Draw(t, "regional copies queued until the refusal begins")
			s.vaultQueued = s.regionalQueued && rapid.Bool().Draw(t, "vault copies queued too")
		}
	}
	wrongVault := s.vault && (s.vaultCredsOf != vaultAccount || s.vaultAccountID != vaultAccount)
	if s.refusedCopy == regionalCopyRefused || wrongVault && s.copyTo {
		// Only the process that saw why the operation fails then knows its source is not copied.
		s.markRefused = rapid.Bool().Draw(t, "copy-failed marks refused to the first process writing one")
	}
	s.stsUnavailable = s.vault && rapid.IntRange(0, 3).Draw(t, "STS unavailable for the run (0)") == 0
	s.restoredVolumes = rapid.IntRange(0, 3).Draw(t, "volumes this plugin restored (0)") == 0
	if rapid.IntRange(0, 5).Draw(t, "copies outlasting the item-operation timeout (0)") == 0 {
		s.slowCopies, s.timeout = true, time.Hour
	}
	if rapid.IntRange(0, 7).Draw(t, "item phase on the earlier release (0)") == 0 {
		// A retried CreateSnapshot marked the snapshot it returned, and tagged both with the UID:
		// the releases that retried wrote both.
		retried := rapid.IntRange(0, 2).Draw(t, "earlier release's CreateSnapshot retried after a lost answer (0)") == 0
		withUID, marked := true, true
		if !retried {
			withUID, marked = rapid.Bool().Draw(t, "earlier release's UID tag"), rapid.Bool().Draw(t, "earlier release's recorded mark")
		}
		s = upgradeSetup(s, withUID, marked)
		s.upgrade.retried = retried
	}
	// Not with the earlier release: its CreateSnapshot did not ride out an st1 volume's one
	// pending snapshot, which the README's known limit of static PVs on one volume names.
	s.hddVolumes = s.upgrade == nil && rapid.IntRange(0, 3).Draw(t, "st1 volumes (0)") == 0
	s.volumeKinds = drawVolumeKinds(t, s)
	if (s.copyTo || s.vault) && rapid.IntRange(0, 3).Draw(t, "copy slots held past the first item-operation timeout (0)") == 0 {
		s.slotsHeldPast = rapid.SampledFrom(slotReleases).Draw(t, "slots freed past the timeout by")
	}
	return s
}

// drawFaults draws the faults EC2 injects during one step.
func drawFaults(t *rapid.T) faults {
	if rapid.IntRange(0, 9).Draw(t, "fault (>=6)") < faultFreeIn10 {
		return nil
	}
	r := &faultRule{
		effect: faultEffect(rapid.IntRange(0, int(numFaultEffects)-1).Draw(t, "fault effect")),
		action: rapid.SampledFrom(faultActions).Draw(t, "fault action"),
		every:  rapid.IntRange(1, 3).Draw(t, "fault every"),
		role:   rapid.SampledFrom(faultRoles).Draw(t, "fault credentials"),
	}
	if r.effect == faultLoseThenDown && r.action != "CreateVolume" {
		r.action = "CreateSnapshot"
	}
	if r.effect == faultSlow {
		r.action = "GetCallerIdentity"
	}
	return faults{r}
}

// drawKubeFault draws the fault of the Kubernetes API during one step.
func drawKubeFault(t *rapid.T) *kubeFault {
	if rapid.IntRange(0, 9).Draw(t, "Kubernetes API fault (>=8)") < kubeFaultFreeIn10 {
		return nil
	}
	return &kubeFault{
		effect: kubeEffect(rapid.IntRange(0, int(numKubeEffects)-1).Draw(t, "Kubernetes API fault effect")),
		every:  rapid.IntRange(1, 3).Draw(t, "Kubernetes API fault every"),
	}
}

// enabled lists the actors that may take the next step.
func (w *world) enabled() []string {
	out := []string{actAdvance}
	// A worker asks for a PV's snapshot right after the PV's Execute, as Velero's item
	// backupper does; another worker's Execute and CreateSnapshot meanwhile are drawn within
	// the CreateSnapshot (createInterleaved), so that a long one does not delay the other's.
	switch {
	case len(w.uncreated()) > 0:
		out = append(out, actCreate)
	case len(w.unexecuted()) > 0:
		out = append(out, actExecute)
	}
	waiting := w.waiting()
	if w.itemPhaseDone() && waiting && !w.deleted && !w.abandoned {
		out = append(out, actReconcile, actPoll, actPollUntilEnded, actTimeoutReconcile)
		if !w.restarted {
			out = append(out, actRestart)
		}
		if w.timedOutBeside() {
			out = append(out, actLoseCancel)
		}
		if w.setup.markRefused {
			// Where an operation may end with its copy unstarted and unmarked: a failure of
			// that call alone must not let the process's next call copy its source.
			out = append(out, actFailedMark)
		}
	}
	if w.itemPhaseDone() && (!waiting || w.restarted) && w.deletions == 0 && !w.notInCluster {
		out = append(out, actDelete)
	}
	if len(w.down) < len(allRegions) {
		out = append(out, actRegionDown)
	}
	if len(w.down) > 0 {
		out = append(out, actRegionUp)
	}
	if len(w.foreign) < maxForeign {
		out = append(out, actOtherInstall, actToolCopy, actToolSnapshot)
		if len(w.executed()) > 0 {
			out = append(out, actSameVolume)
		}
	}
	if w.recordedOne() != nil {
		out = append(out, actToolTag)
	}
	if w.setup.refusalLate && !w.refusalBegun && !w.setup.regionalQueued {
		out = append(out, actRefusalBegins)
	}
	if len(w.restorable()) > 0 {
		out = append(out, actRestore)
	}
	out = append(out, w.coreActors()...)
	out = append(out, w.syncActors()...)
	return append(out, w.drillAndAuditActors()...)
}

func (w *world) unexecuted() []int {
	var out []int
	for i, op := range w.ops {
		if !op.executed {
			out = append(out, i)
		}
	}
	return out
}

func (w *world) uncreated() []int {
	var out []int
	for i, op := range w.ops {
		if op.executed && !op.attempted {
			out = append(out, i)
		}
	}
	return out
}

// step draws and takes one step of actor.
func (w *world) step(t *rapid.T, actor string) {
	switch actor {
	case actExecute:
		w.execute(rapid.SampledFrom(w.unexecuted()).Draw(t, "PV"))
	case actCreate:
		i := rapid.SampledFrom(w.uncreated()).Draw(t, "PV")
		if rapid.IntRange(0, 3).Draw(t, "plugin process restarted before CreateSnapshot (0)") == 0 {
			w.restartItemProcess()
		}
		others := slices.DeleteFunc(w.unexecuted(), func(j int) bool { return w.ops[j].upstream || w.ops[i].upstream })
		if len(others) == 0 || rapid.Bool().Draw(t, "alone") {
			w.create(i)
			return
		}
		w.createInterleaved(i, rapid.SampledFrom(others).Draw(t, "another worker's PV"), rapid.IntRange(0, maxHookRequests).Draw(t, "after requests"))
	case actReconcile:
		w.reconcile()
	case actTimeoutReconcile:
		w.reconcileAtTimeout(rapid.SampledFrom(itemAdvances).Draw(t, "past the timeout by"))
	case actLoseCancel:
		w.reconcileLosingCancel()
	case actFailedMark:
		// At its worst moment: the first reconcile to see a source completed, whose copies
		// the first Progress call then starts and marks.
		if i := w.firstPendingSource(); i >= 0 {
			start := w.clk.Now()
			w.advanceUntilSnapshotAt(i, 100)
			w.logf("clock: +%s, until the snapshot of %s completes", w.clk.Since(start), w.ops[i].pv)
		}
		effect := rapid.SampledFrom([]faultEffect{faultThrottle, faultServerError}).Draw(t, "CreateTags failing with")
		w.faults = append(w.faults, &faultRule{action: "CreateTags", role: "source", effect: effect, every: 1, oneCall: true})
		w.logf("ec2: %v", w.faults[len(w.faults)-1])
		w.reconcile()
	case actSameVolume:
		i, withUID := rapid.SampledFrom(w.executed()).Draw(t, "PV"), rapid.Bool().Draw(t, "with its UID")
		maker := byThisRelease
		switch {
		case rapid.Bool().Draw(t, "by the upstream plugin"):
			maker = byUpstream
		case w.setup.upgrade != nil && rapid.Bool().Draw(t, "by the earliest release, in a cluster not upgraded"):
			// Drawn where this backup's snapshots carry no create token either.
			maker = byEarliestRelease
		}
		w.sameVolumeSnapshot(i, withUID, maker)
	case actPoll:
		for range pollReconciles {
			w.advance(pollEvery)
			w.reconcile()
		}
	case actPollUntilEnded:
		for i := 0; i < maxPollsUntilEnded && w.waiting(); i++ {
			w.advance(time.Minute)
			w.reconcile()
		}
	case actRestart:
		w.restart()
	case actDelete:
		kinds := []deletionKind{deleteBySource, deleteByGC}
		finished := !w.waiting() // a recovery cluster holds a synced copy of a finished backup only
		if finished && w.cfg.CopyToRegion != "" {
			kinds = append(kinds, deleteByRecovery)
		}
		if finished && w.cfg.Vault.Enabled() {
			kinds = append(kinds, deleteByVaultRecovery)
		}
		kind := rapid.SampledFrom(kinds).Draw(t, "deleted by")
		after := rapid.IntRange(-1, maxHookRequests).Draw(t, "reconcile after requests (-1: none)")
		var delay time.Duration
		if after >= 0 {
			delay = rapid.SampledFrom(hookDelays).Draw(t, "reconcile delay")
		}
		w.deleteBackup(kind, after, delay)
	case actAdvance:
		choices := advances
		if len(w.uncreated()) > 0 {
			choices = itemAdvances
		}
		w.advance(rapid.SampledFrom(choices).Draw(t, "advance"))
	case actRegionDown:
		var up []string
		for _, r := range allRegions {
			if !w.down[r] {
				up = append(up, r)
			}
		}
		w.setDown(rapid.SampledFrom(up).Draw(t, "region"), true)
	case actRegionUp:
		var down []string
		for _, r := range allRegions {
			if w.down[r] {
				down = append(down, r)
			}
		}
		w.setDown(rapid.SampledFrom(down).Draw(t, "region"), false)
	case actOtherInstall:
		w.otherInstallSnapshot(rapid.Bool().Draw(t, "with its UID"), rapid.SampledFrom(append(slices.Clone(w.setup.pvs), "pvc-theirs")).Draw(t, "PV name"))
	case actToolSnapshot:
		pvs := w.uncreated() // where it holds a CreateSnapshot back, the volume's limit reached
		if len(pvs) == 0 {
			pvs = w.executed()
		}
		if len(pvs) == 0 {
			pvs = []int{0}
		}
		w.toolSnapshot(rapid.SampledFrom(pvs).Draw(t, "PV"))
	case actToolCopy:
		w.toolCopy(rapid.Bool().Draw(t, "of this backup's"))
	case actToolTag:
		w.toolTag()
	case actRefusalBegins:
		w.beginRefusal()
	case actRestore:
		w.restoreScripted(rapid.SampledFrom(w.restorable()).Draw(t, "PV"), rapid.SampledFrom(w.restoreRegions()).Draw(t, "restored in"), drawRestore(t))
	case actRaceDeletion, actPendingOther, actRestorePending:
		w.stepCore(t, actor)
	case actReinstall, actForget, actSync, actConfigChange:
		w.stepSync(t, actor)
	default:
		w.stepDrillOrAudit(t, actor)
	}
}

// explore draws and runs one exploration: a setup, a sequence of steps each under drawn faults,
// checked after each, and the settling end. It stops at the first broken promise that counts
// (counts says which do; the others are recorded and the run goes on).
func explore(t *rapid.T, counts func(category) bool) *world {
	w, err := newWorld(drawSetup(t))
	if err != nil {
		t.Fatalf("%v", err)
	}
	steps := rapid.IntRange(minSteps, maxSteps).Draw(t, "steps")
	for range steps {
		w.faults, w.kube = drawFaults(t), drawKubeFault(t)
		actor := rapid.SampledFrom(w.enabled()).Draw(t, "actor")
		w.kinds = append(w.kinds, actor)
		if len(w.faults) > 0 {
			w.logf("ec2: %v during the next step", w.faults[0])
		}
		if w.kube != nil {
			w.logf("kubernetes API: %v during the next step", w.kube)
		}
		w.step(t, actor)
		w.faults, w.kube = nil, nil
		w.refuseOnceShared()
		w.checkStep()
		if slices.ContainsFunc(w.violations, func(v violation) bool { return counts(v.cat) }) {
			return w
		}
	}
	w.drawVaultBucketFault(t) // for the audit as the run settles
	w.settle()
	// The operator's next audit, once the backup's deletion has settled: --delete-orphans through
	// a location drawn.
	only := rapid.SampledFrom(append([]string{""}, w.auditLocations()...)).Draw(t, "audit --location after the deletion (\"\": every one)")
	w.deleteOrphans(only, rapid.SampledFrom(orphanGraces).Draw(t, "orphan grace after the deletion"), true)
	w.checkStep()
	return w
}
