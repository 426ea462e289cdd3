package integration

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1api "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	pluginlocation "github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/kubeapi"
)

// yamlBlock matches a fenced YAML block of a Markdown document.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)\n```")

// The names of the README's Roles: the item actions' Role, and the check's Role and ClusterRole.
const (
	itemActionsRole = "velero-async-aws"
	checkRole       = "velero-async-aws-check"
)

// readmeRole returns the rules of the README's Role for the item actions.
func readmeRole(t *testing.T) []kubeapi.Rule {
	t.Helper()
	return readmeRules(t, itemActionsRole)
}

// rbacDocs are the READMEs that give the Roles: the top-level one, and the one it links to.
var rbacDocs = []string{"README.md", filepath.Join("internal", "location", "README.md")}

// readmeRules returns the rules of the READMEs' Roles and ClusterRoles named name.
func readmeRules(t *testing.T, name string) []kubeapi.Rule {
	t.Helper()
	var src []byte
	for _, doc := range rbacDocs {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	var rules []kubeapi.Rule
	for _, m := range yamlBlock.FindAllStringSubmatch(string(src), -1) {
		for _, doc := range strings.Split(m[1], "\n---\n") {
			// A Role's and a ClusterRole's rules read alike.
			var role rbacv1.Role
			if err := yaml.Unmarshal([]byte(doc), &role); err != nil || (role.Kind != "Role" && role.Kind != "ClusterRole") || role.Name != name {
				continue
			}
			for _, r := range role.Rules {
				for _, g := range r.APIGroups {
					rules = append(rules, kubeapi.Rule{Group: g, Resources: r.Resources, Verbs: r.Verbs, Names: r.ResourceNames})
				}
			}
		}
	}
	if len(rules) == 0 {
		t.Fatalf("%v have no Role or ClusterRole %s", rbacDocs, name)
	}
	return rules
}

// The README's Role for the item actions is exactly what they need: against an API server that
// refuses everything it does not grant, a backup and a restore of a location whose Secret holds
// another account's credentials complete in that account, no request of the plugin is refused,
// and every permission the Role grants is used.
func TestREADMERoleIsExactlyWhatTheItemActionsUse(t *testing.T) {
	rules := readmeRole(t)
	r, loc := newAccountBRig(t, 12, 2, func(r *suite) {
		r.KubeAPI.Put(kubeSystem())
		r.KubeAPI.Restrict(rules...)
	})

	ctx, cancel := context.WithTimeout(t.Context(), backupTimeout)
	defer cancel()
	res, err := r.Core.Backup(ctx, harness.BackupRequest{
		Name: "rbac", Labels: map[string]string{"app": "integration"}, Location: loc, PVs: r.PVs, ItemOperationTimeout: time.Minute,
	})
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	requireCompleted(t, res, len(r.PVs))
	install := pluginlocation.InstallIdentity(kubeSystemUID, harness.Namespace)
	for _, snap := range r.Sim.Snapshots(sourceRegion) {
		if got := snap.Tags[model.TagInstall]; got != install {
			t.Errorf("snapshot %s carries install %q, want %q: the plugin could not read namespace kube-system", snap.ID, got, install)
		}
	}
	restore, err := r.Core.Restore(ctx, harness.RestoreRequest{Name: "rbac-restore", Backup: res, Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	if !restore.Succeeded() || len(restore.Volumes) != len(r.PVs) {
		t.Fatalf("restore %s with %d volumes, want Completed with %d; errors %v %v", restore.Restore.Status.Phase,
			len(restore.Volumes), len(r.PVs), restore.ItemErrors, restore.OperationErrors)
	}
	if n := r.Sim.Stats().Accounts[accountA].Total("", ""); n != 0 {
		t.Errorf("%d EC2 calls with the server's own credentials (account A): the item actions fell back to the default chain", n)
	}

	used := map[kubeapi.Access]bool{}
	for _, q := range r.KubeAPI.Accesses() {
		if !strings.HasPrefix(q.UserAgent, "velero-plugin-for-aws-async") {
			continue
		}
		if q.Code == 403 {
			t.Errorf("the README's Role does not grant %s on %s in group %q, which the item actions asked for", q.Verb, q.Resource, q.Group)
		}
		used[q.Access] = true
	}
	for _, rule := range rules {
		for _, res := range rule.Resources {
			for _, verb := range rule.Verbs {
				if a := (kubeapi.Access{Group: rule.Group, Resource: res, Verb: verb}); !used[a] {
					t.Errorf("the README's Role grants %s on %s in group %q, which the item actions never use", verb, res, rule.Group)
				}
			}
		}
	}
	if !slices.ContainsFunc(rules, func(r kubeapi.Rule) bool { return slices.Contains(r.Resources, "secrets") }) {
		t.Error("the README's Role grants nothing on secrets, which a location's spec.credential needs")
	}
}

// kubeSystemUID is the UID of the API's namespace kube-system: the cluster's identity.
const kubeSystemUID = "rbac-kube-system-uid"

// kubeSystem is the namespace whose UID the plugin tags snapshots with.
func kubeSystem() *corev1api.Namespace {
	return &corev1api.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: kubeSystemUID}}
}

// serverCredentials gives the plugin processes started from now on key's credentials only, as
// the file Velero's install mounts from its cloud-credentials Secret (no static keys).
func serverCredentials(t *testing.T, key ec2sim.AccessKey) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "credentials-server")
	if err := os.WriteFile(file, key.CredentialsFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "") // restored after the test
		_ = os.Unsetenv(k)
	}
}

// The README's Role and ClusterRole for the check are exactly what it reads: granted only
// those, it is refused nothing, uses each, and passes.
func TestREADMECheckRolesAreExactlyWhatTheCheckReads(t *testing.T) {
	checkRules := readmeRules(t, checkRole)
	run := runCheck(t, checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM, rules: checkRules}, "json")
	if run.code != check.ExitOK {
		t.Errorf("exit status %d, want %d", run.code, check.ExitOK)
	}
	used := map[kubeapi.Access]bool{}
	for _, q := range run.api.Accesses() {
		if q.Code == 403 {
			t.Errorf("the check's rules do not grant %s on %s in group %q, which it asked for", q.Verb, q.Resource, q.Group)
		}
		used[q.Access] = true
	}
	for _, rule := range checkRules {
		for _, res := range rule.Resources {
			for _, verb := range rule.Verbs {
				if a := (kubeapi.Access{Group: rule.Group, Resource: res, Verb: verb}); !used[a] {
					t.Errorf("the check's rules grant %s on %s in group %q, which it never uses", verb, res, rule.Group)
				}
			}
		}
	}
}

// Under the item actions' Role alone, the check cannot read the PersistentVolumes or Velero's
// Deployment: it says so on "incomplete" lines naming what to grant, and exits 2, not 0.
func TestCheckUnderTheItemActionsRoleIsIncomplete(t *testing.T) {
	run := runCheck(t, checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM, rules: readmeRole(t)}, "json")
	if run.code != check.ExitIncomplete {
		t.Errorf("exit status %d, want %d (incomplete)", run.code, check.ExitIncomplete)
	}
	grants := map[string]string{}
	for _, s := range run.report.Sections {
		for _, f := range s.Findings {
			if f.Status == check.Incomplete {
				grants[f.Check] = f.Fix
			}
		}
	}
	for c, grant := range map[string]string{
		"EBS volumes in " + sourceRegion: "grant list on persistentvolumes",
		"Velero's settings":              "grant get on deployments.apps in namespace " + harness.Namespace,
	} {
		if !strings.Contains(grants[c], grant) {
			t.Errorf("%s: incomplete with fix %q, want one that says %q (incomplete lines: %v)", c, grants[c], grant, grants)
		}
	}
	if run.report.Incomplete != len(grants) || run.report.Failures != 0 {
		t.Errorf("report counts %d incomplete and %d failures, want %d and 0", run.report.Incomplete, run.report.Failures, len(grants))
	}
}
