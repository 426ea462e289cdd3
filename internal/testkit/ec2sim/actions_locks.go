package ec2sim

import (
	"time"
)

// Snapshot lock modes, states and EC2's limits on them.
const (
	lockModeCompliance = "compliance"
	lockModeGovernance = "governance"
	lockStateCoolOff   = "compliance-cooloff"
	lockStateExpired   = "expired"
	minLockDays        = 1
	maxLockDays        = 36500
	minCoolOffHours    = 1
	maxCoolOffHours    = 72
)

// snapshotLock is a snapshot's lock. Its state follows from the clock.
type snapshotLock struct {
	mode         string
	created      time.Time // lockCreatedOn
	coolOffHours int32     // compliance only; 0 for none
	days         int32     // lockDuration; 0 when expiration is set
	expiration   time.Time // the ExpirationDate asked for; zero when days is set
}

// durationStart is when the lock duration starts: at locking, or, for a snapshot that was
// pending then, when it completes (as EC2 documents).
func (l *snapshotLock) durationStart(sn *snapshot) time.Time {
	if sn.done.After(l.created) {
		return sn.done
	}
	return l.created
}

func (l *snapshotLock) expiresOn(sn *snapshot) time.Time {
	if !l.expiration.IsZero() {
		return l.expiration
	}
	return l.durationStart(sn).AddDate(0, 0, int(l.days))
}

func (l *snapshotLock) coolOffEnd() time.Time {
	return l.created.Add(time.Duration(l.coolOffHours) * time.Hour)
}

func (l *snapshotLock) state(sn *snapshot, now time.Time) string {
	switch {
	case !now.Before(l.expiresOn(sn)):
		return lockStateExpired
	case l.mode == lockModeGovernance:
		return lockModeGovernance
	case now.Before(l.coolOffEnd()):
		return lockStateCoolOff
	}
	return lockModeCompliance
}

// locked reports whether the snapshot's lock keeps it from being deleted at now.
func (sn *snapshot) locked(now time.Time) bool {
	st := lockStateOf(sn, now)
	return st != "" && st != lockStateExpired
}

// errSnapshotLocked is the answer to deleting a snapshot whose lock has not expired.
func errSnapshotLocked(id string) *apiError {
	return clientError("SnapshotLocked", "The snapshot '%s' is locked and can't be deleted until the lock expires.", id)
}

// readLock reads LockSnapshot's LockMode, CoolOffPeriod, LockDuration and ExpirationDate.
func (q *request) readLock() (*snapshotLock, *apiError) {
	l := &snapshotLock{mode: q.get("LockMode"), created: q.now}
	switch l.mode {
	case lockModeCompliance, lockModeGovernance:
	case "":
		return nil, clientError("MissingParameter", "The request must contain the parameter LockMode")
	default:
		return nil, clientError("InvalidParameterValue", "Value (%s) for parameter lockMode is invalid.", l.mode)
	}
	hours, hasCoolOff, err := q.int32("CoolOffPeriod")
	if err != nil {
		return nil, err
	}
	if hasCoolOff {
		if l.mode != lockModeCompliance {
			return nil, clientError("InvalidParameterCombination", "A cooling-off period applies to compliance mode only.")
		}
		if hours < minCoolOffHours || hours > maxCoolOffHours {
			return nil, clientError("InvalidParameterValue",
				"Value (%d) for parameter coolOffPeriod is invalid. It must be between %d and %d hours.", hours, minCoolOffHours, maxCoolOffHours)
		}
		l.coolOffHours = hours
	}
	days, hasDays, err := q.int32("LockDuration")
	if err != nil {
		return nil, err
	}
	date := q.get("ExpirationDate")
	switch {
	case hasDays && date != "":
		return nil, clientError("InvalidParameterCombination", "Specify either LockDuration or ExpirationDate, not both.")
	case hasDays:
		if days < minLockDays || days > maxLockDays {
			return nil, clientError("InvalidParameterValue",
				"Value (%d) for parameter lockDuration is invalid. It must be between %d and %d days.", days, minLockDays, maxLockDays)
		}
		l.days = days
	case date != "":
		t, perr := time.Parse(time.RFC3339Nano, date)
		if perr != nil || !t.After(q.now) || t.After(q.now.AddDate(0, 0, maxLockDays)) {
			return nil, clientError("InvalidParameterValue",
				"Value (%s) for parameter expirationDate is invalid. It must be in the future, within %d days.", date, maxLockDays)
		}
		l.expiration = t
	default:
		return nil, clientError("MissingParameter", "The request must contain the parameter LockDuration or ExpirationDate")
	}
	return l, nil
}

func (s *Simulator) lockSnapshot(r *region, q *request) ([]byte, *apiError) {
	sn, err := r.snapshotOf(q)
	if err != nil {
		return nil, err
	}
	id := sn.id
	l, err := q.readLock()
	if err != nil {
		return nil, err
	}
	if old := sn.lock; old != nil && old.state(sn, q.now) == lockModeCompliance {
		// After the cooling-off period only the duration may grow; the lock stays as it was.
		switch {
		case q.has("CoolOffPeriod"):
			return nil, clientError("InvalidParameterCombination",
				"Snapshot %s is locked in compliance mode after its cooling-off period; omit CoolOffPeriod.", id)
		case l.mode != lockModeCompliance:
			return nil, clientError("InvalidParameterValue",
				"Snapshot %s is locked in compliance mode after its cooling-off period; its lock mode can't change.", id)
		}
		l.created, l.coolOffHours = old.created, old.coolOffHours
		if l.expiresOn(sn).Before(old.expiresOn(sn)) {
			return nil, clientError("InvalidParameterValue",
				"Snapshot %s is locked in compliance mode after its cooling-off period; its lock can be extended only.", id)
		}
	}
	sn.lock = l
	w := newResponse(q.action, q.requestID)
	writeLockFields(w, sn, q.now)
	return w.finish(q.action), nil
}

// writeLockFields writes a locked snapshot's LockSnapshot / LockedSnapshotsInfo elements.
func writeLockFields(w *xmlWriter, sn *snapshot, now time.Time) {
	l := sn.lock
	w.elem("snapshotId", sn.id)
	w.elem("lockState", l.state(sn, now))
	if l.days > 0 {
		w.int("lockDuration", l.days)
	}
	if l.coolOffHours > 0 {
		w.int("coolOffPeriod", l.coolOffHours)
		w.time("coolOffPeriodExpiresOn", l.coolOffEnd())
	}
	w.time("lockCreatedOn", l.created)
	w.time("lockDurationStartTime", l.durationStart(sn))
	w.time("lockExpiresOn", l.expiresOn(sn))
}

func (s *Simulator) unlockSnapshot(r *region, q *request) ([]byte, *apiError) {
	sn, err := r.snapshotOf(q)
	if err != nil {
		return nil, err
	}
	id := sn.id
	switch st := lockStateOf(sn, q.now); st {
	case lockModeGovernance, lockStateCoolOff:
		sn.lock = nil
	case lockModeCompliance:
		return nil, clientError("IncorrectState",
			"Snapshot %s is locked in compliance mode and its cooling-off period has expired; it can't be unlocked.", id)
	default:
		return nil, clientError("IncorrectState", "Snapshot %s is not locked.", id)
	}
	w := newResponse(q.action, q.requestID)
	w.elem("snapshotId", id)
	return w.finish(q.action), nil
}

// lockStateOf is the state of the snapshot's lock at now; "" when it has none.
func lockStateOf(sn *snapshot, now time.Time) string {
	if sn.lock == nil {
		return ""
	}
	return sn.lock.state(sn, now)
}

func (s *Simulator) describeLockedSnapshots(r *region, q *request) ([]byte, *apiError) {
	size, start, err := page(q, 1000, "SnapshotId")
	if err != nil {
		return nil, err
	}
	filters := q.filters()
	for _, f := range filters {
		if f.name != "lock-state" {
			return nil, invalidFilter(f.name)
		}
	}
	candidates := r.snapOrder
	if ids := q.list("SnapshotId"); len(ids) > 0 {
		candidates = nil
		for _, id := range ids {
			sn, err := r.lookupSnapshot(id)
			if err != nil {
				return nil, err
			}
			candidates = append(candidates, sn)
		}
	}
	w := newResponse(q.action, q.requestID)
	w.open("snapshotSet")
	n := 0
	seen := map[string]bool{}
	for _, sn := range candidates {
		if sn.lock == nil || sn.seq < start || seen[sn.id] || !lockStateMatches(filters, sn.lock.state(sn, q.now)) {
			continue
		}
		if size > 0 && n == size {
			w.close("snapshotSet")
			w.elem("nextToken", nextToken(sn.seq))
			return w.finish(q.action), nil
		}
		seen[sn.id] = true
		n++
		w.open("item")
		w.elem("ownerId", sn.owner)
		writeLockFields(w, sn, q.now)
		w.close("item")
	}
	w.close("snapshotSet")
	return w.finish(q.action), nil
}

// lockStateMatches applies DescribeLockedSnapshots' lock-state filters.
func lockStateMatches(filters []filter, state string) bool {
	for _, f := range filters {
		if !anyMatch(f.values, state) {
			return false
		}
	}
	return true
}
