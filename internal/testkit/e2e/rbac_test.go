//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/readme"
)

// operatorUser is the person who runs audit and drill off the pod, granted only the README's
// Roles (a token of the API server's token file, in no group).
const operatorUser = "e2e-operator"

// The README's Roles (internal/location/README.md) for the item actions, the check, audit and
// drill, and its ClusterRoles.
const (
	auditRole = "velero-async-aws-audit"
	drillRole = "velero-async-aws-drill"
	// checkRole names the check's Role and its ClusterRole.
	checkRole = "velero-async-aws-check"
	// installRole names the item actions' Role and the ClusterRole for the install identity,
	// which the plugin, audit and drill read it with.
	installRole = "velero-async-aws"
	// installCheck is the check's line on the install identity.
	installCheck = "install identity"
	// rbacSchedule labels the drilled backup as a Schedule's, for drill --schedule.
	rbacSchedule = "e2e-rbac"
	// rbacSettle bounds the wait until the API server's authorizer sees a changed Role.
	rbacSettle = 30 * time.Second
	// rbacPoll is the interval of that wait's access reviews.
	rbacPoll = 200 * time.Millisecond
)

// The READMEs that give the Roles and the CronJobs.
var (
	locationREADME = filepath.Join("internal", "location", "README.md")
	auditREADME    = filepath.Join("internal", "audit", "README.md")
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

// readmeFile is the text of one of the repository's READMEs.
func (r *rig) readmeFile(doc string) string {
	r.t.Helper()
	src, err := os.ReadFile(filepath.Join(r.repoRoot, doc))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(src)
}

// readmeManifests returns the YAML documents of a README's YAML blocks, as written.
func (r *rig) readmeManifests(doc string) []string {
	r.t.Helper()
	var out []string
	for _, m := range yamlFence.FindAllStringSubmatch(r.readmeFile(doc), -1) {
		out = append(out, strings.Split(m[1], "\n---\n")...)
	}
	return out
}

// readmeGrants returns the permissions of the Role role and the ClusterRole clusterRole of
// internal/location/README.md, one per verb, resource and group.
func (r *rig) readmeGrants(role, clusterRole string) []grant {
	r.t.Helper()
	var out []grant
	for _, doc := range r.readmeManifests(locationREADME) {
		var cr rbacv1.ClusterRole // a Role's rules read alike
		if yaml.Unmarshal([]byte(doc), &cr) != nil || !(cr.Kind == "Role" && cr.Name == role || cr.Kind == "ClusterRole" && cr.Name == clusterRole) {
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
	if len(out) == 0 {
		r.t.Fatalf("%s has no Role %s", locationREADME, role)
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

// refusedTo is how the API server's Forbidden answers to user begin naming what it may not do.
func refusedTo(user string) string { return fmt.Sprintf("User %q cannot", user) }

// exactlySufficient runs command (run says whether it did its job, and its output) as
// operatorUser granted only the README's Role role and ClusterRole clusterRole, then once per
// permission with that one taken away: it must run with them all, and without any one fail
// with the API server's refusal of it.
func (r *rig) exactlySufficient(command, role, clusterRole string, run func() (bool, string)) {
	grants := r.readmeGrants(role, clusterRole)
	r.step("%s as %s, granted only the README's Role %s and ClusterRole %s: %v", command, operatorUser, role, clusterRole, grants)
	r.bindOperator(grants, nil)
	if ok, out := run(); !ok {
		r.t.Errorf("%s fails with the README's Role %s and ClusterRole %s:\n%s", command, role, clusterRole, indent(out))
	}
	for i, g := range grants {
		less := append(append([]grant{}, grants[:i]...), grants[i+1:]...)
		r.bindOperator(less, []grant{g})
		ok, out := run()
		r.saw("%s without %s: ok %v", command, g, ok)
		switch {
		case ok:
			r.t.Errorf("%s runs without %s: the README's Role %s and ClusterRole %s grant more than it uses", command, g, role, clusterRole)
		case !strings.Contains(out, g.refusal()):
			r.t.Errorf("%s without %s fails without naming it (%q):\n%s", command, g, g.refusal(), indent(out))
		}
	}
	r.bindOperator(nil, nil)
}

// labelSchedule labels backup as a backup of Schedule schedule, and returns what takes the
// label away again.
func (r *rig) labelSchedule(backup, schedule string) func() {
	ctx := context.Background()
	var b velerov1.Backup
	must(r.t, r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: backup}, &b))
	labelled := b.DeepCopy()
	metav1.SetMetaDataLabel(&labelled.ObjectMeta, velerov1.ScheduleNameLabel, schedule)
	must(r.t, r.c.Patch(ctx, labelled, client.MergeFrom(&b)))
	return func() {
		var now velerov1.Backup
		must(r.t, r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: backup}, &now))
		unlabelled := now.DeepCopy()
		delete(unlabelled.Labels, velerov1.ScheduleNameLabel)
		must(r.t, r.c.Patch(ctx, unlabelled, client.MergeFrom(&now)))
	}
}

// The README's Roles for audit and drill run off the pod are exactly what they use, in the real
// kube-apiserver: bound to a user with nothing else, audit and drill run as they do with the
// admin's kubeconfig; with any one permission taken away, they fail and name it.
func (r *rig) readmeRolesForAuditAndDrill(backup string) {
	defer r.labelSchedule(backup, rbacSchedule)()
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
	r.exactlySufficient(audit.Command, auditRole, installRole, auditRun)
	r.exactlySufficient(drill.Command, drillRole, installRole, drillRun)
}

// readmeRolesForCheck: the README's Role and ClusterRole for the check run off the pod are
// exactly what it reads, in the real kube-apiserver, for the rig's first location and its vault
// location (whose checks also read the Backups and Schedules): granted them alone, check exits
// 0 refused nothing; without any one, it fails or warns with the API server's refusal of it.
func (r *rig) readmeRolesForCheck() {
	r.exactlySufficient(check.Command, checkRole, checkRole, func() (bool, string) {
		ok, all := true, ""
		for _, l := range []string{vslName, vslNameVault} {
			_, code, text := r.checkAs(r.operatorKubeconfig, l)
			ok = ok && code == check.ExitOK && !strings.Contains(text, refusedTo(operatorUser))
			all += "check --location " + l + ":\n" + text + "\n"
		}
		return ok, all
	})
}

// readmeRolesForPluginAndCronJobs proves, in the real kube-apiserver, the plugin's ClusterRole
// what its install identity read needs, and the audit's and the drill's CronJobs running as
// their service account with the READMEs' bindings.
func (r *rig) readmeRolesForPluginAndCronJobs(backup string) {
	r.readmeClusterRoleForThePlugin()
	r.readmeCronJobs(backup)
}

// checkAs runs check --location loc --output json with kubeconfig, and returns its report, its
// exit status, and its lines other than passed ones with its standard error, as text.
func (r *rig) checkAs(kubeconfig, loc string) (check.Report, int, string) {
	out, errOut, code := r.runSubcommandAs(kubeconfig, check.Command, "--location", loc, "--output", "json")
	var rep check.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return rep, code, out + errOut
	}
	var lines []string
	for _, s := range rep.Sections {
		for _, f := range s.Findings {
			if f.Status != check.Pass {
				lines = append(lines, fmt.Sprintf("%s %s: %s (fix: %s)", f.Status, f.Check, f.Detail, f.Fix))
			}
		}
	}
	return rep, code, strings.Join(append(lines, errOut), "\n")
}

// findingOf is the report's line of check c.
func findingOf(rep check.Report, c string) (check.Finding, bool) {
	for _, s := range rep.Sections {
		for _, f := range s.Findings {
			if f.Check == c {
				return f, true
			}
		}
	}
	return check.Finding{}, false
}

// readmeClusterRoleForThePlugin: the plugin reads the install identity (namespace kube-system's
// UID) with the identity Velero runs as. Granted only the README's Role and ClusterRole
// velero-async-aws, operatorUser reads it as the plugin does (location.NewClient and
// location.ReadInstall, with operatorUser's kubeconfig), and check's line on it passes; with the
// Role alone, the read is refused, and check warns naming the ClusterRole to bind.
func (r *rig) readmeClusterRoleForThePlugin() {
	ctx := context.Background()
	var ks corev1.Namespace
	must(r.t, r.c.Get(ctx, client.ObjectKey{Name: "kube-system"}, &ks))
	want := location.InstallIdentity(string(ks.UID), veleroNS)
	kube, err := location.NewClient(r.operatorKubeconfig, pluginBin+"-e2e")
	must(r.t, err)
	grants := r.readmeGrants(installRole, installRole)
	var namespaced, cluster []grant
	for _, g := range grants {
		if g.cluster {
			cluster = append(cluster, g)
		} else {
			namespaced = append(namespaced, g)
		}
	}
	if len(cluster) == 0 {
		r.t.Fatalf("%s has no ClusterRole %s", locationREADME, installRole)
	}
	installLine := func() check.Finding {
		rep, _, text := r.checkAs(r.operatorKubeconfig, vslName)
		f, ok := findingOf(rep, installCheck)
		if !ok {
			r.t.Errorf("check prints no line %q:\n%s", installCheck, indent(text))
		}
		r.saw("check: %s %s: %s (fix: %s)", f.Status, f.Check, f.Detail, f.Fix)
		return f
	}

	r.step("the plugin's install identity read as %s, granted only the README's Role and ClusterRole %s: %v", operatorUser, installRole, grants)
	r.bindOperator(grants, nil)
	got, err := location.ReadInstall(ctx, kube, veleroNS)
	r.saw("install identity %q (%v); namespace kube-system's UID makes %q", got, err, want)
	if err != nil || got != want {
		r.t.Errorf("with the README's ClusterRole %s the install identity reads %q (%v), want %q", installRole, got, err, want)
	}
	if f := installLine(); f.Status != check.Pass || !strings.Contains(f.Detail, want) {
		r.t.Errorf("check's %s line is %s %q, want passed naming %s", installCheck, f.Status, f.Detail, want)
	}

	r.step("the same without the ClusterRole %s: %v", installRole, cluster)
	r.bindOperator(namespaced, cluster)
	got, err = location.ReadInstall(ctx, kube, veleroNS)
	r.saw("install identity %q (%v)", got, err)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), cluster[0].refusal()) {
		r.t.Errorf("without the ClusterRole %s the install identity reads %q (%v), want the API server's refusal (%q)", installRole, got, err, cluster[0].refusal())
	}
	if f := installLine(); f.Status != check.Warn || !strings.Contains(f.Detail, cluster[0].refusal()) || !strings.Contains(f.Fix, "ClusterRole "+installRole+" ") {
		r.t.Errorf("check's %s line is %s %q (fix %q), want a warning naming the refusal and the ClusterRole %s", installCheck, f.Status, f.Detail, f.Fix, installRole)
	}
	r.bindOperator(nil, nil)
}

// applyServerSide applies manifest with the rig's kubectl, server-side (the API server
// validates every field strictly); name names its file in the work dir.
func (r *rig) applyServerSide(name, manifest string) {
	r.t.Helper()
	file := filepath.Join(r.dir, name+".yaml")
	writeFile(r.t, file, []byte(manifest))
	out, err := r.run(r.cliEnv(), filepath.Join(r.binDir, "kubectl"), "apply", "--server-side", "-f", file)
	r.saw("kubectl apply --server-side -f %s: %s", name+".yaml", strings.TrimSpace(out))
	if err != nil {
		r.t.Fatalf("kubectl apply --server-side of %s: %v\n%s", name, err, out)
	}
}

// readmeBindings are the READMEs' kubectl commands that bind their Roles and ClusterRoles.
func (r *rig) readmeBindings() []string {
	r.t.Helper()
	var out []string
	for _, doc := range []string{locationREADME, auditREADME} {
		cmds, err := readme.Commands(r.readmeFile(doc), "kubectl")
		if err != nil {
			r.t.Fatal(err)
		}
		for _, c := range cmds {
			if strings.Contains(c, " create rolebinding ") || strings.Contains(c, " create clusterrolebinding ") {
				out = append(out, c)
			}
		}
	}
	return out
}

// serviceAccountKubeconfig gets a token of service account ns/name (TokenRequest, kubectl
// create token) and writes a kubeconfig holding it, as a pod of that account has.
func (r *rig) serviceAccountKubeconfig(ns, name string) string {
	r.t.Helper()
	token, err := r.run(r.cliEnv(), filepath.Join(r.binDir, "kubectl"), "-n", ns, "create", "token", name)
	if err != nil {
		r.t.Fatalf("kubectl create token %s: %v\n%s", name, err, token)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: r.restConfig.Host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: strings.TrimSpace(token)}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name}
	cfg.CurrentContext = "e2e"
	file := filepath.Join(r.cluster.dir, "kubeconfig-sa-"+name)
	must(r.t, clientcmd.WriteToFile(*cfg, file))
	return file
}

// runCronJob runs the container of cj's pod as its Job would, with kubeconfig standing for its
// service account's mounted token: the plugin binary (the command's /plugins/… is the plugin
// directory), its arguments and environment. It returns the output and the exit status.
func (r *rig) runCronJob(cj *batchv1.CronJob, kubeconfig string) (string, int) {
	r.t.Helper()
	ctr := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	argv := append(append([]string{}, ctr.Command...), ctr.Args...)
	if len(argv) < 2 || filepath.Base(argv[0]) != pluginBin {
		r.t.Fatalf("CronJob %s runs %q, not the plugin binary %s with a subcommand", cj.Name, argv, pluginBin)
	}
	env := append([]string{}, r.serverEnv...)
	for _, e := range ctr.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	env = append(env, "KUBECONFIG="+kubeconfig) // the last value of a variable wins
	out, errOut, code := r.runPlugin(env, argv[1], argv[2:]...)
	r.saw("CronJob %s: %s: exit status %d\n%s", cj.Name, strings.Join(argv, " "), code, indent(out))
	return out + errOut, code
}

// readmeCronJobs applies the audit README's CronJob and the drill's (from its sentence), with
// internal/location/README.md's Roles, server-side to the real kube-apiserver, then runs each
// CronJob's command as its service account would (there is no kubelet): refused before the
// READMEs' bindings, succeeding (exit status 0, the Job's success) after them. Velero's own
// permissions are not bound: the READMEs' are enough. The rig's location with wrong credentials
// is set aside meanwhile: an audit of every location rightly fails on it.
func (r *rig) readmeCronJobs(backup string) {
	ctx := context.Background()
	auditYAML, auditJob, drillJob, err := readme.CronJobs(r.readmeFile(auditREADME))
	if err != nil {
		r.t.Fatalf("%s: %v", auditREADME, err)
	}
	drillYAML, err := yaml.Marshal(drillJob)
	must(r.t, err)

	r.step("the README's Roles and ClusterRoles, CronJob %s and CronJob %s (%q), applied server-side", auditJob.Name, drillJob.Name, drillJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Command)
	r.applyServerSide("readme-roles", strings.Join(r.readmeManifests(locationREADME), "\n---\n"))
	r.applyServerSide(auditJob.Name, auditYAML)
	r.applyServerSide(drillJob.Name, string(drillYAML))
	defer func() {
		for _, cj := range []*batchv1.CronJob{auditJob, drillJob} {
			must(r.t, r.c.Delete(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: cj.Namespace, Name: cj.Name}}))
		}
	}()

	ns, sa := auditJob.Namespace, auditJob.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName
	// velero install makes Velero's service account; the rig installs only the CRDs.
	if err := r.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}); err != nil && !apierrors.IsAlreadyExists(err) {
		r.t.Fatal(err)
	}
	var bad velerov1.VolumeSnapshotLocation
	must(r.t, r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: vslNameBad}, &bad))
	must(r.t, r.c.Delete(ctx, &bad))
	defer func() {
		must(r.t, r.c.Create(ctx, &velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: bad.Namespace, Name: bad.Name, Labels: bad.Labels}, Spec: bad.Spec}))
	}()
	kubeconfig := r.serviceAccountKubeconfig(ns, sa)
	user := "system:serviceaccount:" + ns + ":" + sa // as the API server names it

	r.step("CronJob %s's command as %s, before the README's bindings", auditJob.Name, user)
	if out, code := r.runCronJob(auditJob, kubeconfig); code == 0 || !strings.Contains(out, refusedTo(user)) {
		r.t.Errorf("CronJob %s runs as %s with nothing bound (exit status %d), or fails without the API server's refusal:\n%s", auditJob.Name, user, code, indent(out))
	}
	r.step("the READMEs' bindings, as written (rig's kubectl), then the CronJobs' commands as %s", user)
	for _, line := range r.readmeBindings() {
		r.saw("%s: %s", line, strings.TrimSpace(r.shell(line)))
	}
	if i := slices.Index(drillJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Command, "--schedule"); i >= 0 {
		defer r.labelSchedule(backup, drillJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Command[i+1])()
	}
	for _, cj := range []*batchv1.CronJob{auditJob, drillJob} {
		if out, code := r.runCronJob(cj, kubeconfig); code != 0 {
			r.t.Errorf("CronJob %s as %s with the READMEs' bindings: exit status %d, its Job fails:\n%s", cj.Name, user, code, indent(out))
		}
	}
}
