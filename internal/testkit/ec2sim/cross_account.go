package ec2sim

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// snapshotScope is what DescribeSnapshots' Owner.N and RestorableBy.N let through for a caller.
// With neither, a caller sees its own snapshots, those shared with it and public ones.
type snapshotScope struct {
	caller             string
	owners, restorable []string
}

func newSnapshotScope(caller string, q *request) snapshotScope {
	return snapshotScope{caller: caller, owners: q.list("Owner"), restorable: q.list("RestorableBy")}
}

// self resolves "self" to the caller.
func (sc snapshotScope) self(v string) string {
	if v == "self" {
		return sc.caller
	}
	return v
}

// reachesOthers reports whether snapshots of other accounts can pass the Owner filter.
func (sc snapshotScope) reachesOthers() bool {
	return len(sc.owners) == 0 || slices.ContainsFunc(sc.owners, func(o string) bool { return sc.self(o) != sc.caller })
}

// admits applies Owner (self or an account ID; "amazon" and others match nothing here) and
// RestorableBy (self: owned by or shared with the caller; all: public; an account ID: shared
// with it).
func (sc snapshotScope) admits(sn *snapshot) bool {
	if len(sc.owners) > 0 && !slices.ContainsFunc(sc.owners, func(o string) bool { return sc.self(o) == sn.owner }) {
		return false
	}
	return len(sc.restorable) == 0 || slices.ContainsFunc(sc.restorable, func(v string) bool {
		v = sc.self(v)
		return v == sc.caller && sn.owner == sc.caller || sn.shares[v]
	})
}

// hasTagFilter reports whether a filter looks at tags, which other accounts' snapshots do not
// show their viewers.
func hasTagFilter(filters []filter) bool {
	return slices.ContainsFunc(filters, func(f filter) bool {
		return strings.HasPrefix(f.name, "tag:") || f.name == "tag-key"
	})
}

// withShared merges other accounts' snapshots into own candidates, in creation order, without
// touching own (which may be a region's own slice).
func withShared(own, shared []*snapshot) []*snapshot {
	if len(shared) == 0 {
		return own
	}
	out := append(slices.Clip(slices.Clone(own)), shared...)
	slices.SortFunc(out, func(a, b *snapshot) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// usableSnapshot finds snapshot id for caller in regionName: its own, or another account's
// shared with it or public; otherwise the error looking it up among its own gives. Callers
// hold s.mu.
func (s *Simulator) usableSnapshot(caller, regionName, id string, now time.Time) (*snapshot, *apiError) {
	own := s.region(caller, regionName)
	own.reap(now)
	sn, err := own.lookupSnapshot(id)
	if err == nil {
		return sn, nil
	}
	if shared := s.sharedSnapshot(caller, regionName, id, now); shared != nil {
		return shared, nil
	}
	return nil, err
}

// visibleSnapshot is usableSnapshot in r, for DescribeSnapshots: a snapshot not visible yet is
// not found.
func (s *Simulator) visibleSnapshot(r *region, id string, now time.Time) (*snapshot, *apiError) {
	sn, err := s.usableSnapshot(r.account, r.name, id, now)
	if err == nil && now.Before(sn.visibleAt) {
		err = clientError("InvalidSnapshot.NotFound", "The snapshot '%s' does not exist.", id)
	}
	return sn, err
}

// copyKeyProblem says why a copy of src into r ends in state "error" for want of KMS
// permissions, or "": copying another account's encrypted snapshot needs its key, and the
// KmsKeyId asked for (destKey, "" for none) must be one the caller may use in r. EC2 copies
// encrypted snapshots asynchronously, so it finds out after accepting the copy.
func (s *Simulator) copyKeyProblem(src *snapshot, srcRegion, destKey string, r *region) string {
	if src.owner != r.account && src.encrypted {
		if p := s.keys.problem(src.kmsKeyID, src.owner, srcRegion, r.account); p != "" {
			return p
		}
	}
	if destKey == "" {
		return ""
	}
	return s.keys.problem(destKey, r.account, r.name, r.account)
}
