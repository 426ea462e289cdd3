package ec2sim

import (
	"cmp"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Per-volume snapshot limits.
const (
	snapshotInterval   = 15 * time.Second // minimum time between CreateSnapshot calls for one volume
	maxPendingPerVol   = 5
	maxPendingPerHDD   = 1 // st1 and sc1
	minCompletionMins  = 15
	maxCompletionMins  = 2880
	completionMinsStep = 15
)

func (s *Simulator) createSnapshot(r *region, q *request) ([]byte, *apiError) {
	volID, err := q.require("VolumeId")
	if err != nil {
		return nil, err
	}
	v, err := r.lookupVolume(volID)
	if err != nil {
		return nil, err
	}
	tags, err := q.tagSpecs("snapshot")
	if err != nil {
		return nil, err
	}
	if last, ok := r.lastCreate[volID]; ok && q.now.Sub(last) < snapshotInterval {
		return nil, clientError("SnapshotCreationPerVolumeRateExceeded",
			"The maximum per volume CreateSnapshot request rate has been exceeded. Use an increasing or variable sleep interval between requests.")
	}
	limit := maxPendingPerVol
	if v.typ == "st1" || v.typ == "sc1" {
		limit = maxPendingPerHDD
	}
	if r.activeOf(volID, q.now) >= limit {
		return nil, clientError("ConcurrentSnapshotLimitExceeded",
			"Maximum number of active snapshots for volume %s has been reached.", volID)
	}
	id, seq := s.newID("snap")
	sn := &snapshot{
		id: id, owner: r.account, seq: seq, volumeID: volID, description: q.get("Description"),
		start: q.now, done: q.now.Add(s.draw(s.cfg.SnapshotDuration)),
		visibleAt: q.now.Add(s.draw(s.faults.InvisibleFor)),
		sizeGiB:   v.sizeGiB, encrypted: v.encrypted, kmsKeyID: v.kmsKeyID, tags: tags,
		failMessage: s.snapshotFailure(volID),
	}
	r.addSnapshot(sn)
	r.lastCreate[volID] = q.now
	w := newResponse(q.action, q.requestID)
	writeSnapshotFields(w, sn, q.now, r.account)
	return w.finish(q.action), nil
}

// writeSnapshotFields writes a snapshot's elements as viewer (an account) sees them: the ones
// that change with time, then the rest from a cache that tag changes clear. Tags belong to the
// owner: other accounts do not see them.
func writeSnapshotFields(w *xmlWriter, sn *snapshot, now time.Time, viewer string) {
	w.elem("status", sn.state(now))
	w.elemNonEmpty("statusMessage", sn.statusMessage(now))
	w.elem("progress", sn.progress(now))
	if sn.state(now) == stateCompleted {
		w.elem("fullSnapshotSizeInBytes", strconv.FormatInt(sn.fullSizeBytes(), 10))
	}
	if sn.xml == nil {
		var c xmlWriter
		c.elem("snapshotId", sn.id)
		c.elem("volumeId", sn.reportedVolumeID())
		c.time("startTime", sn.start)
		c.elem("ownerId", sn.owner)
		c.int("volumeSize", sn.sizeGiB)
		c.elem("description", sn.description)
		c.bool("encrypted", sn.encrypted)
		c.elemNonEmpty("kmsKeyId", sn.kmsKeyID)
		c.elem("storageTier", "standard")
		if sn.completionMinutes > 0 {
			c.int("completionDurationMinutes", sn.completionMinutes)
		}
		if sn.isCopy() {
			c.elem("transferType", "standard") // EC2 reports it for copies only
		}
		sn.tagsAt = c.Len()
		c.tagSet(sn.tags)
		sn.xml = c.Bytes()
	}
	if viewer != sn.owner {
		w.Write(sn.xml[:sn.tagsAt])
		return
	}
	w.Write(sn.xml)
}

func (s *Simulator) describeSnapshots(r *region, q *request) ([]byte, *apiError) {
	size, start, err := page(q, 1000, "SnapshotId")
	if err != nil {
		return nil, err
	}
	filters := q.filters()
	for _, f := range filters { // reject unknown filters even when nothing would be compared
		if _, err := snapshotMatches(&snapshot{}, f, q.now); err != nil {
			return nil, err
		}
	}
	ids := q.list("SnapshotId")
	scope := newSnapshotScope(r.account, q)
	var candidates []*snapshot
	checks := filters // the filters candidates still have to pass
	if len(ids) > 0 {
		for _, id := range ids {
			sn, err := s.visibleSnapshot(r, id, q.now)
			if err != nil {
				return nil, err
			}
			candidates = append(candidates, sn)
		}
	} else {
		var used int
		candidates, used = r.snapshotCandidates(filters)
		if used >= 0 {
			checks = slices.Delete(slices.Clone(filters), used, used+1)
		}
		if scope.reachesOthers() && !hasTagFilter(filters) {
			candidates = withShared(candidates, s.sharedSnapshots(r.account, r.name, q.now))
		}
	}
	w := newResponse(q.action, q.requestID)
	w.open("snapshotSet")
	n := 0
	seen := make(map[string]bool, len(ids))
	for _, sn := range candidates {
		if sn.seq < start || q.now.Before(sn.visibleAt) || !scope.admits(sn) || seen[sn.id] {
			continue
		}
		if !snapshotMatchesAll(sn, checks, q.now) {
			continue
		}
		if size > 0 && n == size {
			w.close("snapshotSet")
			w.elem("nextToken", nextToken(sn.seq))
			return w.finish(q.action), nil
		}
		if len(ids) > 0 {
			seen[sn.id] = true
		}
		n++
		w.open("item")
		writeSnapshotFields(w, sn, q.now, r.account)
		w.close("item")
	}
	w.close("snapshotSet")
	return w.finish(q.action), nil
}

// snapshotCandidates narrows the snapshots a filter set can match, in creation order, using the
// tag, ID and volume indexes when a filter allows it. used is the index of the filter the
// candidates satisfy already, or -1.
func (r *region) snapshotCandidates(filters []filter) (candidates []*snapshot, used int) {
	var best map[string]*snapshot
	used = -1
	for i, f := range filters {
		if !f.exact() {
			continue
		}
		set := map[string]*snapshot{}
		switch {
		case len(f.name) > 4 && f.name[:4] == "tag:":
			for _, v := range f.values {
				for id, sn := range r.tagIndex[f.name[4:]][v] {
					set[id] = sn
				}
			}
		case f.name == "snapshot-id":
			for _, v := range f.values {
				if sn, ok := r.snaps[v]; ok {
					set[v] = sn
				}
			}
		case f.name == "volume-id" && !slices.Contains(f.values, copyVolumeID):
			for _, v := range f.values {
				for id, sn := range r.byVolume[v] {
					set[id] = sn
				}
			}
		default:
			continue
		}
		if used < 0 || len(set) < len(best) {
			best, used = set, i
		}
	}
	if used < 0 {
		return r.snapOrder, -1
	}
	out := make([]*snapshot, 0, len(best))
	for _, sn := range best {
		out = append(out, sn)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, used
}

func (s *Simulator) copySnapshot(r *region, q *request) ([]byte, *apiError) {
	srcRegion, err := q.require("SourceRegion")
	if err != nil {
		return nil, err
	}
	srcID, err := q.require("SourceSnapshotId")
	if err != nil {
		return nil, err
	}
	if err := checkPresignedURL(q.get("PresignedUrl"), srcRegion, srcID); err != nil {
		return nil, err
	}
	sn, err := s.usableSnapshot(r.account, srcRegion, srcID, q.now) // own, or shared with the caller
	if err != nil {
		return nil, err
	}
	if st := sn.state(q.now); st != stateCompleted {
		return nil, clientError("IncorrectState", "Snapshot is in invalid state - %s", st)
	}
	tags, err := q.tagSpecs("snapshot")
	if err != nil {
		return nil, err
	}
	mins, hasMins, err := q.int32("CompletionDurationMinutes")
	if err != nil {
		return nil, err
	}
	if hasMins && (mins < minCompletionMins || mins > maxCompletionMins || mins%completionMinsStep != 0) {
		return nil, clientError("InvalidParameterValue",
			"Value (%d) for parameter completionDurationMinutes is invalid. It must be a multiple of 15 between 15 and 2880.", mins)
	}
	if r.pendingCopies() >= s.cfg.CopyLimit {
		return nil, clientError("ResourceLimitExceeded",
			"Too many snapshot copies in progress. The limit is %d for this destination region.", s.cfg.CopyLimit)
	}
	encrypted := sn.encrypted || q.bool("Encrypted") || q.get("KmsKeyId") != ""
	kms := q.get("KmsKeyId")
	if encrypted && kms == "" {
		kms = defaultKmsKey(r.account, r.name)
		if srcRegion == r.name && sn.owner == r.account && sn.kmsKeyID != "" {
			kms = sn.kmsKeyID
		}
	}
	desc := q.get("Description")
	if desc == "" {
		desc = "[Copied " + srcID + " from " + srcRegion + "]"
	}
	dur := s.draw(s.cfg.CopyDuration)
	if hasMins {
		dur = time.Duration(mins) * time.Minute
	}
	id, seq := s.newID("snap")
	c := &snapshot{
		id: id, owner: r.account, seq: seq, volumeID: sn.volumeID, description: desc,
		start: q.now, done: q.now.Add(dur), visibleAt: q.now.Add(s.draw(s.faults.InvisibleFor)),
		sizeGiB: sn.sizeGiB, encrypted: encrypted, kmsKeyID: kms, tags: tags,
		sourceID: srcID, sourceRegion: srcRegion, completionMinutes: mins,
		failMessage: cmp.Or(s.copyKeyProblem(sn, srcRegion, q.get("KmsKeyId"), r), s.copyFailure(sn.volumeID)),
	}
	r.addSnapshot(c)
	r.copies[id] = c
	r.peakCopies = max(r.peakCopies, r.pendingCopies())
	w := newResponse(q.action, q.requestID)
	w.elem("snapshotId", id)
	w.tagSet(tags)
	return w.finish(q.action), nil
}

// checkPresignedURL accepts a PresignedUrl (as the SDK adds it) when it is a CopySnapshot request
// of the same snapshot signed for the source region; its signature is not checked.
func checkPresignedURL(raw, srcRegion, srcID string) *apiError {
	if raw == "" {
		return nil
	}
	invalid := clientError("InvalidParameterValue", "The parameter PresignedUrl is invalid.")
	u, err := url.Parse(raw)
	if err != nil {
		return invalid
	}
	p := u.Query()
	if p.Get("Action") != "CopySnapshot" || p.Get("SourceSnapshotId") != srcID ||
		regionOfCredential(p.Get("X-Amz-Credential")) != srcRegion {
		return invalid
	}
	return nil
}

func (s *Simulator) deleteSnapshot(r *region, q *request) ([]byte, *apiError) {
	sn, err := r.snapshotOf(q)
	if err != nil {
		return nil, err
	}
	id := sn.id
	if sn.locked(q.now) {
		return nil, errSnapshotLocked(id)
	}
	if sn.state(q.now) == statePending {
		sn.deletePending = true
		r.deleting[id] = sn
	} else {
		r.removeSnapshot(sn)
	}
	return returnTrue(q), nil
}

func returnTrue(q *request) []byte {
	w := newResponse(q.action, q.requestID)
	w.elem("return", "true")
	return w.finish(q.action)
}
