package ec2sim

import "strings"

// copyVolumeID is the volume ID EC2 reports for a copied snapshot.
const copyVolumeID = "vol-ffffffff"

// wellFormed reports whether id looks like an EC2 ID of the given prefix: PREFIX-, then 8 or 17
// lowercase hex digits.
func wellFormed(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix+"-")
	if !ok || (len(rest) != 8 && len(rest) != 17) {
		return false
	}
	for _, c := range rest {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// snapshotOf finds the snapshot a request's required SnapshotId names (see lookupSnapshot).
func (r *region) snapshotOf(q *request) (*snapshot, *apiError) {
	id, err := q.require("SnapshotId")
	if err != nil {
		return nil, err
	}
	return r.lookupSnapshot(id)
}

// lookupSnapshot finds a snapshot by ID; unknown IDs are InvalidSnapshot.NotFound, IDs that cannot
// be snapshot IDs InvalidSnapshotID.Malformed.
func (r *region) lookupSnapshot(id string) (*snapshot, *apiError) {
	if sn, ok := r.snaps[id]; ok {
		return sn, nil
	}
	if !wellFormed(id, "snap") {
		return nil, clientError("InvalidSnapshotID.Malformed", "Invalid id: \"%s\" (expecting \"snap-...\")", id)
	}
	return nil, clientError("InvalidSnapshot.NotFound", "The snapshot '%s' does not exist.", id)
}

// lookupVolume finds a volume by ID, like lookupSnapshot.
func (r *region) lookupVolume(id string) (*volume, *apiError) {
	if v, ok := r.volumes[id]; ok {
		return v, nil
	}
	if !wellFormed(id, "vol") {
		return nil, clientError("InvalidVolumeID.Malformed", "Invalid id: \"%s\" (expecting \"vol-...\")", id)
	}
	return nil, clientError("InvalidVolume.NotFound", "The volume '%s' does not exist.", id)
}
