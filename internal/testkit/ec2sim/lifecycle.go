package ec2sim

import (
	"strconv"
	"time"
)

// snapshot is a snapshot or copy. Its state is not stored: it follows from the clock, the start
// time and the drawn completion time.
type snapshot struct {
	id, owner, volumeID, description string
	seq                              uint64
	start, done, visibleAt           time.Time
	sizeGiB                          int32
	encrypted                        bool
	kmsKeyID                         string
	tags                             map[string]string
	sourceID, sourceRegion           string
	failMessage                      string // non-empty: ends in "error" with this statusMessage
	deletePending                    bool
	completionMinutes                int32
	xml                              []byte          // cached unchanging XML elements; nil after a tag change
	tagsAt                           int             // where the tag set starts in xml
	shares                           map[string]bool // createVolumePermission: account IDs and "all"
	lock                             *snapshotLock   // nil: never locked, or unlocked
}

// volume is a volume; like a snapshot its state follows from the clock.
type volume struct {
	id, az, typ, snapshotID, kmsKeyID string
	outpostArn                        string // "" for a volume in the region
	seq                               uint64
	sizeGiB, iops, throughput         int32
	encrypted                         bool
	tags                              map[string]string
	created, ready, visibleAt         time.Time
	// clientToken and request are CreateVolume's ClientToken and the request it came with.
	clientToken, request string
	// initRate is the provisioned initialization rate in MiB/s; 0: EBS's default rate.
	initRate int32
}

// Snapshot and volume states.
const (
	statePending   = "pending"
	stateCompleted = "completed"
	stateError     = "error"
	stateCreating  = "creating"
	stateAvailable = "available"
)

func (sn *snapshot) isCopy() bool { return sn.sourceID != "" }

func (sn *snapshot) state(now time.Time) string {
	switch {
	case now.Before(sn.done):
		return statePending
	case sn.failMessage != "":
		return stateError
	default:
		return stateCompleted
	}
}

// writtenDivisor divides a volume's size into the bytes the simulator counts as written: a
// snapshot's full size (EC2's FullSnapshotSizeInBytes) is half its volume's size.
const writtenDivisor = 2

// fullSizeBytes is the snapshot's full size: the bytes of its volume's written blocks, half the
// volume (EC2 gives it once the snapshot is completed).
func (sn *snapshot) fullSizeBytes() int64 { return int64(sn.sizeGiB) << 30 / writtenDivisor }

// progress advances linearly from "0%" at start to "100%" at completion.
func (sn *snapshot) progress(now time.Time) string {
	switch sn.state(now) {
	case stateCompleted:
		return "100%"
	case stateError:
		return "0%"
	}
	total := sn.done.Sub(sn.start)
	pct := 0
	if total > 0 {
		pct = int(now.Sub(sn.start) * 100 / total)
	}
	return strconv.Itoa(min(max(pct, 0), 99)) + "%"
}

func (sn *snapshot) statusMessage(now time.Time) string {
	if sn.state(now) == stateError {
		return sn.failMessage
	}
	return ""
}

func (sn *snapshot) view(r *region, now time.Time) Snapshot {
	out := Snapshot{
		ID: sn.id, Account: r.account, Region: r.name, VolumeID: sn.volumeID,
		State: sn.state(now), Progress: sn.progress(now), StatusMessage: sn.statusMessage(now),
		Description: sn.description, StartTime: sn.start, SizeGiB: sn.sizeGiB,
		Encrypted: sn.encrypted, KmsKeyID: sn.kmsKeyID, Tags: copyTags(sn.tags),
		SourceSnapshotID: sn.sourceID, SourceRegion: sn.sourceRegion, DeletePending: sn.deletePending,
		SharedWith: sn.sharedWith(),
	}
	if l := sn.lock; l != nil {
		out.LockMode, out.LockState, out.LockExpiresOn = l.mode, l.state(sn, now), l.expiresOn(sn)
	}
	return out
}

func (v *volume) state(now time.Time) string {
	if now.Before(v.ready) {
		return stateCreating
	}
	return stateAvailable
}

func (v *volume) view(r *region, now time.Time) Volume {
	return Volume{
		ID: v.id, Account: r.account, Region: r.name, AvailabilityZone: v.az, State: v.state(now), Type: v.typ,
		SnapshotID: v.snapshotID, SizeGiB: v.sizeGiB, IOPS: v.iops, Throughput: v.throughput,
		Encrypted: v.encrypted, KmsKeyID: v.kmsKeyID, Tags: copyTags(v.tags), OutpostArn: v.outpostArn,
	}
}

// draw picks a duration from r. Callers hold s.mu.
func (s *Simulator) draw(r DurationRange) time.Duration {
	lo, hi := r.Min.Duration, r.Max.Duration
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// chance reports true with probability p. Callers hold s.mu.
func (s *Simulator) chance(p float64) bool { return p > 0 && s.rng.Float64() < p }

// reap removes delete-pending snapshots whose completion time has passed and forgets copies that
// are no longer pending.
func (r *region) reap(now time.Time) {
	for id, sn := range r.deleting {
		if !now.Before(sn.done) {
			delete(r.deleting, id)
			r.removeSnapshot(sn)
		}
	}
	for id, sn := range r.copies {
		if !now.Before(sn.done) {
			delete(r.copies, id)
		}
	}
}

// pendingCopies is the number of copies in flight into r. Callers reap first.
func (r *region) pendingCopies() int { return len(r.copies) }

// activeOf is the number of snapshots of a volume that count against its concurrent snapshot
// limit: pending ones, including those deleted while pending, and, as AWS documents, those in
// state "error" until they are deleted.
func (r *region) activeOf(volumeID string, now time.Time) int {
	n := 0
	for _, sn := range r.byVolume[volumeID] {
		if sn.state(now) != stateCompleted {
			n++
		}
	}
	return n
}

// reportedVolumeID is the volume ID EC2 shows: the origin volume, or vol-ffffffff for a copy.
func (sn *snapshot) reportedVolumeID() string {
	if sn.isCopy() {
		return copyVolumeID
	}
	return sn.volumeID
}
