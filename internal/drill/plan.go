package drill

import (
	"fmt"
	"sort"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
)

// Candidate is one recorded volume of the backup and what the location's region holds of it.
type Candidate struct {
	audit.RecordedSnapshot
	// SizeGiB is the size of its snapshot or copy in the region; 0 when the region holds none.
	SizeGiB int32
}

// Plan is which volumes a drill restores, and which it leaves out and why.
type Plan struct {
	Restore []Candidate
	// Skipped are left out of the sample (--max-volumes, --max-gib); Unrestorable have no
	// snapshot or copy in the region: the drill fails on them.
	Skipped, Unrestorable []Skip
}

// Skip is a volume left out of a drill, with why.
type Skip struct {
	PV, SnapshotID, Why string
}

// Limits bound a drill's sample: 0 for no limit.
type Limits struct {
	MaxVolumes int
	MaxGiB     int64
}

// Choose picks the volumes to restore: every recorded volume whose snapshot or copy is in the
// region, by PV name, within the limits. It is pure.
func Choose(cands []Candidate, l Limits) Plan {
	sorted := append([]Candidate(nil), cands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].PV < sorted[j].PV })
	var p Plan
	var gib int64
	for _, c := range sorted {
		switch {
		case c.SizeGiB == 0:
			p.Unrestorable = append(p.Unrestorable, Skip{PV: c.PV, SnapshotID: c.ID, Why: "neither the snapshot nor a completed copy of it is in the location's region"})
		case l.MaxVolumes > 0 && len(p.Restore) >= l.MaxVolumes:
			p.Skipped = append(p.Skipped, Skip{PV: c.PV, SnapshotID: c.ID, Why: fmt.Sprintf("beyond --max-volumes %d", l.MaxVolumes)})
		case l.MaxGiB > 0 && gib+int64(c.SizeGiB) > l.MaxGiB:
			p.Skipped = append(p.Skipped, Skip{PV: c.PV, SnapshotID: c.ID, Why: fmt.Sprintf("%d GiB would pass --max-gib %d", c.SizeGiB, l.MaxGiB)})
		default:
			p.Restore = append(p.Restore, c)
			gib += int64(c.SizeGiB)
		}
	}
	return p
}
