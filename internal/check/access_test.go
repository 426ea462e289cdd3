package check

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// Where the check runs, as it names the default credential chain.
func TestShellFromTheEnvironment(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		token bool
		chain string
	}{
		{"a shell with AWS_PROFILE", map[string]string{"AWS_PROFILE": "prod"}, false, "this shell's default credential chain (AWS_PROFILE=prod)"},
		{"a shell with access keys, which come first", map[string]string{"AWS_ACCESS_KEY_ID": "AKID", "AWS_PROFILE": "prod"}, false,
			"this shell's default credential chain (AWS_ACCESS_KEY_ID)"},
		{"a shell with nothing set", nil, false, "this shell's default credential chain"},
		{"Velero's pod with velero install's cloud-credentials Secret", map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "AWS_SHARED_CREDENTIALS_FILE": "/credentials/cloud"}, true,
			"this pod's default credential chain (AWS_SHARED_CREDENTIALS_FILE=/credentials/cloud)"},
		{"Velero's pod with IRSA", map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/eks.amazonaws.com/serviceaccount/token"}, true,
			"this pod's default credential chain (AWS_WEB_IDENTITY_TOKEN_FILE, IRSA)"},
		{"Velero's pod with EKS Pod Identity", map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials"}, true,
			"this pod's default credential chain (AWS_CONTAINER_CREDENTIALS_FULL_URI, EKS Pod Identity)"},
		{"a shell with KUBERNETES_SERVICE_HOST but no service account", map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, false, "this shell's default credential chain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := shellOf(func(k string) string { return tt.env[k] }, func(p string) bool { return tt.token && p == serviceAccountToken })
			if got := s.chain(); got != tt.chain {
				t.Errorf("chain %q, want %q", got, tt.chain)
			}
		})
	}
}

// The credentials line says what the check used; run off-pod with credentials that do not
// come from a Secret, a warning says the pod's may differ.
func TestCredentialsSayWhatTheCheckUsed(t *testing.T) {
	srv := startSim(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "cloud-credentials"}, Data: map[string][]byte{"cloud": []byte("[default]\n")}}
	shell := Shell{Source: "AWS_PROFILE=prod"}
	pod := Shell{InPod: true, Source: "AWS_WEB_IDENTITY_TOKEN_FILE, IRSA"}
	tests := []struct {
		name        string
		shell       Shell
		config      map[string]string
		secret      string
		credentials string
		warning     bool
	}{
		{"the shell's default chain, off-pod: said, and warned", shell, nil, "", "this shell's default credential chain (AWS_PROFILE=prod)", true},
		{"a profile of the shell's files, off-pod: warned", shell, map[string]string{"profile": "backup"}, "", "profile backup", true},
		{"the location's Secret, off-pod: no warning, the pod reads the same", shell, nil, "cloud-credentials", "Secret velero/cloud-credentials key cloud", false},
		{"the pod's default chain, in the pod: said, no warning", pod, nil, "", "this pod's default credential chain (AWS_WEB_IDENTITY_TOKEN_FILE, IRSA)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := map[string]string{"region": "us-east-1"}
			for k, v := range tt.config {
				cfg[k] = v
			}
			c := checker(t, srv.URL, vsl("ebs", location.DefaultProvider, cfg, tt.secret), secret, deployment())
			c.Shell = tt.shell
			rep, err := c.Run(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			if f := findingOf(t, rep, "credentials"); f.Status != Pass || f.Detail != tt.credentials {
				t.Errorf("credentials: %s %q, want pass %q", f.Status, f.Detail, tt.credentials)
			}
			warned := false
			for _, f := range rep.Sections[0].Findings {
				if f.Check == "credentials where Velero runs" {
					warned = f.Status == Warn && strings.Contains(f.Detail, "Velero's pod uses its own environment") &&
						strings.Contains(f.Fix, "kubectl -n velero exec deploy/velero -c velero -- /plugins/velero-plugin-for-aws-async check")
				}
			}
			if warned != tt.warning {
				t.Errorf("warned %v, want %v: %+v", warned, tt.warning, rep.Sections[0].Findings)
			}
		})
	}
}

// A read the Kubernetes API refuses leaves the check incomplete: the line says what to grant,
// and the exit status is 2, unless a finding failed (1).
func TestRefusedReadsLeaveTheCheckIncomplete(t *testing.T) {
	srv := startSim(t)
	good := vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1"}, "")
	locked := vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1", "vaultAccountId": ec2sim.DefaultAccountID, "vaultProfile": "vault",
		"vaultLockMode": "governance", "vaultLockDurationDays": "1"}, "")
	tests := []struct {
		name    string
		objs    []client.Object
		refused []string
		check   string
		grant   string
		code    int
		// offPod runs the check outside a pod: a refused Secret is then its runner's lack.
		offPod bool
	}{
		{"PersistentVolumes refused", []client.Object{good, deployment()}, []string{"PersistentVolumeList"},
			"EBS volumes in us-east-1", "grant list on persistentvolumes (a ClusterRole)", ExitIncomplete, false},
		{"Velero's Deployment refused", []client.Object{good}, []string{"Deployment"},
			"Velero's settings", "grant get on deployments.apps in namespace velero", ExitIncomplete, false},
		{"Schedules refused, with a vault lock to judge them against", []client.Object{locked, deployment("--default-backup-ttl=720h")}, []string{"ScheduleList"},
			"backup TTL against the vault lock", "grant list on schedules.velero.io in namespace velero", ExitIncomplete, false},
		{"a refused read and a failure: the failure's status", []client.Object{vsl("ebs", location.DefaultProvider, map[string]string{"regoin": "us-east-1"}, ""), deployment()},
			[]string{"Deployment"}, "Velero's settings", "grant get on deployments.apps", ExitProblems, false},
		{"the location's Secret refused, off-pod", []client.Object{vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1"}, "cloud-credentials"), deployment()},
			[]string{"Secret"}, "credentials", "grant get on secrets in namespace velero", ExitIncomplete, true},
		{"the location's Secret refused to Velero's own pod: a failure", []client.Object{vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1"}, "cloud-credentials"), deployment()},
			[]string{"Secret"}, "", "", ExitProblems, false},
		{"nothing refused", []client.Object{good, deployment()}, nil, "", "", ExitOK, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := checker(t, srv.URL, tt.objs...)
			c.Kube = refusing{c.Kube, tt.refused}
			c.Resolver = location.New(location.WithReader(c.Kube), location.WithNamespace("velero"), location.WithTempDir(t.TempDir()))
			c.Shell = Shell{InPod: !tt.offPod}
			rep, err := c.Run(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.ExitCode(); got != tt.code {
				var text strings.Builder
				_ = rep.WriteText(&text)
				t.Errorf("exit status %d, want %d:\n%s", got, tt.code, text.String())
			}
			if tt.check == "" {
				if rep.Incomplete != 0 {
					t.Errorf("%d incomplete, want none", rep.Incomplete)
				}
				return
			}
			if f := findingOf(t, rep, tt.check); f.Status != Incomplete || !strings.Contains(f.Fix, tt.grant) || !strings.Contains(f.Detail, "forbidden") {
				t.Errorf("%s: %s %q — fix %q; want incomplete, naming the refusal, with fix %q", f.Check, f.Status, f.Detail, f.Fix, tt.grant)
			}
		})
	}
}
