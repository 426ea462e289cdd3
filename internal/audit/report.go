package audit

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
)

// Report is what an audit found, and what --delete-orphans did.
type Report struct {
	Now     time.Time `json:"now"`
	Install string    `json:"install,omitempty"`
	// Backups are the backups with snapshots in the audited locations, newest first.
	Backups []BackupLine `json:"backups"`
	// RecoveryPoints are, per schedule and recovery place, the newest DR-ready backup.
	RecoveryPoints []RecoveryPoint `json:"recoveryPoints"`
	// Orphans are this install's snapshots no backup needs, grouped by the backup they name.
	Orphans []OrphanGroup `json:"orphans"`
	// DrillLeftovers are the volumes interrupted drills of this install left.
	DrillLeftovers []DrillVolume `json:"drillLeftovers,omitempty"`
	// Kept are snapshots no backup needs that a lock or vaultRetainOnDelete keeps: not
	// findings, never deleted.
	Kept []Orphan `json:"kept,omitempty"`
	// Unjudged are this install's snapshots no record read names whose need could not be
	// judged (Why says what it rests on that was not read or is in doubt): never deleted.
	Unjudged []Orphan `json:"unjudged,omitempty"`
	// Unknown are snapshots no backup of this cluster needs, taken by a release that did not
	// tag the install: never called orphans, never deleted.
	Unknown []Orphan `json:"unknownInstall,omitempty"`
	// OtherInstalls counts the snapshots of other installs (other clusters, or this cluster's
	// other Velero namespaces) that no backup of this cluster needs: theirs to audit.
	OtherInstalls int `json:"otherInstalls"`
	// Problems are what could not be audited.
	Problems []string `json:"problems,omitempty"`
	// Deletions are what --delete-orphans did with each orphan.
	Deletions []Deletion `json:"deletions,omitempty"`
}

// BackupLine is one backup's disaster-recovery state.
type BackupLine struct {
	Name     string    `json:"name"`
	Schedule string    `json:"schedule,omitempty"`
	Phase    string    `json:"phase"`
	Started  time.Time `json:"started,omitzero"`
	// Places count the snapshots per place: the sources, then each recovery place.
	Places []PlaceCount `json:"places"`
	Bytes  int64        `json:"bytes"`
	// AsksCopies says whether the backup asked for any copy; DRReady whether every copy it
	// asked for was read completed, since ReadySince. DRUnknown, when set, says which places
	// could not be read, while no place read tells it not ready: whether it is DR-ready is
	// unknown.
	AsksCopies bool      `json:"asksCopies"`
	DRReady    bool      `json:"drReady"`
	DRUnknown  string    `json:"drUnknown,omitempty"`
	ReadySince time.Time `json:"readySince,omitzero"`
	// Findings say what is wrong, each with its fix.
	Findings []string `json:"findings,omitempty"`
	// LastDrill is the result drill --record wrote on the Backup.
	LastDrill string `json:"lastDrill,omitempty"`
	// AccountLoss, for a backup of a location naming a vault bucket, says whether it restores
	// without its source account.
	AccountLoss *AccountLoss `json:"accountLoss,omitempty"`
}

// AccountLoss is whether a backup restores once its source account is gone: from its vault
// copies, with its record in the vault bucket.
type AccountLoss struct {
	// Buckets names the vault buckets read for its record.
	Buckets string `json:"buckets"`
	// Restorable: every vault copy asked for completed (and locked where asked), and its record
	// is in the vault bucket. Never true when something it rests on was not read.
	Restorable bool `json:"vaultRestorable"`
	// Unknown says what was not read, while nothing read says it is not restorable.
	Unknown string `json:"unknown,omitempty"`
	// Why says why it is not restorable.
	Why string `json:"why,omitempty"`
}

// PlaceCount counts one backup's snapshots in one place.
type PlaceCount struct {
	Kind      Kind   `json:"kind"`
	Place     string `json:"place"`
	Account   string `json:"account,omitempty"`
	Region    string `json:"region"`
	Completed int    `json:"completed"`
	Pending   int    `json:"pending"`
	Missing   int    `json:"missing"`
	Error     int    `json:"error"`
	// Unread, when set, says why the place was not read: its counts say nothing.
	Unread string `json:"unread,omitempty"`
	// Locked counts the copies under a lock, LockMode their mode and LockedUntil the earliest
	// end of their locks; LocksAsked the copies whose source asked for one.
	Locked      int       `json:"locked,omitempty"`
	LocksAsked  int       `json:"locksAsked,omitempty"`
	LockMode    string    `json:"lockMode,omitempty"`
	LockedUntil time.Time `json:"lockedUntil,omitzero"`
}

// Ready reports whether every snapshot of the place is completed.
func (p PlaceCount) Ready() bool { return p.Pending+p.Missing+p.Error == 0 && p.Completed > 0 }

// RecoveryPoint is a schedule's newest DR-ready backup in one recovery place.
type RecoveryPoint struct {
	Schedule string `json:"schedule"`
	Place    string `json:"place"`
	// Backup is the newest backup whose copies there are all completed; "" when none is.
	Backup string      `json:"backup,omitempty"`
	Age    cli.Seconds `json:"ageSeconds,omitempty"`
	// Interval is the schedule's (the time between its two newest backups); zero when unknown.
	Interval cli.Seconds `json:"intervalSeconds,omitempty"`
	Stale    bool        `json:"stale"`
	Finding  string      `json:"finding,omitempty"`
	// Unknown, when set, says why the recovery point could not be told.
	Unknown string `json:"unknown,omitempty"`
}

// OrphanGroup is the orphans naming one backup.
type OrphanGroup struct {
	Backup      string   `json:"backup"`
	Orphans     []Orphan `json:"snapshots"`
	MonthlyCost float64  `json:"monthlyCostUSD"`
}

// Orphan is a snapshot no backup needs, or one kept though its backup is gone.
type Orphan struct {
	ID      string      `json:"id"`
	Kind    Kind        `json:"kind"`
	Account string      `json:"account"`
	Region  string      `json:"region"`
	Backup  string      `json:"backup"`
	Why     string      `json:"why"`
	Age     cli.Seconds `json:"ageSeconds"`
	Bytes   int64       `json:"bytes"`
	Tier    string      `json:"tier"`
	// MonthlyCost is the estimated storage cost in USD per month (Prices).
	MonthlyCost float64 `json:"monthlyCostUSD"`
	// KeptBy, for a kept snapshot, says what keeps it.
	KeptBy string `json:"keptBy,omitempty"`
}

// Deletion is what --delete-orphans did with one orphan.
type Deletion struct {
	ID      string `json:"id"`
	Region  string `json:"region"`
	Deleted bool   `json:"deleted"`
	// Why says why it was not deleted.
	Why string `json:"why,omitempty"`
}

// Exit statuses, as check's.
const (
	// ExitOK: nothing to report.
	ExitOK = cli.ExitOK
	// ExitFindings: a backup is not DR-ready, a recovery point is older than its schedule's
	// interval, or orphans were found.
	ExitFindings = 1
	// ExitError: the audit could not run, or could not read everything it needs.
	ExitError = cli.ExitError
)

// Findings reports whether the report holds anything a user must act on.
func (r Report) Findings() bool {
	for _, b := range r.Backups {
		if len(b.Findings) > 0 {
			return true
		}
	}
	for _, p := range r.RecoveryPoints {
		if p.Finding != "" {
			return true
		}
	}
	for _, d := range r.Deletions {
		if !d.Deleted {
			return true
		}
	}
	return (len(r.Orphans) > 0 || len(r.DrillLeftovers) > 0) && len(r.Deletions) == 0
}

// Exit is the audit's exit status.
func (r Report) Exit() int {
	switch {
	case len(r.Problems) > 0:
		return ExitError
	case r.Findings():
		return ExitFindings
	}
	return ExitOK
}

// WriteText writes the report for a person.
func (r Report) WriteText(w io.Writer) error {
	tw := cli.Table(w)
	fmt.Fprintf(tw, "Install %s, audited %s\n", cmp.Or(r.Install, "unknown"), r.Now.UTC().Format(time.RFC3339))
	fmt.Fprintf(tw, "\nBackups (%d)\n", len(r.Backups))
	for _, b := range r.Backups {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", b.Name, b.Phase, readiness(b, r.Now), gib(b.Bytes))
		for _, p := range b.Places {
			fmt.Fprintf(tw, "    %s\t%s\n", p.Place, placeText(p))
		}
		if l := b.AccountLoss; l != nil {
			fmt.Fprintf(tw, "    %s\t%s\n", accountLossPlace, accountLossText(*l))
		}
		if b.LastDrill != "" {
			fmt.Fprintf(tw, "    last drill\t%s\n", b.LastDrill)
		}
		for _, f := range b.Findings {
			fmt.Fprintf(tw, "    ✗ %s\n", f)
		}
	}
	if len(r.RecoveryPoints) > 0 {
		fmt.Fprintf(tw, "\nRecovery points\n")
		for _, p := range r.RecoveryPoints {
			mark := "✓"
			switch {
			case p.Finding != "":
				mark = "✗"
			case p.Unknown != "":
				mark = "?"
			}
			fmt.Fprintf(tw, "  %s %s\t%s\t%s\n", mark, p.Schedule, p.Place, pointText(p))
		}
	}
	fmt.Fprintf(tw, "\nOrphans (%d backups)\n", len(r.Orphans))
	for _, g := range r.Orphans {
		fmt.Fprintf(tw, "  %s\t%d snapshots\t$%.2f/month\n", g.Backup, len(g.Orphans), g.MonthlyCost)
		for _, o := range g.Orphans {
			writeOrphan(tw, o)
		}
	}
	if len(r.DrillLeftovers) > 0 {
		fmt.Fprintf(tw, "\nVolumes left by interrupted drills (%d)\n", len(r.DrillLeftovers))
		for _, v := range r.DrillLeftovers {
			fmt.Fprintf(tw, "    volume %s\t%s\t%s old\t%s\n", v.ID, v.Region, age(r.Now.Sub(v.Created)), v.State)
		}
	}
	if len(r.Kept) > 0 {
		fmt.Fprintf(tw, "\nKept though no backup needs them, by a lock or vaultRetainOnDelete (%d; not findings, never deleted)\n", len(r.Kept))
		for _, o := range r.Kept {
			writeOrphan(tw, o)
		}
	}
	if len(r.Unjudged) > 0 {
		fmt.Fprintf(tw, "\nNot judged: no record read names them, but what would prove them unneeded was not read (%d; never deleted)\n", len(r.Unjudged))
		for _, o := range r.Unjudged {
			writeOrphan(tw, o)
		}
	}
	if len(r.Unknown) > 0 {
		fmt.Fprintf(tw, "\nNeeded by no backup of this cluster, taken by a release that did not tag its install (%d; never deleted by audit: check each by hand)\n", len(r.Unknown))
		for _, o := range r.Unknown {
			writeOrphan(tw, o)
		}
	}
	if r.OtherInstalls > 0 {
		fmt.Fprintf(tw, "\n%d snapshots of other installs are needed by no backup of this cluster: audit them from their own cluster\n", r.OtherInstalls)
	}
	if len(r.Deletions) > 0 {
		fmt.Fprintf(tw, "\nDeletions\n")
		for _, d := range r.Deletions {
			if d.Deleted {
				fmt.Fprintf(tw, "  deleted %s in %s\n", d.ID, d.Region)
			} else {
				fmt.Fprintf(tw, "  refused %s in %s: %s\n", d.ID, d.Region, d.Why)
			}
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintf(tw, "\n! could not audit: %s", p)
	}
	if len(r.Problems) > 0 {
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func writeOrphan(w io.Writer, o Orphan) {
	fmt.Fprintf(w, "    %s %s\t%s %s\t%s old\t%s\t$%.2f/month\t%s\n", o.Kind, o.ID, o.Account, o.Region, age(o.Age.Duration()), gib(o.Bytes), o.MonthlyCost, o.Why)
	if o.KeptBy != "" {
		fmt.Fprintf(w, "      kept: %s\n", o.KeptBy)
	}
}

func readiness(b BackupLine, now time.Time) string {
	switch {
	case !b.AsksCopies:
		return "no copies asked for"
	case b.DRReady && !b.ReadySince.IsZero():
		return fmt.Sprintf("DR-ready for %s (since %s)", age(now.Sub(b.ReadySince)), b.ReadySince.UTC().Format(time.RFC3339))
	case b.DRReady:
		return "DR-ready"
	case b.DRUnknown != "":
		return "DR-ready unknown"
	}
	return "not DR-ready"
}

func placeText(p PlaceCount) string {
	if p.Unread != "" {
		return "unknown: " + p.Unread
	}
	parts := []string{fmt.Sprintf("%d completed", p.Completed)}
	for _, c := range []struct {
		n    int
		what string
	}{{p.Pending, "pending"}, {p.Missing, "missing"}, {p.Error, "error"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if p.LocksAsked > 0 || p.Locked > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d locked (%s until %s)", p.Locked, p.LocksAsked, cmp.Or(p.LockMode, "none"), p.LockedUntil.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, ", ")
}

func accountLossText(l AccountLoss) string {
	switch {
	case l.Restorable:
		return "vault-restorable: vault copies completed and locked, record in " + l.Buckets
	case l.Unknown != "":
		return "vault-restorable unknown: " + l.Unknown
	}
	return "not vault-restorable: " + l.Why
}

func pointText(p RecoveryPoint) string {
	if p.Unknown != "" {
		return "unknown: " + p.Unknown
	}
	s := "no DR-ready backup"
	if p.Backup != "" {
		s = fmt.Sprintf("%s, %s old", p.Backup, age(p.Age.Duration()))
	}
	if p.Interval > 0 {
		s += ", interval " + age(p.Interval.Duration())
	}
	if p.Finding != "" {
		s += ": " + p.Finding
	}
	return s
}

// age writes d in hours (and days beyond two), as a user reads a recovery point.
func age(d time.Duration) string {
	switch h := d.Hours(); {
	case h >= 48:
		return fmt.Sprintf("%.0f d", h/24)
	case d >= time.Hour:
		return fmt.Sprintf("%.0f h", h)
	}
	return fmt.Sprintf("%.0f min", d.Minutes())
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/float64(1<<30)) }
