package ec2sim

import (
	"fmt"
	"slices"
)

// newID returns a fresh ID like "snap-0123456789abcdef0"; IDs are unique across regions.
func (s *Simulator) newID(prefix string) (string, uint64) {
	s.idSeq++
	// Multiplying by an odd constant is a bijection on uint64: unique, random-looking IDs.
	return fmt.Sprintf("%s-0%016x", prefix, s.idSeq*0x9e3779b97f4a7c15), s.idSeq
}

// seedVolume adds an available volume from a spec and returns its ID. Callers hold s.mu.
func (s *Simulator) seedVolume(r *region, spec VolumeSpec) string {
	id, seq := s.newID("vol")
	if spec.ID != "" {
		id = spec.ID
	}
	now := s.clock.Now()
	v := &volume{
		id: id, seq: seq, az: spec.AvailabilityZone, typ: spec.Type,
		sizeGiB: spec.SizeGiB, iops: spec.IOPS, throughput: spec.Throughput,
		encrypted: spec.Encrypted || spec.KmsKeyID != "", kmsKeyID: spec.KmsKeyID, tags: copyTags(spec.Tags),
		outpostArn: spec.OutpostArn, created: now, ready: now, visibleAt: now,
	}
	if v.az == "" {
		v.az = r.azs[0]
	}
	if v.typ == "" {
		v.typ = "gp3"
	}
	if v.sizeGiB == 0 {
		v.sizeGiB = 8
	}
	if v.encrypted && v.kmsKeyID == "" {
		v.kmsKeyID = defaultKmsKey(r.account, r.name)
	}
	v.iops, v.throughput = volumePerformance(v.typ, v.sizeGiB, v.iops, v.throughput)
	r.addVolume(v)
	return id
}

func (r *region) addVolume(v *volume) {
	if old, ok := r.volumes[v.id]; ok {
		r.removeVolume(old)
	}
	r.volumes[v.id] = v
	r.volOrder = append(r.volOrder, v)
}

func (r *region) removeVolume(v *volume) {
	delete(r.volumes, v.id)
	if i := slices.Index(r.volOrder, v); i >= 0 {
		r.volOrder = slices.Delete(r.volOrder, i, i+1)
	}
}

func (r *region) addSnapshot(sn *snapshot) {
	r.snaps[sn.id] = sn
	r.snapOrder = append(r.snapOrder, sn)
	if !sn.isCopy() {
		m := r.byVolume[sn.volumeID]
		if m == nil {
			m = map[string]*snapshot{}
			r.byVolume[sn.volumeID] = m
		}
		m[sn.id] = sn
	}
	for k, v := range sn.tags {
		r.index(sn, k, v)
	}
}

func (r *region) removeSnapshot(sn *snapshot) {
	delete(r.snaps, sn.id)
	delete(r.deleting, sn.id)
	delete(r.copies, sn.id)
	delete(r.shared, sn.id)
	if i := slices.Index(r.snapOrder, sn); i >= 0 {
		r.snapOrder = slices.Delete(r.snapOrder, i, i+1)
	}
	if m := r.byVolume[sn.volumeID]; m != nil && m[sn.id] == sn {
		delete(m, sn.id)
		if len(m) == 0 {
			delete(r.byVolume, sn.volumeID)
		}
	}
	for k, v := range sn.tags {
		r.unindex(sn, k, v)
	}
}

// setSnapshotTag sets a tag on a snapshot, keeping the tag index current.
func (r *region) setSnapshotTag(sn *snapshot, k, v string) {
	if old, ok := sn.tags[k]; ok {
		r.unindex(sn, k, old)
	}
	sn.tags[k] = v
	sn.xml = nil
	r.index(sn, k, v)
}

// deleteSnapshotTag removes a tag from a snapshot, keeping the tag index current.
func (r *region) deleteSnapshotTag(sn *snapshot, k string) {
	if old, ok := sn.tags[k]; ok {
		r.unindex(sn, k, old)
		delete(sn.tags, k)
		sn.xml = nil
	}
}

func (r *region) index(sn *snapshot, k, v string) {
	byValue := r.tagIndex[k]
	if byValue == nil {
		byValue = map[string]map[string]*snapshot{}
		r.tagIndex[k] = byValue
	}
	ids := byValue[v]
	if ids == nil {
		ids = map[string]*snapshot{}
		byValue[v] = ids
	}
	ids[sn.id] = sn
}

func (r *region) unindex(sn *snapshot, k, v string) {
	byValue := r.tagIndex[k]
	delete(byValue[v], sn.id)
	if len(byValue[v]) == 0 {
		delete(byValue, v)
	}
	if len(byValue) == 0 {
		delete(r.tagIndex, k)
	}
}
