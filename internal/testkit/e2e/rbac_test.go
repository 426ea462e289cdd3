//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
)

// operatorUser is the person who runs audit and drill off the pod, granted only the README's
// Roles (a token of the API server's token file, in no group).
const operatorUser = "e2e-operator"

// The README's Roles for audit and drill (internal/location/README.md), and the ClusterRole for
// the install identity they share with the plugin.
const (
	auditRole   = "velero-async-aws-audit"
	drillRole   = "velero-async-aws-drill"
	installRole = "velero-async-aws"
	// rbacSchedule labels the drilled backup as a Schedule's, for drill --schedule.
	rbacSchedule = "e2e-rbac"
	// rbacSettle bounds the wait until the API server's authorizer sees a changed Role.
	rbacSettle = 30 * time.Second
	// rbacPoll is the interval of that wait's access reviews.
	rbacPoll = 200 * time.Millisecond
)

// grant is one permission of a Role: a verb on a resource of an API group, in Velero's namespace
// or, for a ClusterRole's, the cluster; names are its resourceNames.
type grant struct {
	group, resource, verb string
	names                 []string
	cluster               bool
}

func (g grant) String() string {
	s := g.verb + " " + g.resource
	if g.group != "" {
		s += "." + g.group
	}
	if len(g.names) > 0 {
		s += " " + strings.Join(g.names, ",")
	}
	return s
}

// refusal is how the API server names the missing grant in its Forbidden answer.
func (g grant) refusal() string {
	return fmt.Sprintf("cannot %s resource %q", g.verb, g.resource)
}

// yamlFence matches a fenced YAML block of a Markdown document.
var yamlFence = regexp.MustCompile("(?s)```yaml\n(.*?)\n```")

// readmeGrants returns the permissions of the Role role and the ClusterRole installRole of
// internal/location/README.md, one per verb, resource and group.
func (r *rig) readmeGrants(role string) []grant {
	r.t.Helper()
	src, err := os.ReadFile(filepath.Join(r.repoRoot, "internal", "location", "README.md"))
	if err != nil {
		r.t.Fatal(err)
	}
	var out []grant
	for _, m := range yamlFence.FindAllStringSubmatch(string(src), -1) {
		for _, doc := range strings.Split(m[1], "\n---\n") {
			var cr rbacv1.ClusterRole // a Role's rules read alike
			if yaml.Unmarshal([]byte(doc), &cr) != nil || !(cr.Kind == "Role" && cr.Name == role || cr.Kind == "ClusterRole" && cr.Name == installRole) {
				continue
			}
			for _, rule := range cr.Rules {
				for _, g := range rule.APIGroups {
					for _, res := range rule.Resources {
						for _, v := range rule.Verbs {
							out = append(out, grant{group: g, resource: res, verb: v, names: rule.ResourceNames, cluster: cr.Kind == "ClusterRole"})
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		r.t.Fatalf("internal/location/README.md has no Role %s", role)
	}
	return out
}

// bindOperator gives operatorUser exactly grants: a Role in Velero's namespace and a ClusterRole,
// each bound to the user, replacing what an earlier call bound; it returns once the API server
// allows grants and refuses denied.
func (r *rig) bindOperator(grants, denied []grant) {
	r.t.Helper()
	ctx := context.Background()
	var ns, cl []rbacv1.PolicyRule
	for _, g := range grants {
		rule := rbacv1.PolicyRule{APIGroups: []string{g.group}, Resources: []string{g.resource}, Verbs: []string{g.verb}, ResourceNames: g.names}
		if g.cluster {
			cl = append(cl, rule)
		} else {
			ns = append(ns, rule)
		}
	}
	name := "e2e-" + operatorUser
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: operatorUser}}
	objs := []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNS, Name: name}, Rules: ns},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNS, Name: name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: cl},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}},
	}
	for _, o := range objs {
		if err := r.c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			r.t.Fatal(err)
		}
		o.SetResourceVersion("")
		must(r.t, r.c.Create(ctx, o))
	}
	// The authorizer reads Roles from its informers: wait until it answers as bound.
	for _, g := range grants {
		r.waitAccess(g, true)
	}
	for _, g := range denied {
		r.waitAccess(g, false)
	}
}

// waitAccess waits until the API server answers whether operatorUser may g as allowed says, as
// a SubjectAccessReview tells.
func (r *rig) waitAccess(g grant, allowed bool) {
	r.t.Helper()
	attrs := &authorizationv1.ResourceAttributes{Group: g.group, Resource: g.resource, Verb: g.verb}
	if !g.cluster {
		attrs.Namespace = veleroNS
	}
	if len(g.names) > 0 {
		attrs.Name = g.names[0]
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: operatorUser, ResourceAttributes: attrs}}
	for deadline := time.Now().Add(rbacSettle); ; time.Sleep(rbacPoll) {
		got, err := r.cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		if err == nil && got.Status.Allowed == allowed {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: allowed to %s is not %v after %s (%v)", operatorUser, g, allowed, rbacSettle, err)
		}
	}
}

// The README's Roles for audit and drill run off the pod are exactly what they use, in the real
// kube-apiserver: bound to a user with nothing else, audit and drill run as they do with the
// admin's kubeconfig; with any one permission taken away, they fail and name it.
func (r *rig) readmeRolesForAuditAndDrill(backup string) {
	ctx := context.Background()
	var b velerov1.Backup
	must(r.t, r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: backup}, &b))
	labelled := b.DeepCopy()
	metav1.SetMetaDataLabel(&labelled.ObjectMeta, velerov1.ScheduleNameLabel, rbacSchedule)
	must(r.t, r.c.Patch(ctx, labelled, client.MergeFrom(&b)))
	defer func() {
		var now velerov1.Backup
		must(r.t, r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: backup}, &now))
		unlabelled := now.DeepCopy()
		delete(unlabelled.Labels, velerov1.ScheduleNameLabel)
		must(r.t, r.c.Patch(ctx, unlabelled, client.MergeFrom(&now)))
	}()

	auditRun := func() (bool, string) {
		out, errOut, code := r.runSubcommandAs(r.operatorKubeconfig, audit.Command, "--location", vslName, "--output", "json")
		var rep audit.Report
		ok := json.Unmarshal([]byte(out), &rep) == nil && code != audit.ExitError && len(rep.Problems) == 0 && rep.Install != ""
		return ok, strings.Join(append(rep.Problems, errOut), "\n") // the problems unquoted, as the text report shows them
	}
	drillRuns := [][]string{
		{"--schedule", rbacSchedule, "--max-volumes", "1", "--record", "--confirm"},
		{"--backup", backup, "--max-volumes", "1", "--record", "--confirm"},
	}
	drillRun := func() (bool, string) {
		var all string
		for _, args := range drillRuns {
			out, errOut, code := r.runSubcommandAs(r.operatorKubeconfig, drill.Command, args...)
			all += out + errOut
			if code != drill.ExitPassed {
				return false, all
			}
		}
		return true, all
	}
	for _, tool := range []struct {
		name, role string
		run        func() (bool, string)
	}{{audit.Command, auditRole, auditRun}, {drill.Command, drillRole, drillRun}} {
		grants := r.readmeGrants(tool.role)
		r.step("%s as %s, granted only the README's Role %s and ClusterRole %s: %v", tool.name, operatorUser, tool.role, installRole, grants)
		r.bindOperator(grants, nil)
		if ok, out := tool.run(); !ok {
			r.t.Errorf("%s fails with the README's Role %s:\n%s", tool.name, tool.role, indent(out))
		}
		for i, g := range grants {
			less := append(append([]grant{}, grants[:i]...), grants[i+1:]...)
			r.bindOperator(less, []grant{g})
			ok, out := tool.run()
			r.saw("%s without %s: ok %v", tool.name, g, ok)
			switch {
			case ok:
				r.t.Errorf("%s runs without %s: the README's Role %s grants more than it uses", tool.name, g, tool.role)
			case !strings.Contains(out, g.refusal()):
				r.t.Errorf("%s without %s fails without naming it (%q):\n%s", tool.name, g, g.refusal(), indent(out))
			}
		}
	}
	r.bindOperator(nil, nil)
}
