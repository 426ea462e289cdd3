package kubeapi

import (
	"errors"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Verbs of the requests the server answers.
const (
	VerbGet  = "get"
	VerbList = "list"
)

// Rule grants verbs on resources of one API group, as an RBAC PolicyRule does ("" is the core
// group); with Names (its resourceNames), only on the objects of those names, never a list.
type Rule struct {
	Group     string
	Resources []string
	Verbs     []string
	Names     []string
}

// Access is one kind of request: a verb on a resource of an API group.
type Access struct{ Group, Resource, Verb string }

// Restrict makes the server refuse, with 403 Forbidden as an API server applying RBAC does, every
// request for an object or a list that no rule grants. Discovery stays open, as it is for any
// authenticated user. Without a call to Restrict every request is granted.
func (s *Server) Restrict(rules ...Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append([]Rule{}, rules...)
	s.restricted = true
}

// granted reports whether the rules grant a on the object name ("" for a list).
func (s *Server) granted(a Access, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.restricted {
		return true
	}
	for _, r := range s.rules {
		if r.Group == a.Group && slices.Contains(r.Resources, a.Resource) && slices.Contains(r.Verbs, a.Verb) &&
			(len(r.Names) == 0 || slices.Contains(r.Names, name)) {
			return true
		}
	}
	return false
}

// forbidden is the answer to a request the rules do not grant.
func forbidden(r Resource, verb, name string) (int, any) {
	return failure(apierrors.NewForbidden(groupResource(r), name, errors.New("RBAC: no rule grants "+verb)))
}

// Accesses returns what each request answered so far asked for, in order; discovery requests
// ask for none and are left out.
func (s *Server) Accesses() []AccessRequest {
	var out []AccessRequest
	for _, q := range s.Requests() {
		if q.Access != (Access{}) {
			out = append(out, AccessRequest{Access: q.Access, UserAgent: q.UserAgent, Code: q.Code})
		}
	}
	return out
}

// AccessRequest is one answered request for an object or a list.
type AccessRequest struct {
	Access
	UserAgent string
	Code      int
}
