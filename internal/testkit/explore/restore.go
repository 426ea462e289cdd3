package explore

import (
	"context"
	"slices"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The restore path: Velero restoring a PV of the finished backup through the VolumeSnapshotter's
// CreateVolumeFromSnapshot, in the source region from the recorded snapshot, or in the copy
// region (a recovery cluster's location of the same name) from its copy.
//
// Velero core starts the plugins afresh for each restore, and the plugin's restore tokens are
// drawn once per process; the explorer runs in one process, so it plays one restore per region
// and run, each in a VolumeSnapshotter of its own, with Velero's retries of a PV in that restore.

// restoreCall is one CreateVolumeFromSnapshot as Velero saw it.
type restoreCall struct {
	region, pv, snapshotID string
	// volumeID is what the call returned; "" when it returned an error.
	volumeID string
	err      string
}

// restoreRegions are the regions a PV of the backup may be restored in.
func (w *world) restoreRegions() []string {
	if w.cfg.CopyToRegion != "" {
		return []string{sourceRegion, copyRegion}
	}
	return []string{sourceRegion}
}

// restorable lists the PVs Velero may restore: the backup has finished (Velero restores only a
// finished backup) and is not deleted, and this plugin recorded the PV's snapshot.
func (w *world) restorable() []int {
	if w.waiting() || w.deleted {
		return nil
	}
	var out []int
	for i, op := range w.ops {
		if op.snapshotID != "" && !op.upstream {
			out = append(out, i)
		}
	}
	return out
}

// restorer is the VolumeSnapshotter of the restore in region: the source cluster's location, or
// a recovery cluster's location of the same name in the copy region.
func (w *world) restorer(region string) *ebs.Snapshotter {
	if s, ok := w.restorers[region]; ok {
		return s
	}
	cfg := w.cfg
	cfg.Region, cfg.CopyToRegion = region, ""
	s := w.newSnapshotter(cfg, w.regional("restore", sourceAccount, true), false)
	w.restorers[region] = s
	return s
}

// restore is Velero restoring PV i in region: CreateVolumeFromSnapshot with the snapshot ID it
// recorded, the PV's volume type and its original zone, as pv_restorer does.
func (w *world) restore(i int, region string) {
	op := w.ops[i]
	s := w.restorer(region)
	var id string
	var err error
	if !w.onClock(func(ctx context.Context) {
		id, err = s.CreateVolumeFromSnapshot(ctx, op.snapshotID, "gp3", sourceRegion+"a", nil)
	}) {
		w.violate(catHung, "CreateVolumeFromSnapshot of %s in %s did not return", op.pv, region)
	}
	call := restoreCall{region: region, pv: op.pv, snapshotID: op.snapshotID, volumeID: id}
	if err != nil {
		call.err = err.Error()
	}
	w.restores = append(w.restores, call)
	w.logf("velero: restore %s in %s from %s -> %q %s", op.pv, region, op.snapshotID, id, call.err)
}

// restoredVolumes lists the volumes made from a snapshot in the source account, by region.
func (w *world) restoredVolumes() map[string][]ec2sim.Volume {
	out := map[string][]ec2sim.Volume{}
	for _, r := range w.restoreRegions() {
		for _, v := range w.sim.VolumesIn(sourceAccount, r) {
			if v.SnapshotID != "" {
				out[r] = append(out[r], v)
			}
		}
	}
	return out
}

// pvOfRestoreSource returns the operation whose recorded snapshot a volume in region was made
// from: the snapshot itself in the source region, its completed copy made by this plugin in the
// copy region. It returns nil for any other snapshot.
func (w *world) pvOfRestoreSource(snaps map[string]ec2sim.Snapshot, region, snapshotID string) *operation {
	if region == sourceRegion {
		if op := w.recorded(snapshotID); op != nil && !op.upstream {
			return op
		}
		return nil
	}
	s, ok := snaps[snapshotID]
	if _, theirs := w.foreign[snapshotID]; !ok || theirs || s.Account != sourceAccount || s.Region != region || s.State != "completed" {
		return nil
	}
	if op := w.recorded(s.SourceSnapshotID); op != nil && !op.upstream {
		return op
	}
	return nil
}

// checkRestores checks the restores: every volume is made from this backup's recorded snapshot
// or its completed copy; a call that returned a volume made exactly that one for the PV and the
// restore; and, once final (the listing lag has passed), a restore whose every call returned an
// error left no volume behind, unless its error names the volume that may still appear.
func (w *world) checkRestores(final bool) {
	if len(w.restores) == 0 {
		return
	}
	var snaps map[string]ec2sim.Snapshot
	made := map[string][]string{} // by region and PV
	for region, vols := range w.restoredVolumes() {
		for _, v := range vols {
			pv, seen := w.restoredFor[v.ID]
			if !seen {
				// Judged when first seen: a copy it was made from may be deleted later.
				if snaps == nil {
					snaps = w.everything()
				}
				if op := w.pvOfRestoreSource(snaps, region, v.SnapshotID); op != nil {
					pv = op.pv
				} else {
					w.violate(catRestoredFromOther, "volume %s in %s made from %s, which is neither a snapshot of the backup nor its completed copy", v.ID, region, v.SnapshotID)
				}
				w.restoredFor[v.ID] = pv
			}
			if pv != "" {
				key := region + " " + pv
				made[key] = append(made[key], v.ID)
			}
		}
	}
	returned := map[string]bool{}
	named := map[string]bool{}
	for _, c := range w.restores {
		key := c.region + " " + c.pv
		vols := made[key]
		if len(vols) > 1 {
			w.violate(catRestoreDuplicate, "%d volumes made for %s in one restore in %s: %v", len(vols), c.pv, c.region, vols)
		}
		switch {
		case c.volumeID != "" && !slices.Contains(vols, c.volumeID):
			w.violate(catRestoredFromOther, "the restore of %s in %s returned volume %s, which is not a volume made from its snapshot (%v are)", c.pv, c.region, c.volumeID, vols)
		case c.volumeID != "":
			returned[key] = true
		case strings.Contains(c.err, ebs.TagRestoreToken):
			named[key] = true
		}
	}
	if !final {
		return
	}
	for key, vols := range made {
		switch {
		case returned[key]:
		case named[key]:
			// The error said a volume may still appear, and by which tag: not silent.
			w.logf("left: %v for %s, whose restore failed naming the tag of the volume that may appear", vols, key)
		default:
			w.violate(catRestoreLeaked, "the restore of %s returned only errors and left %v", key, vols)
		}
	}
}
