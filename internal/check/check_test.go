package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// simClients reach the simulator at url whatever the credentials.
type simClients struct{ url string }

func (s simClients) Client(_ context.Context, region string, _ ec2api.Credentials) (ec2api.EC2, error) {
	return simClient(s.url, region), nil
}

func simClient(url, region string) *ec2.Client {
	return ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(url), Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")})
}

// oneAccount says every credentials are of the simulator's default account.
type oneAccount struct{}

func (oneAccount) Account(context.Context, string, ec2api.Credentials) (ec2api.Identity, error) {
	return ec2api.Identity{Account: ec2sim.DefaultAccountID, ARN: "arn:aws:iam::" + ec2sim.DefaultAccountID + ":user/velero"}, nil
}

func startSim(t *testing.T) *ec2sim.Server {
	t.Helper()
	srv, err := ec2sim.Start(ec2sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func vsl(name, provider string, cfg map[string]string, secret string) *velerov1.VolumeSnapshotLocation {
	v := &velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: name},
		Spec: velerov1.VolumeSnapshotLocationSpec{Provider: provider, Config: cfg}}
	if secret != "" {
		v.Spec.Credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "cloud"}
	}
	return v
}

func checker(t *testing.T, url string, objs ...client.Object) *Checker {
	kube := fakeKube(t, objs...)
	return &Checker{Kube: kube, Resolver: location.New(location.WithReader(kube), location.WithNamespace("velero"), location.WithTempDir(t.TempDir())),
		Clients: simClients{url}, Identities: oneAccount{}, Namespace: "velero", Provider: location.DefaultProvider}
}

func TestRunNamesWhatIsWrongWithEachLocation(t *testing.T) {
	srv := startSim(t)
	srv.Sim.AddVolumes("us-east-1", ec2sim.VolumeSpec{AvailabilityZone: "us-east-1a"})
	good := vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2"}, "cloud-credentials")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "cloud-credentials"}, Data: map[string][]byte{"cloud": []byte("[default]\n")}}
	tests := []struct {
		name   string
		objs   []client.Object
		only   string
		failed []string
		fix    string
	}{
		{"no location of the plugin", []client.Object{vsl("gcp", "velero.io/gcp", map[string]string{"project": "p"}, "")}, "",
			[]string{"VolumeSnapshotLocations"}, "velero snapshot-location create"},
		{"the location named is missing", []client.Object{good, secret}, "other", []string{"VolumeSnapshotLocation other"}, "velero snapshot-location create other"},
		{"the location named is another plugin's", []client.Object{vsl("gcp", "velero.io/gcp", nil, "")}, "gcp", []string{"VolumeSnapshotLocation gcp"}, "spec.provider"},
		{"its Secret is missing", []client.Object{good}, "", []string{"credentials"}, "kubectl -n velero create secret generic cloud-credentials --from-file=cloud="},
		{"its config is wrong", []client.Object{vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1", "copyToRegion": "us-east-1"}, "")}, "",
			[]string{"config"}, "Config reference"},
		{"a misspelt config key", []client.Object{vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1", "copyToRegoin": "us-west-2"}, "")}, "",
			[]string{"config"}, "did you mean `copyToRegion`?"},
		{"a good location", []client.Object{good, secret, deployment()}, "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := checker(t, srv.URL, tt.objs...).Run(t.Context(), tt.only)
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, s := range rep.Sections {
				for _, f := range s.Findings {
					if f.Status == Fail {
						failed = append(failed, f.Check)
						if !strings.Contains(f.Fix, tt.fix) {
							t.Errorf("%s: fix %q, want it to contain %q", f.Check, f.Fix, tt.fix)
						}
					}
				}
			}
			if strings.Join(failed, ",") != strings.Join(tt.failed, ",") || rep.Failures != len(tt.failed) || rep.Failed() != (len(tt.failed) > 0) {
				var text bytes.Buffer
				_ = rep.WriteText(&text)
				t.Errorf("failed %v (%d), want %v:\n%s", failed, rep.Failures, tt.failed, text.String())
			}
		})
	}
}

// The check's clients refuse, before sending, any mutating request without DryRun; they send
// reads and dry runs.
func TestTheGuardSendsOnlyReadsAndDryRuns(t *testing.T) {
	srv := startSim(t)
	vol := srv.Sim.AddVolumes("us-east-1", ec2sim.VolumeSpec{AvailabilityZone: "us-east-1a"})[0]
	c := guarded{simClient(srv.URL, "us-east-1")}
	ctx := t.Context()
	dry := aws.Bool(true)
	tests := []struct {
		name string
		call func(dryRun *bool) error
		read bool
	}{
		{"CreateSnapshot", func(d *bool) error {
			_, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol), DryRun: d})
			return err
		}, false},
		{"CopySnapshot", func(d *bool) error {
			_, err := c.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(exampleSnapshotID), DryRun: d})
			return err
		}, false},
		{"DeleteSnapshot", func(d *bool) error {
			_, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(exampleSnapshotID), DryRun: d})
			return err
		}, false},
		{"CreateVolume", func(d *bool) error {
			_, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(1), DryRun: d})
			return err
		}, false},
		{"CreateTags", func(d *bool) error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{vol}, Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}, DryRun: d})
			return err
		}, false},
		{"DeleteTags", func(d *bool) error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{vol}, DryRun: d})
			return err
		}, false},
		{"ModifySnapshotAttribute", func(d *bool) error {
			_, err := c.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(exampleSnapshotID), DryRun: d})
			return err
		}, false},
		{"LockSnapshot", func(d *bool) error {
			_, err := c.LockSnapshot(ctx, &ec2.LockSnapshotInput{SnapshotId: aws.String(exampleSnapshotID), LockMode: "governance", LockDuration: aws.Int32(1), DryRun: d})
			return err
		}, false},
		{"DescribeVolumes", func(d *bool) error {
			_, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{DryRun: d})
			return err
		}, true},
		{"DescribeSnapshots", func(d *bool) error {
			_, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{DryRun: d})
			return err
		}, true},
		{"DescribeVolumeStatus", func(d *bool) error {
			_, err := c.DescribeVolumeStatus(ctx, &ec2.DescribeVolumeStatusInput{DryRun: d})
			return err
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Sim.Stats().Total(tt.name, "")
			err := tt.call(nil)
			sent := srv.Sim.Stats().Total(tt.name, "") - before
			if tt.read {
				if err != nil || sent != 1 {
					t.Errorf("read: error %v, %d sent, want it sent", err, sent)
				}
				return
			}
			if !errors.Is(err, errNotDryRun) || sent != 0 {
				t.Errorf("without DryRun: error %v, %d sent; want it refused before sending", err, sent)
			}
			err = tt.call(dry)
			if code, _ := apiError(err); code != codeDryRunOperation || srv.Sim.Stats().Total(tt.name, codeDryRunOperation) != 1 {
				t.Errorf("with DryRun: error %v, want EC2's DryRunOperation", err)
			}
		})
	}
	if n := len(srv.Sim.Snapshots("us-east-1")) + len(srv.Sim.Snapshots("us-west-2")); n != 0 || len(srv.Sim.Volumes("us-east-1")) != 1 {
		t.Errorf("%d snapshots, %d volumes after the guard's test, want none and the seeded one", n, len(srv.Sim.Volumes("us-east-1")))
	}
}

func TestReportOutputs(t *testing.T) {
	rep := Report{Namespace: "velero", Plugin: "v0.1.0 (commit 0123abc)"}
	rep.add(Section{Title: "VolumeSnapshotLocation velero/ebs", Location: "ebs", Findings: []Finding{
		pass("ec2:CreateSnapshot in us-east-1", "permitted (dry run on vol-1)"),
		fail("ec2:DeleteTags in us-east-1", "refused (UnauthorizedOperation)", `allow "ec2:DeleteTags"`),
		warn("credentials where Velero runs", "the check used this shell's default credential chain", "check them where Velero runs"),
		notChecked("copyKmsKeyId k usable", "EC2 checks KMS keys only when a copy runs"),
		incomplete("EBS volumes in us-east-1", "the cluster's PersistentVolumes are not readable (forbidden)", "grant list on persistentvolumes"),
	}})
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "velero-plugin-for-aws-async v0.1.0 (commit 0123abc)\n\n" +
		"VolumeSnapshotLocation velero/ebs\n" +
		"  ✓ ec2:CreateSnapshot in us-east-1: permitted (dry run on vol-1)\n" +
		"  ✗ ec2:DeleteTags in us-east-1: refused (UnauthorizedOperation) — fix: allow \"ec2:DeleteTags\"\n" +
		"  ! credentials where Velero runs: the check used this shell's default credential chain — fix: check them where Velero runs\n" +
		"  not checked copyKmsKeyId k usable: EC2 checks KMS keys only when a copy runs\n" +
		"  incomplete EBS volumes in us-east-1: the cluster's PersistentVolumes are not readable (forbidden) — fix: grant list on persistentvolumes\n" +
		"\n1 problem found, 1 warning; 1 check incomplete.\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Failures != 1 || back.Warnings != 1 || back.Incomplete != 1 || back.Plugin != rep.Plugin ||
		len(back.Sections) != 1 || back.Sections[0].Findings[1].Status != Fail || back.Sections[0].Findings[3].Status != NotChecked ||
		!strings.Contains(js.String(), `"status": "not checked"`) || !strings.Contains(js.String(), `"status": "warning"`) || !strings.Contains(js.String(), `"status": "incomplete"`) {
		t.Errorf("JSON %s (%v)", js.String(), err)
	}
}

// The exit status: a failure first, then a check left incomplete; warnings and lines not
// checked leave it 0.
func TestExitStatus(t *testing.T) {
	tests := []struct {
		name     string
		findings []Finding
		want     int
	}{
		{"every line passes", []Finding{pass("a", "")}, ExitOK},
		{"a warning and a line not checked", []Finding{warn("a", "", ""), notChecked("b", "")}, ExitOK},
		{"a read refused", []Finding{pass("a", ""), incomplete("b", "", "grant")}, ExitIncomplete},
		{"a failure and a read refused", []Finding{fail("a", "", "fix"), incomplete("b", "", "grant")}, ExitProblems},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rep Report
			rep.add(Section{Title: "s", Findings: tt.findings})
			if got := rep.ExitCode(); got != tt.want {
				t.Errorf("exit status %d, want %d", got, tt.want)
			}
		})
	}
}

// The volumes a location would back up are its region's EBS PersistentVolumes: the check
// describes those, dry-runs CreateSnapshot on one, and judges their keys for the vault.
func TestSourcesAreTheClustersVolumes(t *testing.T) {
	srv := startSim(t)
	ids := srv.Sim.AddVolumes("us-east-1",
		ec2sim.VolumeSpec{AvailabilityZone: "us-east-1b"},
		ec2sim.VolumeSpec{AvailabilityZone: "us-east-1a", Encrypted: true})
	srv.Sim.AddVolumes("us-east-1", ec2sim.VolumeSpec{AvailabilityZone: "us-east-1a"}) // not the cluster's
	pv := func(name, volumeID string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: volumeID}}}}
	}
	loc := vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1", "vaultAccountId": "222222222222", "vaultProfile": "vault"}, "")
	rep, err := checker(t, srv.URL, loc, deployment(),
		pv("pv-b", "aws://us-east-1b/"+ids[0]), pv("pv-a", "aws://us-east-1a/"+ids[1]), pv("pv-west", "aws://us-west-2a/vol-0abcdef0123456789")).Run(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]Finding{}
	for _, f := range rep.Sections[0].Findings {
		found[f.Check] = f
	}
	if f := found["ec2:DescribeVolumes in us-east-1"]; f.Status != Pass || !strings.Contains(f.Detail, "2 EBS PersistentVolumes of the cluster in us-east-1") {
		t.Errorf("DescribeVolumes: %+v", f)
	}
	if f := found["ec2:CreateSnapshot in us-east-1"]; f.Status != Pass || !strings.Contains(f.Detail, "on vol-") || strings.Contains(f.Detail, exampleVolumeID) {
		t.Errorf("CreateSnapshot: %+v, want a dry run on a PV's volume", f)
	}
	if f := found["source volumes' keys"]; f.Status != Fail || !strings.Contains(f.Detail, ids[1]) || strings.Contains(f.Detail, ids[0]) {
		t.Errorf("source keys: %+v, want %s named under aws/ebs", f, ids[1])
	}
}

// A location whose restores wait for volume initialization gets a dry run of
// DescribeVolumeStatus, which those restores read; other locations do not need it.
func TestWaitingForInitializationChecksDescribeVolumeStatus(t *testing.T) {
	srv := startSim(t)
	srv.Sim.AddVolumes("us-east-1", ec2sim.VolumeSpec{AvailabilityZone: "us-east-1a"})
	const check = "ec2:DescribeVolumeStatus in us-east-1"
	tests := []struct {
		name   string
		config map[string]string
		want   bool
	}{
		{"restores wait for initialization", map[string]string{"region": "us-east-1", "waitForVolumeInitialization": "true"}, true},
		{"restores end at available", map[string]string{"region": "us-east-1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := checker(t, srv.URL, vsl("ebs", location.DefaultProvider, tt.config, ""), deployment()).Run(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			var got *Finding
			for _, f := range rep.Sections[0].Findings {
				if f.Check == check {
					got = &f
				}
			}
			switch {
			case !tt.want && got != nil:
				t.Errorf("%s checked: %+v", check, *got)
			case tt.want && (got == nil || got.Status != Pass || !strings.Contains(got.Detail, "dry run on vol-")):
				t.Errorf("%s: %+v, want a dry run on a volume permitted", check, got)
			}
		})
	}
}

// An STS that does not answer fails the account line naming the credentials, the endpoint and the
// network's reason, and the fix names what must reach STS: the pod, or this shell off it.
func TestTheAccountLineNamesTheSTSThatDidNotAnswer(t *testing.T) {
	srv := startSim(t)
	t.Setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1")
	good := vsl("ebs", location.DefaultProvider, map[string]string{"region": "us-east-1"}, "cloud-credentials")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "cloud-credentials"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id = AKID\naws_secret_access_key = SECRET\n")}}
	tests := []struct {
		name  string
		shell Shell
		fix   string
	}{
		{"in Velero's pod", Shell{InPod: true}, "let the Velero pod reach STS in us-east-1"},
		{"off the pod", Shell{}, "let this shell (and the Velero pod) reach STS in us-east-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := checker(t, srv.URL, good, secret, deployment())
			c.Identities, c.Shell = ec2api.NewFactory(), tt.shell
			rep, err := c.Run(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			want := "STS in us-east-1 did not name the account of Secret velero/cloud-credentials key cloud: no answer from http://127.0.0.1:1 ("
			for _, f := range rep.Sections[0].Findings {
				if f.Check == "account" {
					if f.Status != Fail || !strings.HasPrefix(f.Detail, want) || !strings.Contains(f.Detail, "connection refused)") || !strings.HasPrefix(f.Fix, tt.fix) {
						t.Errorf("%+v, want a failure %q… naming connection refused, fix %q…", f, want, tt.fix)
					}
					return
				}
			}
			t.Errorf("no account line in %+v", rep.Sections[0].Findings)
		})
	}
}
