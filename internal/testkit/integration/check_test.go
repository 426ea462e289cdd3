package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1api "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/kubeapi"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
	"github.com/velero-async/velero-plugin-for-aws/internal/version"
)

// The preflight check, run as `velero-plugin-for-aws-async check` against the simulator with a
// source and a vault account, each with the README's IAM actions as its allow-list, and a
// Kubernetes API holding the location, its Secrets and Velero's Deployment.

// The IAM actions of the README: the source account's (EBSSnapshotsCopiesRestores and
// VaultSharing) and the vault account's (VaultCopies).
var (
	sourceIAM = []string{"DescribeVolumes", "DescribeSnapshots", "DescribeAvailabilityZones", "CreateSnapshot", "CopySnapshot",
		"DeleteSnapshot", "CreateVolume", "CreateTags", "DeleteTags", "ModifySnapshotAttribute", "DescribeSnapshotAttribute"}
	vaultIAM = []string{"DescribeSnapshots", "CopySnapshot", "CreateTags", "LockSnapshot", "DescribeLockedSnapshots", "DeleteSnapshot"}
)

// readActions are the EC2 actions the check may send for real.
var readActions = []string{"DescribeVolumes", "DescribeSnapshots", "DescribeAvailabilityZones", "DescribeSnapshotAttribute", "DescribeLockedSnapshots"}

// The check's setup: the location's Secret, Velero's Deployment, the volumes.
const (
	checkSecret  = "cloud-credentials"
	checkVolumes = 4
)

// checkSetup is one variant of a correct setup.
type checkSetup struct {
	sourceAllowed, vaultAllowed []string
	// config changes the location's config; sourceInVault puts the source account's key pair
	// in the vault's Secret.
	config        map[string]string
	sourceInVault bool
	// vaultRole puts in the vault's Secret a profile assuming the vault role from the source
	// role's web identity (IRSA), the vault role allowed vaultAllowed, the vault account nothing
	// of its own.
	vaultRole bool
	// wrongSecret puts the source account's key ID with a wrong secret key in the location's Secret.
	wrongSecret bool
	// serverArgs are the Velero server's extra arguments; down is a region taken down.
	serverArgs []string
	down       string
	// rules, when set, are all the Kubernetes API grants to whoever runs the check.
	rules []kubeapi.Rule
}

// checkRun is what one run of the check did.
type checkRun struct {
	code   int
	report check.Report
	text   string
	// requests are the EC2 requests the simulator got (action, and whether DryRun was set).
	requests []ec2Request
	sim      *ec2sim.Simulator
	// api is the Kubernetes API the check read.
	api *kubeapi.Server
}

type ec2Request struct {
	action string
	dryRun bool
}

// TestCheckCorrectSetupPassesEveryLine: the README's IAM statements in each account, the vault's
// Secret of the vault account, Velero's defaults: every finding passes, the exit status is 0,
// and nothing was sent but reads and dry runs.
func TestCheckCorrectSetupPassesEveryLine(t *testing.T) {
	run := runCheck(t, checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM}, "text")
	t.Logf("output:\n%s", run.text)
	if run.code != check.ExitOK {
		t.Errorf("exit status %d, want %d", run.code, check.ExitOK)
	}
	first, _, _ := strings.Cut(run.text, "\n")
	if want := "velero-plugin-for-aws-async " + version.String(); first != want {
		t.Errorf("first line %q, want the plugin's version %q", first, want)
	}
	jsonRun := runCheck(t, checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM}, "json")
	n := 0
	for _, s := range jsonRun.report.Sections {
		for _, f := range s.Findings {
			n++
			if f.Status != check.Pass {
				t.Errorf("%s: %s %s: %s", s.Title, f.Status, f.Check, f.Detail)
			}
		}
	}
	if n < 30 {
		t.Errorf("%d findings, want every check of the location, its copy region and its vault", n)
	}
	requireNothingChanged(t, jsonRun)
}

// TestCheckNamesTheVaultRoleChain: with a vault Secret holding no key, only a profile assuming
// the vault role (allowed the README's VaultCopies actions) from the source role's web identity
// (allowed the README's source statements and sts:AssumeRole), every finding passes and the
// vault account's line says how its credentials were obtained.
func TestCheckNamesTheVaultRoleChain(t *testing.T) {
	run := runCheck(t, checkSetup{sourceAllowed: append(slices.Clone(sourceIAM), "sts:AssumeRole"), vaultAllowed: vaultIAM, vaultRole: true}, "json")
	for _, s := range run.report.Sections {
		for _, f := range s.Findings {
			if f.Status != check.Pass {
				t.Errorf("%s: %s %s: %s", s.Title, f.Status, f.Check, f.Detail)
			}
			if f.Check == "vault account" {
				t.Logf("✓ vault account: %s", f.Detail)
				want := rig.VaultAccount + " (arn:aws:sts::" + rig.VaultAccount + ":assumed-role/velero-vault/velero-vault; assumed role velero-vault via IRSA web identity)"
				if f.Detail != want {
					t.Errorf("vault account: %q, want %q", f.Detail, want)
				}
			}
		}
	}
	if run.code != check.ExitOK {
		t.Errorf("exit status %d, want %d", run.code, check.ExitOK)
	}
	requireNothingChanged(t, run)
}

// TestCheckNamesEachProblemExactly: each missing IAM action, a vault Secret of the wrong account,
// a copy key of another region, a region that does not answer and a short item-operation
// timeout fail exactly their own lines, with exit status 1, and change nothing.
func TestCheckNamesEachProblemExactly(t *testing.T) {
	type row struct {
		name  string
		setup checkSetup
		want  []string
	}
	in := func(region string, actions ...string) []string {
		var out []string
		for _, a := range actions {
			out = append(out, "ec2:"+a+" in "+region)
		}
		return out
	}
	vault := func(checks []string) []string {
		for i := range checks {
			checks[i] = "vault: " + checks[i]
		}
		return checks
	}
	missingSource := map[string][]string{
		"DescribeVolumes":           in(sourceRegion, "DescribeVolumes"),
		"DescribeSnapshots":         append(in(sourceRegion, "DescribeSnapshots"), in(copyRegion, "DescribeSnapshots")...),
		"DescribeAvailabilityZones": in(sourceRegion, "DescribeAvailabilityZones"),
		"CreateSnapshot":            in(sourceRegion, "CreateSnapshot"),
		"CopySnapshot":              in(copyRegion, "CopySnapshot"),
		"DeleteSnapshot":            append(in(sourceRegion, "DeleteSnapshot"), in(copyRegion, "DeleteSnapshot")...),
		"CreateVolume":              in(sourceRegion, "CreateVolume"),
		// A create that tags needs ec2:CreateTags too.
		"CreateTags":                append(in(sourceRegion, "CreateSnapshot", "CreateTags", "CreateVolume"), in(copyRegion, "CopySnapshot", "CreateTags")...),
		"DeleteTags":                in(sourceRegion, "DeleteTags"),
		"ModifySnapshotAttribute":   in(sourceRegion, "ModifySnapshotAttribute"),
		"DescribeSnapshotAttribute": in(sourceRegion, "DescribeSnapshotAttribute"),
	}
	missingVault := map[string][]string{
		"DescribeSnapshots":       vault(in(copyRegion, "DescribeSnapshots")),
		"CopySnapshot":            vault(in(copyRegion, "CopySnapshot")),
		"CreateTags":              vault(in(copyRegion, "CopySnapshot", "CreateTags")),
		"LockSnapshot":            vault(in(copyRegion, "LockSnapshot")),
		"DescribeLockedSnapshots": vault(in(copyRegion, "DescribeLockedSnapshots")),
		"DeleteSnapshot":          vault(in(copyRegion, "DeleteSnapshot")),
	}
	var rows []row
	for _, a := range sourceIAM {
		rows = append(rows, row{"source account without " + a, checkSetup{sourceAllowed: without(sourceIAM, a), vaultAllowed: vaultIAM}, missingSource[a]})
	}
	for _, a := range vaultIAM {
		rows = append(rows, row{"vault account without " + a, checkSetup{sourceAllowed: sourceIAM, vaultAllowed: without(vaultIAM, a)}, missingVault[a]})
	}
	rows = append(rows,
		row{"vault Secret of the source account", checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM, sourceInVault: true}, []string{"vault account"}},
		row{"copy key of the source region", checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM,
			config: map[string]string{model.ConfigCopyKMSKeyID: "arn:aws:kms:" + sourceRegion + ":" + rig.SourceAccount + ":key/1234abcd-12ab-34cd-56ef-1234567890ab"}},
			[]string{"copyKmsKeyId arn:aws:kms:" + sourceRegion + ":" + rig.SourceAccount + ":key/1234abcd-12ab-34cd-56ef-1234567890ab"}},
		row{"copy region down", checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM, down: copyRegion},
			[]string{"region " + copyRegion, "vault: region " + copyRegion}}, // the vault is in the copy region too
		row{"a wrong secret key in the location's Secret", checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM, wrongSecret: true},
			[]string{"account", "region " + sourceRegion, "region " + copyRegion}},
		row{"item-operation timeout of 30 minutes", checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM,
			serverArgs: []string{"--default-item-operation-timeout=30m"}}, []string{"item-operation timeout"}},
		row{"a vault role the source role may not assume", checkSetup{sourceAllowed: sourceIAM, vaultAllowed: vaultIAM, vaultRole: true},
			[]string{"vault account", "vault: region " + copyRegion}},
	)
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			run := runCheck(t, tt.setup, "json")
			var failed []string
			for _, s := range run.report.Sections {
				for _, f := range s.Findings {
					if f.Status == check.Fail {
						failed = append(failed, f.Check)
						if f.Fix == "" {
							t.Errorf("%s fails without a fix: %s", f.Check, f.Detail)
						}
						t.Logf("✗ %s: %s — fix: %s", f.Check, f.Detail, f.Fix)
					}
				}
			}
			sort.Strings(failed)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(failed, want) {
				t.Errorf("failed lines %q, want %q", failed, want)
			}
			if run.code != check.ExitProblems {
				t.Errorf("exit status %d, want %d", run.code, check.ExitProblems)
			}
			requireNothingChanged(t, run)
		})
	}
}

// runCheck sets up a rig as setup says and runs the plugin binary's check with --output.
func runCheck(t *testing.T, setup checkSetup, output string) checkRun {
	t.Helper()
	cfg := rig.WithAccounts(rig.FastConfig(23), setup.sourceAllowed, setup.vaultAllowed)
	if setup.vaultRole {
		cfg = rig.WithVaultRole(rig.WithAccounts(rig.FastConfig(23), setup.sourceAllowed, nil), setup.vaultAllowed)
	}
	r := newAPIRig(t, cfg, checkVolumes)
	loc, err := r.VaultLocation(copyRegion, model.LockModeGovernance)
	if err != nil {
		t.Fatal(err)
	}
	if setup.vaultRole {
		if err := r.PutVaultRole(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	loc.Spec.Config[model.ConfigCopyCompletionDurationMinutes] = "60"
	for k, v := range setup.config {
		loc.Spec.Config[k] = v
	}
	// The source account's key pair is the plugin processes' (rig.UseEndpoint).
	sourceKey := ec2sim.AccessKey{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	locKey := sourceKey
	if setup.wrongSecret {
		locKey.SecretAccessKey = "not-" + locKey.SecretAccessKey
	}
	if err := r.PutSecret(checkSecret, map[string][]byte{"cloud": locKey.CredentialsFile()}); err != nil {
		t.Fatal(err)
	}
	loc.Spec.Credential = &corev1api.SecretKeySelector{LocalObjectReference: corev1api.LocalObjectReference{Name: checkSecret}, Key: "cloud"}
	if setup.sourceInVault {
		if err := r.PutSecret(loc.Spec.Config[model.ConfigVaultCredentialSecret], map[string][]byte{model.DefaultVaultCredentialKey: sourceKey.CredentialsFile()}); err != nil {
			t.Fatal(err)
		}
	}
	r.KubeAPI.Put(loc)
	r.KubeAPI.Put(veleroDeployment(setup.serverArgs))
	r.KubeAPI.Put(kubeSystem())
	for _, pv := range r.PVs {
		r.KubeAPI.Put(pv)
	}
	if setup.rules != nil {
		r.KubeAPI.Restrict(setup.rules...)
	}
	if setup.down != "" {
		if err := r.Sim.TakeDown(setup.down, ec2sim.Outage{}); err != nil {
			t.Fatal(err)
		}
	}

	rec := &recorder{sim: r.Sim}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	cmd := exec.CommandContext(t.Context(), plugin.Binary, check.Command, "--kubeconfig", r.Kubeconfig, "--namespace", harness.Namespace, "--output", output)
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL_EC2="+srv.URL, "AWS_ENDPOINT_URL_STS="+srv.URL, "TMPDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	run := checkRun{text: stdout.String(), requests: rec.all(), sim: r.Sim, api: r.KubeAPI}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running the check: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", stderr.String())
	}
	if output == "json" {
		if err := json.Unmarshal(stdout.Bytes(), &run.report); err != nil {
			t.Fatalf("the check's JSON: %v\n%s", err, stdout.String())
		}
	}
	for _, q := range r.KubeAPI.Requests() {
		if q.Method != http.MethodGet {
			t.Errorf("the check sent %s %s to the Kubernetes API", q.Method, q.Path)
		}
	}
	return run
}

// veleroDeployment is Velero's Deployment as velero install makes it, with extra server args.
func veleroDeployment(extra []string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: harness.Namespace, Name: "velero"},
	}
	d.Spec.Template.Spec.Containers = []corev1api.Container{{
		Name: "velero", Image: "velero/velero:v1.18.3", Command: []string{"/velero"},
		Args: append([]string{"server", "--features=", "--uploader-type=kopia"}, extra...),
	}}
	return d
}

// requireNothingChanged fails the test unless every mutating EC2 request the check sent had
// DryRun set, and the simulator holds no snapshot and only the seeded volumes.
func requireNothingChanged(t *testing.T, run checkRun) {
	t.Helper()
	dry := 0
	for _, q := range run.requests {
		switch {
		case q.dryRun:
			dry++
		case !slices.Contains(readActions, q.action):
			t.Errorf("the check sent %s without DryRun", q.action)
		}
	}
	if dry == 0 {
		t.Error("the check sent no dry run")
	}
	for _, region := range []string{sourceRegion, copyRegion} {
		for _, acct := range []string{rig.SourceAccount, rig.VaultAccount} {
			if n := len(run.sim.SnapshotsIn(acct, region)); n != 0 {
				t.Errorf("%d snapshots in account %s in %s after the check", n, acct, region)
			}
		}
	}
	if n := len(run.sim.VolumesIn(rig.SourceAccount, sourceRegion)); n != checkVolumes {
		t.Errorf("%d volumes in %s after the check, want the %d seeded", n, sourceRegion, checkVolumes)
	}
	if st := run.sim.Stats(); st.Total("CreateTags", "ok")+st.Total("DeleteTags", "ok")+st.Total("ModifySnapshotAttribute", "ok") != 0 {
		t.Errorf("the simulator ran a mutating request: %v", st.Calls)
	}
}

// recorder serves the simulator and records each EC2 request's action and DryRun.
type recorder struct {
	sim *ec2sim.Simulator
	mu  sync.Mutex
	log []ec2Request
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	form, _ := url.ParseQuery(string(body))
	if form.Get("Version") != "2011-06-15" { // not STS
		rec.mu.Lock()
		rec.log = append(rec.log, ec2Request{action: form.Get("Action"), dryRun: strings.EqualFold(form.Get("DryRun"), "true")})
		rec.mu.Unlock()
	}
	rec.sim.ServeHTTP(w, r)
}

func (rec *recorder) all() []ec2Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.log)
}

func without(list []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == drop })
}
