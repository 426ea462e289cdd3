package audit

import (
	"fmt"
	"sort"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// The orphan rule. A snapshot is an orphan only when no backup record in any of this install's
// storage locations can name it: Velero's record of each backup (its volume snapshots file),
// kept in the backup's storage location, read from there whatever the cluster has synced, and,
// for a backup whose record is not in the cluster's hands, the backup storage locations' own
// listings of the backups they hold. Anything unread or doubtful is not an orphan.

// verdict is what the orphan rule says of one snapshot.
type verdict int

const (
	// needed: a record names it, or may.
	needed verdict = iota
	// orphan: no record can name it; deleted by --delete-orphans.
	orphan
	// kept: an orphan its lock or vaultRetainOnDelete keeps.
	kept
	// unjudged: what the rule rests on could not be read or is in doubt.
	unjudged
	// unknownInstall: no record names it, and it carries no install (an earlier release).
	unknownInstall
	// otherInstall: no record names it, and another install took it.
	otherInstall
	// notPlugins: not a snapshot this plugin took or copied.
	notPlugins
)

// ruling is the orphan rule's answer for one snapshot: its verdict, why, and for a kept one
// what keeps it.
type ruling struct {
	verdict     verdict
	why, keptBy string
}

// judge applies the orphan rule to s at now, with the grace a snapshot has. It reads only the
// view.
func (v view) judge(s Snapshot, now time.Time, grace time.Duration) ruling {
	sourceID := s.ID
	if src := s.Tags[model.TagSourceSnapshotID]; src != "" {
		sourceID = src
	} else if !ownSource(s) {
		return ruling{verdict: notPlugins} // the upstream plugin's, or another tool's
	}
	name := s.Tags[model.TagBackup]
	if by, ok := v.named[sourceID]; ok {
		return ruling{verdict: needed, why: "Velero's record of backup " + by + " names it"}
	}
	if now.Sub(s.Started) < grace {
		return ruling{verdict: needed, why: "younger than --orphan-grace"}
	}
	b, inCluster := v.backups[name]
	if inCluster && !finished(b) && b.Status.Phase != velerov1.BackupPhaseDeleting {
		return ruling{verdict: needed, why: fmt.Sprintf("backup %s is %s", name, phaseOf(b))}
	}
	why, verdict := v.recordless(s, sourceID, name, b, inCluster)
	switch install := s.Tags[model.TagInstall]; {
	case verdict == needed:
	case install == "":
		verdict = unknownInstall
	case install != v.w.Install || v.w.Install == "":
		verdict = otherInstall
	case verdict == orphan:
		if keep := v.keptBy(s, sourceID); keep != "" {
			return ruling{verdict: kept, why: why, keptBy: keep}
		}
	}
	return ruling{verdict: verdict, why: why}
}

// recordless judges a snapshot no record read names: needed while a storage location holds its
// backup and the backup is not in the cluster or is being deleted; unjudged while the record
// that decides it is not read, or the listings do not prove its backup absent; else an orphan,
// and why.
func (v view) recordless(s Snapshot, sourceID, name string, b velerov1.Backup, inCluster bool) (string, verdict) {
	if holders := v.holders[name]; len(holders) > 0 {
		where := "storage location " + strings.Join(holders, ", ")
		switch rec, read := v.w.Records[name]; {
		case !inCluster:
			return fmt.Sprintf("backup %s is in %s but not in this cluster: Velero syncs a finished backup within a minute, one still waiting for its operations only once it expires", name, where), needed
		case b.Status.Phase == velerov1.BackupPhaseDeleting:
			return fmt.Sprintf("backup %s is being deleted and its files are still in %s: Velero deletes what its record names", name, where), needed
		case !read || rec.Err != "":
			return fmt.Sprintf("Velero's record of backup %s could not be read", name), unjudged
		case sourceID != s.ID:
			return fmt.Sprintf("its source %s is not among backup %s's snapshots", sourceID, name), orphan
		case s.Tags[model.TagRecorded] == "pending":
			return fmt.Sprintf("left recorded=pending: its CreateSnapshot never returned it to backup %s", name), orphan
		}
		return fmt.Sprintf("not among backup %s's snapshots", name), orphan
	}
	if doubt := v.absenceDoubt(s); doubt != "" {
		return doubt, unjudged
	}
	if sourceID != s.ID {
		if _, ok := v.sources[sourceID]; !ok {
			return fmt.Sprintf("backup %s is in no storage location, and its source is gone", name), orphan
		}
	}
	return fmt.Sprintf("backup %s is in no storage location of this cluster", name), orphan
}

// absenceDoubt says why the storage locations' listings do not prove s's backup absent: one
// could not be listed, s names no storage location or one not in the cluster, or the one it
// names lists no backup this install's snapshots name (what a wrong bucket or prefix would look
// like); "" when they prove it.
func (v view) absenceDoubt(s Snapshot) string {
	for _, l := range v.w.StorageLocations {
		if v.w.Stored[l.Name].Err != "" {
			return "backup storage location " + l.Name + " could not be listed"
		}
	}
	name, bsl := s.Tags[model.TagBackup], s.Tags[storageLocationTag]
	switch {
	case bsl == "":
		return fmt.Sprintf("backup %s's storage location is not tagged on the snapshot", name)
	case !v.bsls[bsl]:
		return fmt.Sprintf("backup %s's storage location %s is not in this cluster (add it, read-only, to judge its snapshots)", name, bsl)
	case !v.anchored[bsl]:
		return fmt.Sprintf("backup storage location %s lists no backup this install's snapshots name: a wrong bucket or prefix would look the same", bsl)
	}
	return ""
}

// keptBy says what keeps an orphan: a lock that still holds, or, for a vault copy,
// vaultRetainOnDelete as its tags or any location's config naming its vault account say now;
// "" when nothing does.
func (v view) keptBy(s Snapshot, sourceID string) string {
	if s.Lock.Held() {
		return fmt.Sprintf("its %s lock lasts until %s", s.Lock.Mode, s.Lock.Until.UTC().Format(time.RFC3339))
	}
	if s.Kind != KindVault {
		return ""
	}
	src, seen := v.sources[sourceID]
	configured := false
	for _, l := range v.w.Locations {
		configured = configured || l.Config.Vault.AccountID == s.Account && l.Config.Vault.RetainOnDelete
	}
	return model.RetainReason(s.Tags[model.TagVaultRetainOnDelete] == "true", seen && src.Tags[model.TagVaultRetainOnDelete] == "true", configured)
}

// phaseOf is b's phase for people.
func phaseOf(b velerov1.Backup) string {
	if b.Status.Phase == "" {
		return "New"
	}
	return string(b.Status.Phase)
}

// ownSource reports whether s is a source this plugin took: tagged at creation with what only
// the plugin writes there (a volume can carry the plugin's restore token, never these).
func ownSource(s Snapshot) bool {
	return s.Tags[model.TagVolumeType] != "" || s.Tags[model.TagRecorded] != "" || s.Tags[model.TagInstall] != ""
}

// orphans sorts the snapshots read by the orphan rule into the report: this install's orphans
// (with why and what they cost), those kept, those not judged and why, those of an unknown
// install, and a count of other installs'.
func (v view) orphans(o Options, rep *Report) {
	groups := map[string]*OrphanGroup{}
	for _, s := range v.w.Snapshots {
		r := v.judge(s, v.w.Now, o.OrphanGrace)
		entry := Orphan{ID: s.ID, Kind: s.Kind, Account: s.Account, Region: s.Region, Backup: s.Tags[model.TagBackup],
			Why: r.why, KeptBy: r.keptBy, Age: cli.Seconds(v.w.Now.Sub(s.Started)), Bytes: s.Bytes, Tier: s.Tier, MonthlyCost: cost(s, o.Prices)}
		switch r.verdict {
		case orphan:
			g := groups[entry.Backup]
			if g == nil {
				g = &OrphanGroup{Backup: entry.Backup}
				groups[entry.Backup] = g
			}
			g.Orphans = append(g.Orphans, entry)
			g.MonthlyCost += entry.MonthlyCost
		case kept:
			rep.Kept = append(rep.Kept, entry)
		case unjudged:
			rep.Unjudged = append(rep.Unjudged, entry)
		case unknownInstall:
			rep.Unknown = append(rep.Unknown, entry)
		case otherInstall:
			rep.OtherInstalls++
		}
	}
	for _, g := range groups {
		rep.Orphans = append(rep.Orphans, *g)
	}
	sort.Slice(rep.Orphans, func(i, j int) bool { return rep.Orphans[i].Backup < rep.Orphans[j].Backup })
}

// cost is s's estimated storage cost in USD per month.
func cost(s Snapshot, prices map[string]float64) float64 {
	tier := s.Tier
	if tier == "" {
		tier = TierStandard
	}
	return float64(s.Bytes) / float64(1<<30) * prices[tier]
}
