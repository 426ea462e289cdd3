package tracking

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
)

// The decisions of Progress and Cancel: pure functions of what one call read from EC2 (a
// lookup), the operation, Velero's record of the backup, the settings and the time. They make
// no request, read no clock and log nothing; the Tracker acts on what they return.

// decideCfg is what of a Tracker's settings its decisions depend on.
type decideCfg struct {
	createWindow  time.Duration
	listingLag    time.Duration
	notFoundGrace time.Duration
}

// decideCfgOf is what of s the decisions depend on.
func decideCfgOf(s ebs.Settings) decideCfg {
	return decideCfg{createWindow: s.CreateWindow(), listingLag: s.ListingLag, notFoundGrace: s.NotFoundGrace}
}

// lookup is what the places of an operation show of it.
type lookup struct {
	view *backupView
	res  model.Resolution
	// recorded counts the distinct recorded sources of the backup listed in the places that
	// answered; unnamed the snapshots of its name without its UID.
	recorded, unnamed int
	// waiting and refused are the failures of places that did not answer, transient or not.
	waiting, refused []error
	note, where      string
	// badConfig names the places whose location config the volume snapshotter refuses.
	badConfig []string
}

// decideUnresolved reports an operation whose snapshot the lookup did not resolve to one source:
// several could be the recorded one, a place refused or could not answer, or none is listed.
// A refusal fails the operation, unless Velero counts a failed native snapshot: that call may
// have made this volume's snapshot, which nothing but this operation deletes, so it waits
// (until EC2 answers, or Velero's item-operation timeout). p carries the call's Updated time
// and units.
func decideUnresolved(op model.Operation, st velerov1.BackupStatus, backupName string, l lookup, cfg decideCfg, p velero.OperationProgress) velero.OperationProgress {
	switch {
	case l.view != nil:
		return decideAmbiguous(op, l.res, cfg, p)
	case len(l.refused) > 0 && st.VolumeSnapshotsAttempted > st.VolumeSnapshotsCompleted:
		// A failed CreateSnapshot may have made this volume's snapshot all the same: only this
		// operation would delete it, so it does not end before it has looked.
		p.Description = fmt.Sprintf("EC2 refuses to list the snapshots of volume %s in %s: %v; waiting, since Velero recorded %d of %d attempted native snapshots as failed "+
			"and one may have been made for this volume all the same, to be deleted before this operation ends", op.VolumeID, op.Region, errors.Join(l.refused...),
			st.VolumeSnapshotsAttempted-st.VolumeSnapshotsCompleted, st.VolumeSnapshotsAttempted)
	case len(l.refused) > 0:
		p.Completed = true
		p.Err = fmt.Sprintf("EC2 refuses to list the snapshots of volume %s in %s: %v", op.VolumeID, op.Region, errors.Join(l.refused...))
	case len(l.waiting) > 0:
		p.Description = "waiting for EC2: " + errors.Join(l.waiting...).Error()
	default:
		p = decideNotFound(op, st, backupName, l, cfg, p)
	}
	return p
}

// decideUnnamedPV says why an operation of an earlier release (its ID names no PV) waits before
// following src, the snapshot it resolved to, or "" when it follows it. Such an operation tells
// its snapshot by volume and time only, and two static PVs may share the volume: src may be the
// other PV's, listed while this operation's own is not yet, or no longer (deleted with the
// backup). It waits while that may be so: until EC2 lists as many of the backup's recorded
// snapshots as Velero recorded, its own, if any, among them. A release that tagged snapshots
// with the backup's UID is waited for that long, Velero's item-operation timeout ending the
// wait (a snapshot still missing may be this operation's own). For one that did not, nothing
// counts as recorded: it waits until the create window has passed, when its own, if any, is
// listed and resolved beside src, and after that while EC2 lists fewer snapshots of the
// backup's name, of any UID, than Velero recorded (its own may be gone with the backup's
// deletion). Whatever the release, src unmarked as returned is not followed before every
// snapshot the operation's CreateSnapshot may have made is listed: a call retried after a lost
// answer made two of the PV, and a release that marked snapshots marked the one it returned.
func decideUnnamedPV(op model.Operation, src *types.Snapshot, st velerov1.BackupStatus, l lookup, cfg decideCfg, now time.Time) string {
	pv := model.TagValue(src.Tags, model.TagPV)
	withUID := model.TagValue(src.Tags, model.TagBackupUID) != ""
	listed, recorded := l.recorded, int(st.VolumeSnapshotsCompleted)
	if !withUID {
		listed += l.unnamed
	}
	if op.PV != "" || pv == "" {
		return ""
	}
	if siblingsListedAt := ownListedBy(op, cfg); withUID && model.TagValue(src.Tags, model.TagRecorded) == "" && now.Before(siblingsListedAt) {
		return fmt.Sprintf("this operation, opened by an earlier release of the plugin, names no persistent volume, and snapshot %s of volume %s (PV %s) is not marked as the one returned to Velero: "+
			"waiting until %s for EC2 to list every snapshot its CreateSnapshot may have made (one retried after a lost answer makes two, and marks the one it returns)",
			aws.ToString(src.SnapshotId), op.VolumeID, pv, siblingsListedAt.UTC().Format(time.RFC3339))
	}
	pastWindow := now.Sub(op.Issued) >= cfg.createWindow
	if l.recorded >= recorded || !withUID && pastWindow && listed >= recorded {
		return ""
	}
	until := "Velero's item-operation timeout"
	if !withUID && listed >= recorded {
		until = op.Issued.Add(cfg.createWindow).UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("this operation, opened by an earlier release of the plugin, names no persistent volume, and snapshot %s of volume %s is of PV %s: "+
		"waiting until EC2 lists all %d snapshots Velero recorded for this backup (it lists %d %s), or until %s, so as not to follow another PV's snapshot of the same volume",
		aws.ToString(src.SnapshotId), op.VolumeID, pv, recorded, listed, l.where, until)
}

// ownListedBy is when EC2 lists every snapshot op's CreateSnapshot may have made: core asks for
// it right after opening the operation, it starts within the create window, and EC2 lists it
// within its listing lag after that.
func ownListedBy(op model.Operation, cfg decideCfg) time.Time {
	return op.Issued.Add(cfg.createWindow + cfg.listingLag)
}

// decideForeignSource judges an operation following src, a snapshot of the backup's name that
// this plugin's CreateSnapshot did not make (model.MadeByThisPlugin): it was taken through
// another provider's VolumeSnapshotLocation (the upstream plugin's; Velero takes a PV's snapshot
// through the first of the backup's locations whose plugin accepts the volume), so it has no
// copy intent. decided is false when src is this plugin's, or when the backup names no
// location of this plugin (such a backup is left alone).
//
// Otherwise, until this plugin's own snapshot of the volume, if it took one, is listed
// (ownListedBy), the operation waits, saying why and reporting no progress: another cluster's
// backup of the same name may have snapshotted the same volume through the upstream plugin,
// and that snapshot may be all EC2 lists until then. After that, src is the backup's own:
// followed as ever (decided is false) when the location asks for no copy, else the operation
// fails, naming the locations that may have taken it, why no copy exists and the fix (the
// upstream location moved to this plugin's provider, or deleted: naming this plugin's location
// on the backup does not keep Velero from adding a provider's only location). While the
// Kubernetes API refuses to show the backup's locations (pl.Unread), whether a location of
// this plugin asks for copies cannot be told: the operation waits the same way for the
// not-found grace after it was opened (access may return), then fails naming the cause and
// the fix.
func decideForeignSource(op model.Operation, src *types.Snapshot, pl ebs.Place, backupLocations []string, cfg decideCfg, p velero.OperationProgress) (_ velero.OperationProgress, decided bool) {
	if model.MadeByThisPlugin(src) {
		return p, false
	}
	id := aws.ToString(src.SnapshotId)
	if pl.Unread {
		why := fmt.Sprintf("snapshot %s of volume %s was not taken by this plugin (it carries none of the tags %s writes when it takes a snapshot), and the Kubernetes API refuses to show the backup's VolumeSnapshotLocations, "+
			"so whether the backup's location of this plugin asks for a copy, which this snapshot would not have, cannot be told", id, op.VolumeID, model.VolumeSnapshotterName)
		until := op.Issued.Add(cfg.notFoundGrace)
		if !p.Updated.Before(until) {
			p.Completed = true
			p.Err = fmt.Sprintf("%s (%s): let Velero's service account get and list volumesnapshotlocations and secrets in its namespace", why, pl.Note)
			return p, true
		}
		return showForeign(op, src, p, until, "the Kubernetes API: "+why), true
	}
	if !slices.Contains(backupLocations, pl.Location) {
		return p, false
	}
	if until := ownListedBy(op, cfg); p.Updated.Before(until) {
		return showForeign(op, src, p, until, fmt.Sprintf("EC2 to list this plugin's snapshot of volume %s, if location %s took one: snapshot %s carries none of the tags %s writes when it takes a snapshot "+
			"(another cluster's backup of the same name may have snapshotted the volume through another provider's location)", op.VolumeID, pl.Location, id, model.VolumeSnapshotterName)), true
	}
	wanted := configTargets(pl.Config)
	if len(wanted) == 0 {
		return p, false
	}
	others := slices.DeleteFunc(slices.Clone(backupLocations), func(n string) bool { return n == pl.Location })
	took := "another VolumeSnapshotLocation"
	if len(others) > 0 {
		took = "VolumeSnapshotLocation " + strings.Join(others, " or ")
	}
	asks := make([]string, len(wanted))
	for i, tg := range wanted {
		asks[i] = tg.CopyName() + " to " + tg.String()
	}
	p.Completed = true
	p.Err = fmt.Sprintf("snapshot %s of volume %s was taken through %s, not through this plugin's location %s (it carries none of the tags %s writes when it takes a snapshot), so it has no %s that %s asks for: "+
		"Velero adds a location of every provider to every backup (the provider's only one, or its default), whatever the backup names, and snapshots a volume through the first whose plugin accepts it; "+
		"move that location (the upstream AWS plugin's: provider aws or velero.io/aws) to provider %s, or delete it (`check` names it; README, An existing Velero install)",
		id, aws.ToString(src.VolumeId), took, pl.Location, model.VolumeSnapshotterName, strings.Join(asks, " and "), pl.Location, model.VolumeSnapshotterName)
	return p, true
}

// showForeign describes src, a snapshot this plugin did not take, while its operation waits
// until until for what waitsFor names. Whose it is being in doubt, its progress is not the
// operation's (it reports none), and its state fails nothing.
func showForeign(op model.Operation, src *types.Snapshot, p velero.OperationProgress, until time.Time, waitsFor string) velero.OperationProgress {
	state := progressText(src.Progress)
	if src.State == types.SnapshotStateError {
		state = "failed: " + aws.ToString(src.StateMessage)
	}
	p.Description = fmt.Sprintf("snapshot %s in %s: %s; waiting until %s for %s", aws.ToString(src.SnapshotId), op.Region, state, until.UTC().Format(time.RFC3339), waitsFor)
	return p
}

// decideAmbiguous reports an operation with several snapshots that could each be the one Velero
// recorded. The mark that tells them apart is written before CreateSnapshot returns, so it is
// waited for while a create may still be under way; after that the operation fails, naming them.
func decideAmbiguous(op model.Operation, res model.Resolution, cfg decideCfg, p velero.OperationProgress) velero.OperationProgress {
	ids := make([]string, len(res.Ambiguous))
	for i, s := range res.Ambiguous {
		ids[i] = aws.ToString(s.SnapshotId)
	}
	if p.Updated.Sub(op.Issued) < cfg.createWindow {
		p.Description = fmt.Sprintf("volume %s has %d snapshots for this backup (%s); waiting to learn which one Velero recorded", op.VolumeID, len(ids), strings.Join(ids, ", "))
		return p
	}
	p.Completed = true
	p.Err = fmt.Sprintf("volume %s in %s has %d snapshots that could each be the one Velero recorded for this backup (%s), and none is marked as recorded: not completing on evidence that may belong to another backup", op.VolumeID, op.Region, len(ids), strings.Join(ids, ", "))
	return p
}

// decideNotFound reports an operation whose snapshot EC2 does not list. Velero took no native
// snapshot of the volume (a volume policy chose another method, or CreateSnapshot failed) when
// it attempted none, or when EC2 lists as many distinct recorded sources of this backup as
// Velero recorded (a snapshot of this volume Velero recorded, listed or not yet, would be one
// more: no wait for EC2's listing adds to that count), or, when Velero counts a failed snapshot,
// the create window. When Velero recorded snapshots the plugin cannot see, the operation
// waits for EC2's listing for the grace period, then fails with the likely causes: never a
// success without evidence.
func decideNotFound(op model.Operation, st velerov1.BackupStatus, backupName string, l lookup, cfg decideCfg, p velero.OperationProgress) velero.OperationProgress {
	// Core records its snapshots in the backup's status before it first asks for progress.
	recorded := st.VolumeSnapshotsCompleted
	elapsed := p.Updated.Sub(op.Issued)
	unnamed := ""
	if l.unnamed > 0 {
		unnamed = fmt.Sprintf(", besides %d of a backup of the same name without its UID (the upstream plugin's, or another install's)", l.unnamed)
	}
	switch {
	case st.VolumeSnapshotsAttempted == 0 && recorded == 0 && len(l.badConfig) > 0:
		// Velero could not start the volume snapshotter: the location's error is the cause.
		p.Completed = true
		p.Err = fmt.Sprintf("no native snapshot of volume %s was taken: Velero could not use the backup's VolumeSnapshotLocation, whose config the plugin refuses (%s)",
			op.VolumeID, strings.Join(l.badConfig, "; "))
	case st.VolumeSnapshotsAttempted == 0 && recorded == 0:
		p.Completed = true
		p.Description = fmt.Sprintf("no native snapshot of volume %s was taken for this backup: Velero attempted none", op.VolumeID)
	case l.recorded >= recorded && (st.VolumeSnapshotsAttempted <= recorded || elapsed >= cfg.createWindow):
		// When a CreateSnapshot failed, it may be this volume's, and its snapshot may have been
		// made as late as the create window allows: EC2 not listing it proves nothing before.
		p.Completed = true
		p.Description = fmt.Sprintf("no native snapshot of volume %s was taken for this backup: EC2 lists all %d Velero recorded, none of this volume", op.VolumeID, recorded)
	case elapsed <= cfg.notFoundGrace:
		p.Description = fmt.Sprintf("waiting for EC2 to list the snapshot of volume %s in %s (Velero recorded %d native snapshots for this backup; EC2 lists %d %s%s)", op.VolumeID, op.Region, recorded, l.recorded, l.where, unnamed)
	default:
		p.Completed = true
		p.Err = fmt.Sprintf("Velero recorded %d native snapshots for backup %s, but EC2 lists %d in %s %s%s, none of volume %s: the snapshot was taken with other credentials or in another account than this action uses "+
			"(check the location's spec.credential, profile and credentialsFile, and that the plugin may read VolumeSnapshotLocations and their Secrets), or it was deleted",
			recorded, backupName, l.recorded, op.Region, l.where, unnamed, op.VolumeID)
	}
	return p
}

// neverReturned reports whether src, the snapshot op resolved to, was never returned to Velero:
// it is marked so, or op is an earlier release's (naming no PV; that release marked no
// snapshot pending) and src carries the backup's UID while Velero recorded every native
// snapshot of the backup as failed, so a CreateSnapshot that returned an error made it.
func neverReturned(op model.Operation, src *types.Snapshot, st velerov1.BackupStatus) bool {
	earlierRelease := op.PV == "" && model.TagValue(src.Tags, model.TagBackupUID) != ""
	return model.Unreturned(src) || earlierRelease && st.VolumeSnapshotsAttempted > 0 && st.VolumeSnapshotsCompleted == 0
}

// decideUnreturned reports an operation whose source is still marked as not returned to
// Velero. Its CreateSnapshot call may still be under way until the create window has passed
// since the later of the operation's opening and the snapshot's start; the operation waits.
// After that the call returned an error (or was cut off) and Velero recorded no snapshot for
// the PV: when Velero's record counts failed snapshots, this one is deleted (Velero's deletion
// skips it, so nobody else would) and the operation fails naming it; when it counts none, the
// two records disagree and the snapshot is neither copied nor deleted. del says to delete it.
func decideUnreturned(op model.Operation, src *types.Snapshot, st velerov1.BackupStatus, cfg decideCfg, p velero.OperationProgress) (_ velero.OperationProgress, del bool) {
	id := aws.ToString(src.SnapshotId)
	since := op.Issued
	if start := aws.ToTime(src.StartTime); start.After(since) {
		since = start
	}
	switch {
	case p.Updated.Sub(since) < cfg.createWindow:
		p.Description = fmt.Sprintf("snapshot %s in %s: %s; waiting for CreateSnapshot to return it to Velero", id, op.Region, progressText(src.Progress))
		return p, false
	case st.VolumeSnapshotsAttempted > st.VolumeSnapshotsCompleted:
		p.Completed = true
		p.Err = fmt.Sprintf("CreateSnapshot of volume %s returned an error to Velero, which recorded no snapshot of it (%d of %d attempted native snapshots failed); snapshot %s it made all the same is deleted and not copied",
			op.VolumeID, st.VolumeSnapshotsAttempted-st.VolumeSnapshotsCompleted, st.VolumeSnapshotsAttempted, id)
		return p, true
	}
	p.Completed = true
	p.Err = fmt.Sprintf("snapshot %s of volume %s was never marked as returned to Velero (%s=%s), yet Velero records no failed native snapshot: it is neither copied nor deleted",
		id, op.VolumeID, model.TagRecorded, model.RecordedPending)
	return p, false
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

// decideSource reports the source's own phase, the first 100 units: settled when the source
// failed (the operation fails) or is still pending; else its copies are reported next.
func decideSource(op model.Operation, src *types.Snapshot, p velero.OperationProgress) (_ velero.OperationProgress, settled bool) {
	srcID := aws.ToString(src.SnapshotId)
	switch src.State {
	case types.SnapshotStateError:
		p.Completed = true
		p.Err = fmt.Sprintf("snapshot %s of volume %s in %s failed: %s", srcID, op.VolumeID, op.Region, aws.ToString(src.StateMessage))
		return p, true
	case types.SnapshotStatePending:
		p.NCompleted = percent(src.Progress)
		p.Description = fmt.Sprintf("snapshot %s in %s: %s", srcID, op.Region, progressText(src.Progress))
		return p, true
	}
	p.NCompleted = 100
	return p, false
}

// decideReport reports an operation whose source completed from the phases of its copies. A
// failed phase fails it, once no vault copy is still being made, locked or its source's share
// removed (until then it waits, saying why it will fail); it completes only when every phase is
// done.
func decideReport(op model.Operation, srcID string, phases []phase, p velero.OperationProgress) velero.OperationProgress {
	var waiting, done, failed, busy []string
	for _, ph := range phases {
		p.NCompleted += ph.units
		switch {
		case ph.err != "":
			failed = append(failed, ph.err)
		case ph.done:
			done = append(done, ph.desc)
		case ph.busy:
			busy = append(busy, ph.desc)
			waiting = append(waiting, ph.desc)
		default:
			waiting = append(waiting, ph.desc)
		}
	}
	switch {
	case len(failed) > 0 && len(busy) > 0:
		p.Description = fmt.Sprintf("%s; before failing: %s", strings.Join(failed, "; "), strings.Join(busy, "; "))
	case len(failed) > 0:
		p.Completed = true
		p.Err = strings.Join(failed, "; ")
	case len(waiting) > 0:
		p.Description = strings.Join(waiting, "; ")
	case len(done) > 0:
		p.Completed = true
		p.Description = fmt.Sprintf("snapshot %s in %s and its %s completed", srcID, op.Region, strings.Join(done, " and "))
	default:
		p.Completed = true
		p.Description = fmt.Sprintf("snapshot %s in %s completed", srcID, op.Region)
	}
	return p
}

// decideAbandon lists the vault phases to end without a copy because another phase fails the
// operation: those with no vault copy being made (not busy), not done and not failed. Their
// source's share is removed before the operation fails, so that nothing stays shared once it
// has ended.
func decideAbandon(targets []model.Target, phases []phase) []int {
	if !slices.ContainsFunc(phases, func(ph phase) bool { return ph.err != "" }) {
		return nil
	}
	var out []int
	for i, tg := range targets {
		if ph := phases[i]; tg.Vault() && !ph.done && !ph.busy && ph.err == "" {
			out = append(out, i)
		}
	}
	return out
}
