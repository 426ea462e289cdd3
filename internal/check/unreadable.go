package check

import (
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// unreadable is something the check could not read from the Kubernetes API.
type unreadable struct {
	// problem says what and why, as a clause: "the cluster's PersistentVolumes are not
	// readable (…)".
	problem string
	// grant is the permission that would let the check read it; refused, whether the API
	// refused the read for want of it (the check is then incomplete, not just unable).
	grant   string
	refused bool
}

// newUnreadable records that what could not be read (err) and what grant would let it.
func newUnreadable(what, grant string, err error) *unreadable {
	return &unreadable{problem: what + " (" + err.Error() + ")", grant: grant,
		refused: apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)}
}

// finding is the line of a check that needed what was unreadable: incomplete, with the grant
// as its fix, when the API refused the read; else not checked. detail, when set, says what
// the check could still tell.
func (u *unreadable) finding(check, detail string) Finding {
	why := u.problem
	if detail != "" {
		why = detail + "; " + why
	}
	if u.refused {
		return incomplete(check, why, "grant "+u.grant+" to whoever runs the check (README, Before the first backup)")
	}
	return notChecked(check, why)
}

// String is the problem, for details that mention it.
func (u *unreadable) String() string { return u.problem }

// joinUnreadable is the several things unreadable as one; nil when none is.
func joinUnreadable(us ...*unreadable) *unreadable {
	var out *unreadable
	for _, u := range us {
		switch {
		case u == nil:
		case out == nil:
			cp := *u
			out = &cp
		default:
			out.problem += "; " + u.problem
			out.grant = strings.Join(slices.DeleteFunc([]string{out.grant, u.grant}, func(g string) bool { return g == "" }), " and ")
			out.refused = out.refused || u.refused
		}
	}
	return out
}
