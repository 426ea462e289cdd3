package ec2sim

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Snapshot sharing (the createVolumePermission attribute).
const (
	attrCreateVolumePermission = "createVolumePermission"
	attrProductCodes           = "productCodes"
	groupAll                   = "all" // the group that makes a snapshot public
	// maxPermissionModifications is EC2's limit of permissions one ModifySnapshotAttribute changes.
	maxPermissionModifications = 500
)

// volumePermissions reads PREFIX.N.UserId / PREFIX.N.Group (the SDK's CreateVolumePermission
// form) as account IDs and groups, until an N has neither.
func (q *request) volumePermissions(prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		p := prefix + "." + strconv.Itoa(i)
		user, group := q.params[p+".UserId"], q.params[p+".Group"]
		if user == nil && group == nil {
			return out
		}
		out = append(out, append(user, group...)...)
	}
}

// permissionChanges reads the permissions a ModifySnapshotAttribute adds or removes, in either
// of the forms EC2 takes: CreateVolumePermission.Add.N / .Remove.N, or UserId.N and UserGroup.N
// with OperationType.
func (q *request) permissionChanges() (add, remove []string, err *apiError) {
	add = q.volumePermissions("CreateVolumePermission.Add")
	remove = q.volumePermissions("CreateVolumePermission.Remove")
	if listed := append(q.list("UserId"), q.list("UserGroup")...); len(listed) > 0 {
		switch op := q.get("OperationType"); op {
		case "add":
			add = append(add, listed...)
		case "remove":
			remove = append(remove, listed...)
		case "":
			return nil, nil, clientError("MissingParameter", "The request must contain the parameter OperationType")
		default:
			return nil, nil, clientError("InvalidParameterValue", "Value (%s) for parameter operationType is invalid.", op)
		}
	}
	switch {
	case len(add) > 0 && len(remove) > 0:
		return nil, nil, clientError("InvalidParameterCombination",
			"You may add or remove permissions, but not both, in a single operation.")
	case len(add)+len(remove) == 0:
		return nil, nil, clientError("MissingParameter", "The request must contain the parameter createVolumePermission")
	case len(add)+len(remove) > maxPermissionModifications:
		return nil, nil, clientError("InvalidParameterValue",
			"You can make up to %d modifications to a snapshot in a single operation.", maxPermissionModifications)
	}
	for _, p := range append(slices.Clone(add), remove...) {
		if p != groupAll && !validAccountID(p) {
			return nil, nil, clientError("InvalidUserID.Malformed", "Invalid user id: \"%s\"", p)
		}
	}
	return add, remove, nil
}

func (s *Simulator) modifySnapshotAttribute(r *region, q *request) ([]byte, *apiError) {
	id, err := q.require("SnapshotId")
	if err != nil {
		return nil, err
	}
	if a := q.get("Attribute"); a != "" && a != attrCreateVolumePermission {
		return nil, clientError("InvalidParameterValue",
			"Value (%s) for parameter attribute is invalid. Only createVolumePermission can be modified.", a)
	}
	sn, err := r.lookupSnapshot(id)
	if err != nil {
		return nil, err
	}
	add, remove, err := q.permissionChanges()
	if err != nil {
		return nil, err
	}
	for _, p := range add {
		switch {
		case !sn.encrypted || p == sn.owner:
		case p == groupAll:
			return nil, clientError("OperationNotPermitted", "Encrypted snapshots cannot be made public.")
		case isDefaultKmsKey(sn.kmsKeyID):
			return nil, clientError("OperationNotPermitted", "Encrypted snapshots with EBS default key cannot be shared")
		}
	}
	if sn.shares == nil {
		sn.shares = map[string]bool{}
	}
	for _, p := range add {
		sn.shares[p] = true
	}
	for _, p := range remove {
		delete(sn.shares, p)
	}
	if len(sn.shares) > 0 {
		r.shared[sn.id] = sn
	} else {
		delete(r.shared, sn.id)
	}
	return returnTrue(q), nil
}

func (s *Simulator) describeSnapshotAttribute(r *region, q *request) ([]byte, *apiError) {
	attr, err := q.require("Attribute")
	if err != nil {
		return nil, err
	}
	sn, err := r.snapshotOf(q)
	if err != nil {
		return nil, err
	}
	w := newResponse(q.action, q.requestID)
	w.elem("snapshotId", sn.id)
	switch attr {
	case attrCreateVolumePermission:
		w.open(attrCreateVolumePermission)
		for _, p := range sn.sharedWith() {
			w.open("item")
			if p == groupAll {
				w.elem("group", p)
			} else {
				w.elem("userId", p)
			}
			w.close("item")
		}
		w.close(attrCreateVolumePermission)
	case attrProductCodes:
		w.open(attrProductCodes)
		w.close(attrProductCodes)
	default:
		return nil, clientError("InvalidParameterValue", "Value (%s) for parameter attribute is invalid.", attr)
	}
	return w.finish(q.action), nil
}

// sharedWith lists the snapshot's permissions, sorted; nil when it is not shared.
func (sn *snapshot) sharedWith() []string {
	if len(sn.shares) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(sn.shares))
}

// restorableBy reports whether account may use the snapshot: it owns it, or the snapshot is
// shared with it or public.
func (sn *snapshot) restorableBy(account string) bool {
	return sn.owner == account || sn.shares[account] || sn.shares[groupAll]
}

// sharedSnapshot finds the snapshot id of another account than caller in regionName that is
// shared with caller (or public) and visible at now. Callers hold s.mu.
func (s *Simulator) sharedSnapshot(caller, regionName, id string, now time.Time) *snapshot {
	for key, r := range s.regions {
		if key.name != regionName || key.account == caller {
			continue
		}
		r.reap(now)
		if sn := r.shared[id]; sn != nil && sn.restorableBy(caller) && !now.Before(sn.visibleAt) {
			return sn
		}
	}
	return nil
}

// sharedSnapshots lists, by creation, the visible snapshots of other accounts than caller in
// regionName that are shared with caller (or public). Callers hold s.mu.
func (s *Simulator) sharedSnapshots(caller, regionName string, now time.Time) []*snapshot {
	var out []*snapshot
	for key, r := range s.regions {
		if key.name != regionName || key.account == caller {
			continue
		}
		r.reap(now)
		for _, sn := range r.shared {
			if sn.restorableBy(caller) && !now.Before(sn.visibleAt) {
				out = append(out, sn)
			}
		}
	}
	slices.SortFunc(out, func(a, b *snapshot) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// SharedSnapshots returns the snapshots of account ("" means the default account), in every
// region, that are shared with another account or public: by region name, then creation.
func (s *Simulator) SharedSnapshots(account string) []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	account = s.accountOr(account)
	var out []Snapshot
	for _, key := range slices.SortedFunc(maps.Keys(s.regions), func(a, b regionKey) int {
		return cmp.Compare(a.name, b.name)
	}) {
		r := s.regions[key]
		if key.account != account || len(r.shared) == 0 {
			continue
		}
		now := s.regionNow(key.name, s.clock.Now())
		r.reap(now)
		for _, sn := range r.snapOrder {
			if len(sn.shares) > 0 {
				out = append(out, sn.view(r, now))
			}
		}
	}
	return out
}
