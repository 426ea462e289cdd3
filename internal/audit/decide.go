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
	rep := Report{Now: w.Now, Install: w.Install}
	v := index(w)
	rep.Problems = v.problems()
	for _, b := range w.Backups {
		if line, ok := v.backupLine(b); ok {
			rep.Backups = append(rep.Backups, line)
		}
	}
	sort.SliceStable(rep.Backups, func(i, j int) bool { return rep.Backups[i].Started.After(rep.Backups[j].Started) })
	rep.RecoveryPoints = recoveryPoints(rep.Backups, w.Now, o.RecoverySlack)
	v.orphans(o, &rep)
	for _, d := range w.DrillVolumes {
		if d.Leftover(w.Install, w.Now) {
			rep.DrillLeftovers = append(rep.DrillLeftovers, d)
		}
	}
	return rep
}

// view indexes a World for the decisions.
type view struct {
	w World
	// locations are every location of the plugin; audited those the audit shows.
	locations map[string]Location
	audited   map[string]bool
	sources   map[string]Snapshot   // by ID
	copies    map[string][]Snapshot // by source ID
	// named are the snapshot IDs a record Velero keeps names, with the backup it is of.
	named   map[string]string
	backups map[string]velerov1.Backup
	bsls    map[string]bool
	// holders are the storage locations whose object storage holds each backup, by its name;
	// anchored those that hold a backup this install's snapshots name and are tagged with.
	holders  map[string][]string
	anchored map[string]bool
	places   map[string]PlaceRead // by place key
}

func index(w World) view {
	v := view{w: w, locations: map[string]Location{}, audited: map[string]bool{}, sources: map[string]Snapshot{},
		copies: map[string][]Snapshot{}, named: map[string]string{}, backups: map[string]velerov1.Backup{},
		bsls: map[string]bool{}, holders: map[string][]string{}, anchored: map[string]bool{}, places: map[string]PlaceRead{}}
	for _, l := range w.Locations {
		v.locations[l.Name] = l
		v.audited[l.Name] = w.Only == "" || l.Name == w.Only
	}
	for _, p := range w.Places {
		v.places[place{kind: p.Kind, creds: p.Creds, region: p.Region}.key()] = p
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
	for name, r := range w.Records {
		for _, s := range r.Snapshots {
			v.named[s.ID] = name
		}
	}
	for _, l := range w.StorageLocations {
		v.bsls[l.Name] = true
	}
	for bsl, st := range w.Stored {
		for _, name := range st.Backups {
			v.holders[name] = append(v.holders[name], bsl)
		}
	}
	for name := range v.holders {
		sort.Strings(v.holders[name])
	}
	for _, s := range w.Snapshots {
		if bsl := s.Tags[storageLocationTag]; w.Install != "" && s.Tags[model.TagInstall] == w.Install && slices.Contains(v.holders[s.Tags[model.TagBackup]], bsl) {
			v.anchored[bsl] = true
		}
	}
	return v
}

// problems are what the audit could not read: each is a reason no orphan it may bear on is
// deleted.
func (v view) problems() []string {
	var out []string
	if v.w.InstallErr != "" {
		out = append(out, "this install's identity: "+v.w.InstallErr+"; no snapshot is called an orphan")
	}
	for _, l := range v.w.Locations {
		if l.Err != "" {
			out = append(out, fmt.Sprintf("location %s: %s", l.Name, l.Err))
		}
	}
	for _, p := range v.w.Places {
		if p.Err != "" {
			out = append(out, fmt.Sprintf("%s with %s (location %s): %s", placeName(p.Kind, p.Account, p.Region), p.Creds, p.Location, p.Err))
		}
	}
	for _, l := range v.w.Locations {
		if b := v.w.VaultBuckets[l.Name]; b.Err != "" {
			out = append(out, fmt.Sprintf("vault bucket %s of location %s: %s", b.Bucket.Name, l.Name, b.Err))
		}
	}
	for _, l := range v.w.StorageLocations {
		if st := v.w.Stored[l.Name]; st.Err != "" {
			out = append(out, fmt.Sprintf("backup storage location %s could not be listed: %s", l.Name, st.Err))
		}
	}
	for _, b := range v.w.Backups {
		if rec, read := v.w.Records[b.Name]; read && rec.Err != "" && v.mayHaveOurs(b) {
			out = append(out, fmt.Sprintf("backup %s: Velero's record of its snapshots: %s", b.Name, rec.Err))
		}
	}
	return out
}

// mayHaveOurs reports whether b may have snapshots in the audited locations.
func (v view) mayHaveOurs(b velerov1.Backup) bool {
	if len(b.Spec.VolumeSnapshotLocations) == 0 {
		return true
	}
	return slices.ContainsFunc(b.Spec.VolumeSnapshotLocations, func(n string) bool { return v.audited[n] })
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

// unread says why the place want names, for a snapshot taken through loc, was not read; "" when
// it was. A copy region is read with the location's credentials; a vault with the vault
// credentials of any location naming that vault account.
func (v view) unread(want wants, loc Location) string {
	if want.kind != KindVault {
		return v.placeUnread(place{kind: KindSource, creds: loc.Creds, region: want.region})
	}
	why := fmt.Sprintf("no location of this cluster has credentials for vault account %s", want.account)
	for _, l := range v.w.Locations {
		if l.Err != "" || l.Config.Vault.AccountID != want.account || l.VaultCreds == nil {
			continue
		}
		if why = v.placeUnread(place{kind: KindVault, creds: *l.VaultCreds, region: want.region}); why == "" {
			return ""
		}
	}
	return why
}

// placeUnread says why p was not read; "" when it was.
func (v view) placeUnread(p place) string {
	pr, tried := v.places[p.key()]
	switch {
	case !tried:
		return "was not read"
	case pr.Err != "":
		return "could not be read: " + pr.Err
	}
	return ""
}

// backupLine judges one backup; ok is false for a backup with no snapshot in the audited
// locations.
func (v view) backupLine(b velerov1.Backup) (BackupLine, bool) {
	rec, read := v.w.Records[b.Name]
	var ours []RecordedSnapshot
	for _, s := range rec.Snapshots {
		if l, ok := v.locations[s.Location]; ok && v.audited[s.Location] && l.Err == "" {
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
	locs := map[string]bool{}
	for _, r := range ours {
		locs[r.Location] = true
		loc := v.locations[r.Location]
		src, found := v.sources[r.ID]
		var srcp *Snapshot
		switch why := v.placeUnread(place{kind: KindSource, creds: loc.Creds, region: loc.Config.Region}); {
		case found:
			srcp = &src
			tally(count(KindSource, "", src.Region), src.State)
			line.Bytes += src.Bytes
		case why != "":
			count(KindSource, "", loc.Config.Region).Unread = why
		default:
			count(KindSource, "", loc.Config.Region).Missing++
		}
		for _, want := range wanted(srcp, loc) {
			line.AsksCopies = true
			p := count(want.kind, want.account, want.region)
			if why := v.unread(want, loc); why != "" {
				p.Unread = why
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
	notReady, unknown := false, []string(nil)
	for _, name := range order {
		p := *places[name]
		line.Places = append(line.Places, p)
		switch {
		case p.Kind == KindSource:
		case p.Unread != "":
			unknown = append(unknown, p.Place+": "+p.Unread)
		case !p.Ready():
			notReady = true
		}
	}
	line.DRReady = line.AsksCopies && !notReady && len(unknown) == 0
	if line.AsksCopies && !notReady && len(unknown) > 0 {
		line.DRUnknown = strings.Join(unknown, "; ")
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
	line.AccountLoss = v.accountLossOf(b.Name, line.Places, locs)
	return line, true
}

// accountLossOf judges the backup's restore without its source account, when any of its
// locations names a vault bucket; nil otherwise.
func (v view) accountLossOf(name string, places []PlaceCount, locs map[string]bool) *AccountLoss {
	var buckets []BucketRead
	var without []string
	for loc := range locs {
		if b, ok := v.w.VaultBuckets[loc]; ok {
			buckets = append(buckets, b)
		} else {
			without = append(without, loc)
		}
	}
	if len(buckets) == 0 {
		return nil
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].Bucket.Name < buckets[j].Bucket.Name })
	return accountLoss(name, places, buckets, without)
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

// placeFindings says what keeps a finished backup from being restorable everywhere it asked,
// of the places read.
func placeFindings(places []PlaceCount) []string {
	var out []string
	for _, p := range places {
		if p.Unread != "" {
			continue
		}
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

// recoveryPoints finds, per schedule and recovery place, the newest Completed backup whose
// copies there are all completed (the one `velero restore create --from-schedule` would take
// is the newest Completed one), and sets its age against the schedule's interval. A place
// that could not be read for the newest Completed backup leaves the point unknown.
func recoveryPoints(backups []BackupLine, now time.Time, slack time.Duration) []RecoveryPoint {
	type key struct{ schedule, place string }
	type point struct {
		backup  *BackupLine
		unknown string
		decided bool
	}
	points := map[key]*point{}
	var keys []key
	starts := map[string][]time.Time{}
	for i := range backups { // newest first
		b := &backups[i]
		if b.Schedule == "" {
			continue
		}
		starts[b.Schedule] = append(starts[b.Schedule], b.Started)
		for _, p := range recoveryPlaces(*b) {
			k := key{b.Schedule, p.name}
			pt, seen := points[k]
			if !seen {
				keys = append(keys, k)
				pt = &point{}
				points[k] = pt
			}
			if pt.decided || b.Phase != string(velerov1.BackupPhaseCompleted) {
				continue
			}
			switch {
			case p.unread != "":
				pt.unknown, pt.decided = p.unread, true
			case p.ready:
				pt.backup, pt.decided = b, true
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
		pt := points[k]
		switch {
		case pt.unknown != "":
			p.Unknown = pt.unknown
		case pt.backup == nil && k.place == accountLossPlace:
			p.Finding = "no Completed backup of this schedule is vault-restorable (its vault copies completed and locked, its record in the vault bucket)"
		case pt.backup == nil:
			p.Finding = "no Completed backup of this schedule has all its copies completed here"
		default:
			pointAge := now.Sub(pt.backup.Started)
			p.Backup, p.Age = pt.backup.Name, cli.Seconds(pointAge)
			if interval > 0 && pointAge > interval+slack {
				p.Stale = true
				p.Finding = fmt.Sprintf("older than the schedule's interval (%s) by more than %s: the newer backups are not Completed with all their copies", age(interval), age(slack))
			}
		}
		out = append(out, p)
	}
	return out
}
