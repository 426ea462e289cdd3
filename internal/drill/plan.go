package drill

import (
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Candidate is one recorded volume of the backup and what the drill's region holds of it.
type Candidate struct {
	audit.RecordedSnapshot
	// SizeGiB is the size of the snapshot or copy a restore there takes; 0 when the region
	// holds none.
	SizeGiB int32
}

// Plan is which volumes a drill restores, and which it leaves out and why.
type Plan struct {
	Restore []Candidate
	// Skipped are left out of the sample (--max-volumes, --max-gib); Unrestorable have no
	// snapshot or copy in the region that the drill may take: the drill fails on them.
	Skipped, Unrestorable []Skip
}

// Skip is a volume left out of a drill, with why.
type Skip struct {
	PV         string `json:"pv"`
	SnapshotID string `json:"snapshotId"`
	Why        string `json:"why"`
}

// Limits bound a drill's sample: 0 for no limit.
type Limits struct {
	MaxVolumes int
	MaxGiB     int64
}

// candidates are the recorded snapshots, each with the size of what listed (the region's
// completed snapshots and copies of them) holds of it that src takes: the recorded snapshot
// itself first, else a copy, as the restore chooses. It is pure.
func candidates(recorded []audit.RecordedSnapshot, listed []types.Snapshot, src model.RestoreSource) []Candidate {
	byID, copies := map[string]types.Snapshot{}, map[string][]types.Snapshot{}
	for _, s := range listed {
		byID[aws.ToString(s.SnapshotId)] = s
		if from := model.TagValue(s.Tags, model.TagSourceSnapshotID); from != "" {
			copies[from] = append(copies[from], s)
		}
	}
	out := make([]Candidate, 0, len(recorded))
	for _, r := range recorded {
		c := Candidate{RecordedSnapshot: r}
		for _, s := range append([]types.Snapshot{byID[r.ID]}, copies[r.ID]...) {
			if src.Takes(s, r.ID) {
				c.SizeGiB = aws.ToInt32(s.VolumeSize)
				break
			}
		}
		out = append(out, c)
	}
	return out
}

// missing is why a volume whose region holds nothing the drill may take is not restorable.
func missing(p Place, account string) string {
	switch {
	case !p.Source.CopiesOnly:
		return fmt.Sprintf("neither the snapshot nor a completed copy of it is in %s of account %s", p.Region, account)
	case p.Source.VaultOf != "":
		return fmt.Sprintf("no completed vault copy of it (of account %s's snapshot) in %s of account %s", p.Source.VaultOf, p.Region, account)
	}
	return fmt.Sprintf("no completed copy of it in %s of account %s", p.Region, account)
}

// Choose picks the volumes to restore: every recorded volume the region holds a snapshot or
// copy of, by PV name, within the limits; those it holds none of are unrestorable, for why. It
// is pure.
func Choose(cands []Candidate, l Limits, why string) Plan {
	sorted := append([]Candidate(nil), cands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].PV < sorted[j].PV })
	var p Plan
	var gib int64
	for _, c := range sorted {
		switch {
		case c.SizeGiB == 0:
			p.Unrestorable = append(p.Unrestorable, Skip{PV: c.PV, SnapshotID: c.ID, Why: why})
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
