package audit

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Defaults of the audit's judgement.
const (
	// DefaultOrphanGrace is how old a snapshot must be before it can be called an orphan: a
	// backup being taken, synced or deleted right now is not judged from a moment's view.
	DefaultOrphanGrace = time.Hour
	// DefaultRecoverySlack is how much older than its schedule's interval a recovery point may
	// be before it is stale: the time a backup and its copies take to become DR-ready.
	DefaultRecoverySlack = 2 * time.Hour
	// DefaultStandardPrice and DefaultArchivePrice are EBS snapshot storage prices in USD per
	// GiB-month (us-east-1, standard and archive tiers).
	DefaultStandardPrice = 0.05
	DefaultArchivePrice  = 0.0125
)

// Tiers of EBS snapshot storage, as EC2 names them.
const (
	TierStandard = "standard"
	TierArchive  = "archive"
)

// Labels and annotations on Backups.
const (
	// scheduleLabel is the label Velero puts on a Schedule's backups.
	scheduleLabel = velerov1.ScheduleNameLabel
	// storageLocationTag is the label Velero puts on a backup, naming its storage location;
	// Velero passes a backup's labels to CreateSnapshot, so the plugin's snapshots carry it.
	storageLocationTag = velerov1.StorageLocationLabel
	// DrillAnnotation, on a Backup, is the last drill's result (drill --record).
	DrillAnnotation = "velero-async.io/last-drill"
)

// Options are the audit's judgement.
type Options struct {
	// Prices are the storage prices in USD per GiB-month, by tier.
	Prices map[string]float64
	// OrphanGrace and RecoverySlack: see DefaultOrphanGrace and DefaultRecoverySlack.
	OrphanGrace, RecoverySlack time.Duration
}

// DefaultOptions are the documented defaults.
func DefaultOptions() Options {
	return Options{
		Prices:      map[string]float64{TierStandard: DefaultStandardPrice, TierArchive: DefaultArchivePrice},
		OrphanGrace: DefaultOrphanGrace, RecoverySlack: DefaultRecoverySlack,
	}
}

// Decide judges what w shows: each backup's copies and readiness, each schedule's recovery
// points, and which snapshots are this install's orphans. It is pure.
func Decide(w World, o Options) Report {
	rep := Report{Now: w.Now, Install: w.Install, Problems: slices.Clone(w.Unread)}
	if w.InstallErr != "" {
		rep.Problems = append(rep.Problems, "this install's identity: "+w.InstallErr+"; no snapshot is called an orphan")
	}
	ix := index(w)
	for _, b := range w.Backups {
		line, ok := ix.backupLine(b, w.Now)
		if ok {
			rep.Backups = append(rep.Backups, line)
		}
		if rec, read := w.Records[b.Name]; read && rec.Err != "" && ix.mayHaveOurs(b) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("backup %s: Velero's record of its snapshots: %s", b.Name, rec.Err))
		}
	}
	sort.SliceStable(rep.Backups, func(i, j int) bool { return rep.Backups[i].Started.After(rep.Backups[j].Started) })
	rep.RecoveryPoints = recoveryPoints(rep.Backups, w.Now, o.RecoverySlack)
	ix.orphans(w, o, &rep)
	for _, v := range w.DrillVolumes {
		if v.Leftover(w.Install, w.Now) {
			rep.DrillLeftovers = append(rep.DrillLeftovers, v)
		}
	}
	return rep
}

// view indexes a World for the decisions.
type view struct {
	locations map[string]Location
	sources   map[string]Snapshot   // by ID
	copies    map[string][]Snapshot // by source ID
	needed    map[string]bool       // the snapshot IDs Velero recorded for any backup
	backups   map[string]velerov1.Backup
	records   map[string]Record
	bsls      map[string]velerov1.BackupStorageLocation
	read      map[Place]bool
}

func index(w World) view {
	v := view{locations: map[string]Location{}, sources: map[string]Snapshot{}, copies: map[string][]Snapshot{},
		needed: map[string]bool{}, backups: map[string]velerov1.Backup{}, records: w.Records, bsls: map[string]velerov1.BackupStorageLocation{},
		read: map[Place]bool{}}
	for _, p := range w.Read {
		v.read[p] = true
	}
	for _, l := range w.Locations {
		v.locations[l.Name] = l
	}
	for _, s := range w.Snapshots {
		if src := s.Tags[model.TagSourceSnapshotID]; src != "" {
			v.copies[src] = append(v.copies[src], s)
		} else if s.Kind == KindSource {
			v.sources[s.ID] = s
		}
	}
	for _, b := range w.Backups {
		v.backups[b.Name] = b
	}
	for _, r := range w.Records {
		for _, s := range r.Snapshots {
			v.needed[s.ID] = true
		}
	}
	for _, l := range w.StorageLocations {
		v.bsls[l.Name] = l
	}
	return v
}

// mayHaveOurs reports whether b may have snapshots in the audited locations.
func (v view) mayHaveOurs(b velerov1.Backup) bool {
	if len(b.Spec.VolumeSnapshotLocations) == 0 {
		return true
	}
	for _, n := range b.Spec.VolumeSnapshotLocations {
		if _, ok := v.locations[n]; ok {
			return true
		}
	}
	return false
}

// finished reports whether Velero is done with b: its record is final and nothing more will
// be taken for it.
func finished(b velerov1.Backup) bool {
	switch b.Status.Phase {
	case velerov1.BackupPhaseCompleted, velerov1.BackupPhasePartiallyFailed, velerov1.BackupPhaseFailed:
		return true
	}
	return false
}

// wants is a recovery place a source asked for.
type wants struct {
	kind            Kind
	account, region string
	lock            bool
}

// wanted lists the copies src asked for at creation (its tags), or, when the source is gone,
// what its location asks for now.
func wanted(src *Snapshot, loc Location) []wants {
	var out []wants
	if src != nil {
		if r := src.Tags[model.TagCopyToRegion]; r != "" {
			out = append(out, wants{kind: KindCopy, region: r})
		}
		if a := src.Tags[model.TagVaultAccount]; a != "" {
			out = append(out, wants{kind: KindVault, account: a, region: src.Tags[model.TagVaultRegion], lock: src.Tags[model.TagVaultLock] != ""})
		}
		return out
	}
	if r := loc.Config.CopyToRegion; r != "" {
		out = append(out, wants{kind: KindCopy, region: r})
	}
	if v := loc.Config.Vault; v.Enabled() {
		out = append(out, wants{kind: KindVault, account: v.AccountID, region: v.Region, lock: v.Lock.Mode != ""})
	}
	return out
}

// backupLine judges one backup; ok is false for a backup with no snapshot in the audited
// locations.
func (v view) backupLine(b velerov1.Backup, now time.Time) (BackupLine, bool) {
	rec, read := v.records[b.Name]
	var ours []RecordedSnapshot
	for _, s := range rec.Snapshots {
		if _, ok := v.locations[s.Location]; ok {
			ours = append(ours, s)
		}
	}
	if !read || len(ours) == 0 {
		return BackupLine{}, false
	}
	line := BackupLine{Name: b.Name, Schedule: b.Labels[scheduleLabel], Phase: string(b.Status.Phase), LastDrill: b.Annotations[DrillAnnotation]}
	if b.Status.StartTimestamp != nil {
		line.Started = b.Status.StartTimestamp.Time
	}
	places := map[string]*PlaceCount{}
	var order []string
	count := func(kind Kind, account, region string) *PlaceCount {
		name := placeName(kind, account, region)
		if p, ok := places[name]; ok {
			return p
		}
		places[name] = &PlaceCount{Kind: kind, Place: name, Account: account, Region: region}
		order = append(order, name)
		return places[name]
	}
	var readySince time.Time
	for _, r := range ours {
		loc := v.locations[r.Location]
		src, found := v.sources[r.ID]
		var srcp *Snapshot
		if found {
			srcp = &src
			p := count(KindSource, "", src.Region)
			tally(p, src.State)
			line.Bytes += src.Bytes
		} else if p := count(KindSource, "", loc.Config.Region); v.read[Place{Kind: KindSource, Region: loc.Config.Region}] {
			p.Missing++
		} else {
			p.Unaudited = true
		}
		for _, want := range wanted(srcp, loc) {
			line.AsksCopies = true
			p := count(want.kind, want.account, want.region)
			if !v.read[Place{Kind: ownOrVault(want.kind), Region: want.region}] {
				p.Unaudited = true
				continue
			}
			cp, ok := v.copyIn(r.ID, want)
			if !ok {
				p.Missing++
				continue
			}
			tally(p, cp.State)
			if cp.State == stateCompleted && cp.Completed.After(readySince) {
				readySince = cp.Completed
			}
			if want.lock {
				p.LocksAsked++
			}
			if cp.Lock.Held() {
				p.Locked++
				p.LockMode = cp.Lock.Mode
				if p.LockedUntil.IsZero() || cp.Lock.Until.Before(p.LockedUntil) {
					p.LockedUntil = cp.Lock.Until
				}
			}
		}
	}
	line.DRReady = line.AsksCopies
	for _, name := range order {
		p := *places[name]
		line.Places = append(line.Places, p)
		if p.Kind != KindSource && !p.Unaudited && !p.Ready() {
			line.DRReady = false
		}
	}
	if line.DRReady {
		line.ReadySince = readySince
		if readySince.IsZero() && b.Status.CompletionTimestamp != nil {
			line.ReadySince = b.Status.CompletionTimestamp.Time
		}
	}
	if finished(b) {
		line.Findings = placeFindings(line.Places)
	}
	return line, true
}

// EC2 snapshot states.
const (
	stateCompleted = "completed"
	statePending   = "pending"
)

func tally(p *PlaceCount, state string) {
	switch state {
	case stateCompleted:
		p.Completed++
	case statePending:
		p.Pending++
	default:
		p.Error++
	}
}

// copyIn returns the copy of sourceID in the place want names: a completed one first.
func (v view) copyIn(sourceID string, want wants) (Snapshot, bool) {
	var best Snapshot
	found := false
	for _, c := range v.copies[sourceID] {
		if c.Kind != want.kind || c.Region != want.region || want.account != "" && c.Account != want.account {
			continue
		}
		if !found || rank(c.State) < rank(best.State) {
			best, found = c, true
		}
	}
	return best, found
}

func rank(state string) int {
	switch state {
	case stateCompleted:
		return 0
	case statePending:
		return 1
	}
	return 2
}

// placeFindings says what keeps a finished backup from being restorable everywhere it asked.
func placeFindings(places []PlaceCount) []string {
	var out []string
	for _, p := range places {
		var bad []string
		if p.Pending > 0 {
			bad = append(bad, fmt.Sprintf("%d pending", p.Pending))
		}
		if p.Missing > 0 {
			bad = append(bad, fmt.Sprintf("%d missing", p.Missing))
		}
		if p.Error > 0 {
			bad = append(bad, fmt.Sprintf("%d in error", p.Error))
		}
		if len(bad) > 0 {
			what := "not DR-ready: "
			fix := "run `velero backup describe --details` for the operations' errors; a missing or failed copy needs a new backup"
			if p.Kind == KindSource {
				what, fix = "not restorable in its own region: ", "a deleted or failed source cannot come back; take a new backup"
			}
			out = append(out, fmt.Sprintf("%s%s of %s (%s)", what, strings.Join(bad, ", "), p.Place, fix))
		}
		if p.Locked < p.LocksAsked {
			out = append(out, fmt.Sprintf("%d of %d copies in %s are not locked though their location asks for a lock (check the vault account's LockSnapshot permission)", p.LocksAsked-p.Locked, p.LocksAsked, p.Place))
		}
	}
	return out
}

// recoveryPoints finds, per schedule and recovery place, the newest backup whose copies there
// are all completed, and sets its age against the schedule's interval.
func recoveryPoints(backups []BackupLine, now time.Time, slack time.Duration) []RecoveryPoint {
	type key struct{ schedule, place string }
	newest := map[key]*BackupLine{}
	var keys []key
	starts := map[string][]time.Time{}
	for i := range backups { // newest first
		b := &backups[i]
		if b.Schedule == "" {
			continue
		}
		starts[b.Schedule] = append(starts[b.Schedule], b.Started)
		for _, p := range b.Places {
			if p.Kind == KindSource || p.Unaudited {
				continue
			}
			k := key{b.Schedule, p.Place}
			if _, seen := newest[k]; !seen {
				keys = append(keys, k)
				newest[k] = nil
			}
			if newest[k] == nil && p.Ready() {
				newest[k] = b
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].schedule < keys[j].schedule || keys[i].schedule == keys[j].schedule && keys[i].place < keys[j].place
	})
	var out []RecoveryPoint
	for _, k := range keys {
		p := RecoveryPoint{Schedule: k.schedule, Place: k.place}
		var interval time.Duration
		if s := starts[k.schedule]; len(s) >= 2 {
			interval = s[0].Sub(s[1])
		}
		p.Interval = cli.Seconds(interval)
		b := newest[k]
		switch {
		case b == nil:
			p.Finding = "no backup of this schedule has all its copies completed here"
		default:
			pointAge := now.Sub(b.Started)
			p.Backup, p.Age = b.Name, cli.Seconds(pointAge)
			if interval > 0 && pointAge > interval+slack {
				p.Stale = true
				p.Finding = fmt.Sprintf("older than the schedule's interval (%s) by more than %s: the newer backups' copies are not all completed", age(interval), age(slack))
			}
		}
		out = append(out, p)
	}
	return out
}

// orphans sorts the snapshots no backup of this cluster needs: this install's orphans (with
// why, what they cost, and why a deletion would refuse them), those kept by their location's
// config, those of an unknown install, and a count of other installs'.
func (v view) orphans(w World, o Options, rep *Report) {
	var unavailable []string
	for _, l := range w.StorageLocations {
		if l.Status.Phase != velerov1.BackupStorageLocationPhaseAvailable {
			unavailable = append(unavailable, l.Name)
		}
	}
	if len(unavailable) > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("backup storage locations %s are not Available: backups kept there may be missing from the cluster, so no snapshot whose backup is missing is called an orphan",
			strings.Join(unavailable, ", ")))
	}
	groups := map[string]*OrphanGroup{}
	for _, s := range w.Snapshots {
		why, ok := v.orphanWhy(s, w.Now, o.OrphanGrace, len(unavailable) > 0)
		if !ok {
			continue
		}
		orphan := Orphan{ID: s.ID, Kind: s.Kind, Account: s.Account, Region: s.Region, Backup: s.Tags[model.TagBackup],
			Why: why, Age: cli.Seconds(w.Now.Sub(s.Started)), Bytes: s.Bytes, Tier: s.Tier, MonthlyCost: cost(s, o.Prices)}
		install := s.Tags[model.TagInstall]
		switch {
		case install == "":
			rep.Unknown = append(rep.Unknown, orphan)
			continue
		case install != w.Install || w.Install == "":
			rep.OtherInstalls++
			continue
		case s.Kind == KindVault && s.Tags[model.TagVaultRetainOnDelete] == "true":
			orphan.Refusal = "kept by vaultRetainOnDelete"
			rep.Kept = append(rep.Kept, orphan)
			continue
		case s.Lock.Held() && s.Tags[model.TagBackupDeletedAt] != "":
			orphan.Refusal = fmt.Sprintf("kept by its %s lock until %s", s.Lock.Mode, s.Lock.Until.UTC().Format(time.RFC3339))
			rep.Kept = append(rep.Kept, orphan)
			continue
		case s.Lock.Held():
			orphan.Refusal = fmt.Sprintf("locked (%s) until %s", s.Lock.Mode, s.Lock.Until.UTC().Format(time.RFC3339))
		}
		g := groups[orphan.Backup]
		if g == nil {
			g = &OrphanGroup{Backup: orphan.Backup}
			groups[orphan.Backup] = g
		}
		g.Orphans = append(g.Orphans, orphan)
		g.MonthlyCost += orphan.MonthlyCost
	}
	for _, g := range groups {
		rep.Orphans = append(rep.Orphans, *g)
	}
	sort.Slice(rep.Orphans, func(i, j int) bool { return rep.Orphans[i].Backup < rep.Orphans[j].Backup })
}

// orphanWhy says why no backup of this cluster needs s, or ok=false when one may. A snapshot
// is needed when Velero recorded it (or, for a copy, its source) for any backup; it is not
// judged while it is younger than grace, while its backup exists but is not finished or its
// record could not be read, or, when its backup is gone, while a storage location is not
// Available or the one it names is not in the cluster.
func (v view) orphanWhy(s Snapshot, now time.Time, grace time.Duration, bslDown bool) (string, bool) {
	sourceID := s.ID
	if src := s.Tags[model.TagSourceSnapshotID]; src != "" {
		sourceID = src
	} else if !ownSource(s) {
		return "", false // not this plugin's: the upstream plugin's, or another tool's
	}
	if v.needed[sourceID] || now.Sub(s.Started) < grace {
		return "", false
	}
	name := s.Tags[model.TagBackup]
	if b, exists := v.backups[name]; exists {
		rec, read := v.records[name]
		if !finished(b) || !read || rec.Err != "" {
			return "", false
		}
		if sourceID != s.ID {
			return fmt.Sprintf("its source %s is not among backup %s's snapshots", sourceID, name), true
		}
		if s.Tags[model.TagRecorded] == "pending" {
			return fmt.Sprintf("left recorded=pending: its CreateSnapshot never returned it to backup %s", name), true
		}
		return fmt.Sprintf("not among backup %s's snapshots", name), true
	}
	if bslDown {
		return "", false
	}
	if bsl := s.Tags[storageLocationTag]; bsl != "" {
		if _, ok := v.bsls[bsl]; !ok {
			return "", false
		}
	}
	if sourceID != s.ID {
		if _, ok := v.sources[sourceID]; !ok {
			return fmt.Sprintf("its source and backup %s are gone", name), true
		}
	}
	return fmt.Sprintf("backup %s no longer exists", name), true
}

// ownSource reports whether s is a source this plugin took: tagged at creation with what only
// the plugin writes there (a volume can carry the plugin's restore token, never these).
func ownSource(s Snapshot) bool {
	return s.Tags[model.TagVolumeType] != "" || s.Tags[model.TagRecorded] != "" || s.Tags[model.TagInstall] != ""
}

// cost is s's estimated storage cost in USD per month.
func cost(s Snapshot, prices map[string]float64) float64 {
	tier := s.Tier
	if tier == "" {
		tier = TierStandard
	}
	return float64(s.Bytes) / float64(1<<30) * prices[tier]
}
