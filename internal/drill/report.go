package drill

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
)

// Report is what a drill did and measured.
type Report struct {
	Backup string `json:"backup"`
	// Location is the location whose settings the drill used; From the place of it the drill
	// restored from, in Region of Account.
	Location string `json:"location"`
	From     From   `json:"from"`
	Region   string `json:"region"`
	Account  string `json:"account"`
	// Note says why the drill restored elsewhere than asked.
	Note    string    `json:"note,omitempty"`
	Started time.Time `json:"started"`
	// Volumes are the volumes restored, each with its times.
	Volumes []VolumeResult `json:"volumes"`
	// Skipped were left out of the sample; Unrestorable could not be restored in the region.
	Skipped      []Skip `json:"skipped,omitempty"`
	Unrestorable []Skip `json:"unrestorable,omitempty"`
	// ToAvailable and ToInitialized are the drill's recovery times: from its start until the
	// last volume was available (initialized, when waited for).
	ToAvailable   cli.Seconds `json:"toAvailableSeconds"`
	ToInitialized cli.Seconds `json:"toInitializedSeconds,omitempty"`
	// Leftovers are the volumes of earlier, interrupted drills this drill deleted.
	Leftovers []string `json:"leftoversDeleted,omitempty"`
	// Problems are what went wrong, each with its fix.
	Problems []string `json:"problems,omitempty"`
}

// VolumeResult is one restored volume.
type VolumeResult struct {
	PV         string `json:"pv"`
	SnapshotID string `json:"snapshotId"`
	VolumeID   string `json:"volumeId,omitempty"`
	// RestoredFrom is the snapshot EC2 says the volume was made from: the recorded one, or
	// the copy taken.
	RestoredFrom string `json:"restoredFrom,omitempty"`
	SizeGiB      int32  `json:"sizeGiB"`
	// ToAvailable and ToInitialized are from the drill's start; zero when not reached.
	ToAvailable   cli.Seconds `json:"toAvailableSeconds,omitempty"`
	ToInitialized cli.Seconds `json:"toInitializedSeconds,omitempty"`
	Deleted       bool        `json:"deleted"`
	Error         string      `json:"error,omitempty"`
}

// Passed reports whether every volume of the backup in the sample was restored (and
// initialized when waited for) and deleted, and none was unrestorable.
func (r Report) Passed() bool { return len(r.Problems) == 0 && len(r.Unrestorable) == 0 }

// Exit is the drill's exit status.
func (r Report) Exit() int {
	if !r.Passed() {
		return ExitFailed
	}
	return ExitPassed
}

// Summary is the one line --record writes on the Backup and audit shows.
func (r Report) Summary() string {
	verdict := "passed"
	if !r.Passed() {
		verdict = "failed"
	}
	s := fmt.Sprintf("%s %s: %d volumes restored from %s (account %s, location %s), available in %s", verdict,
		r.Started.UTC().Format(time.RFC3339), len(r.Volumes), r.fromWords(), r.Account, r.Location, r.ToAvailable.Duration().Round(time.Second))
	if r.ToInitialized > 0 {
		s += fmt.Sprintf(", initialized in %s", r.ToInitialized.Duration().Round(time.Second))
	}
	if n := len(r.Unrestorable); n > 0 {
		s += fmt.Sprintf(", %d not restorable there", n)
	}
	if n := len(r.Problems); n > 0 {
		s += fmt.Sprintf(", %d problems", n)
	}
	return s
}

// WriteText writes the report for a person.
func (r Report) WriteText(w io.Writer) error {
	tw := cli.Table(w)
	fmt.Fprintf(tw, "Drill of backup %s from %s (account %s, location %s)\n", r.Backup, r.fromWords(), r.Account, r.Location)
	if r.Note != "" {
		fmt.Fprintf(tw, "  ! %s\n", r.Note)
	}
	for _, v := range r.Volumes {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d GiB\tavailable %s\tinitialized %s\t%s\n", v.PV, v.SnapshotID, restoredFrom(v), cmp.Or(v.VolumeID, "-"), v.SizeGiB,
			dur(v.ToAvailable.Duration()), dur(v.ToInitialized.Duration()), deleted(v))
	}
	for _, s := range r.Unrestorable {
		fmt.Fprintf(tw, "  ✗ %s\t%s\tnot restorable: %s\n", s.PV, s.SnapshotID, s.Why)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(tw, "  - %s\t%s\tnot in the sample: %s\n", s.PV, s.SnapshotID, s.Why)
	}
	for _, id := range r.Leftovers {
		fmt.Fprintf(tw, "  deleted %s, left by an interrupted drill\n", id)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(tw, "  ✗ %s\n", p)
	}
	fmt.Fprintln(tw, r.Summary())
	return tw.Flush()
}

// fromWords say what the drill restored from: "the copies in us-west-2".
func (r Report) fromWords() string {
	switch r.From {
	case FromCopy:
		return "the copies in " + r.Region
	case FromVault:
		return "the vault copies in " + r.Region
	}
	return "the snapshots in " + r.Region
}

// restoredFrom says which snapshot a volume was made from, when it is not the recorded one.
func restoredFrom(v VolumeResult) string {
	if v.RestoredFrom == "" || v.RestoredFrom == v.SnapshotID {
		return "-"
	}
	return "from " + v.RestoredFrom
}

func deleted(v VolumeResult) string {
	var parts []string
	if v.Deleted {
		parts = append(parts, "deleted")
	} else if v.VolumeID != "" {
		parts = append(parts, "NOT deleted")
	}
	if v.Error != "" {
		parts = append(parts, v.Error)
	}
	return strings.Join(parts, ": ")
}

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(time.Second).String()
}
