package readme

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	plugloc "github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// checkSampleFirstLine starts the README's sample of `check`'s output, the version line the
// command prints before the report (a release's, where this test's build is unstamped).
const checkSampleFirstLine = "velero-plugin-for-aws-async v0.1.0 (commit "

// versionLine is the whole version line: a release and a commit.
var versionLine = regexp.MustCompile(`^velero-plugin-for-aws-async v\d+\.\d+\.\d+ \(commit [0-9a-f]{7,40}\)$`)

// patchedArg is a server argument the README's `kubectl patch` of the Deployment adds.
var patchedArg = regexp.MustCompile(`"value": "(--[^"]+)"`)

// TestREADMECheckSampleIsCheckOutput: every line of the README's `check` sample is a line `check`
// prints right after the README's install (its location ebs, its kubectl patch, velero install's
// credentials file in the pod, the README's IAM user), or the start of one where the sample elides
// the rest ("…"). The integration suite runs the binary's check on the simulator's accounts, whose
// users are named by key ID, not the README's: it checks the version line and every finding.
func TestREADMECheckSampleIsCheckOutput(t *testing.T) {
	src, blocks := readmeDoc(t)
	var sample []string
	for _, b := range blocks {
		if b.lang == "text" && len(b.body) > 0 && strings.HasPrefix(b.body[0], checkSampleFirstLine) {
			if !versionLine.MatchString(b.body[0]) {
				t.Errorf("README.md:%d: %q is not the version line check prints", b.line, b.body[0])
			}
			sample = b.body[1:]
		}
	}
	if sample == nil {
		t.Fatalf("the README has no text block starting %q", checkSampleFirstLine)
	}
	var args []string
	for _, m := range patchedArg.FindAllStringSubmatch(src, -1) {
		args = append(args, m[1])
	}
	out := checkAfterTheREADMEsInstall(t, args)
	lines := strings.Split(out, "\n")
	for _, l := range sample {
		want, elided := strings.CutSuffix(l, "…")
		if strings.TrimSpace(want) == "" && elided || l == "" {
			continue
		}
		found := false
		for _, o := range lines {
			if o == want || elided && strings.HasPrefix(o, want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README check sample line %q is not in check's output:\n%s", l, out)
		}
	}
}

// checkAfterTheREADMEsInstall is `check`'s report, in Velero's pod, on a cluster with four EBS
// volumes in us-east-1, the location ebs of the README, and Velero's server given args.
func checkAfterTheREADMEsInstall(t *testing.T, args []string) string {
	t.Helper()
	srv, err := ec2sim.Start(ec2sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	objs := []client.Object{
		&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "ebs"},
			Spec: velerov1.VolumeSnapshotLocationSpec{Provider: plugloc.DefaultProvider, Config: map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2"}}},
	}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "velero"}}
	deploy.Spec.Template.Spec.Containers = []corev1.Container{{Name: "velero", Command: []string{"/velero"}, Args: append([]string{"server"}, args...)}}
	objs = append(objs, deploy)
	for i, id := range srv.Sim.AddVolumes("us-east-1", ec2sim.VolumeSpec{AvailabilityZone: "us-east-1a"}, ec2sim.VolumeSpec{AvailabilityZone: "us-east-1b"},
		ec2sim.VolumeSpec{AvailabilityZone: "us-east-1a"}, ec2sim.VolumeSpec{AvailabilityZone: "us-east-1c"}) {
		zone := []string{"us-east-1a", "us-east-1b", "us-east-1a", "us-east-1c"}[i]
		objs = append(objs, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + id}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://" + zone + "/" + id}}}})
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{velerov1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	c := &check.Checker{Kube: kube, Namespace: "velero", Provider: plugloc.DefaultProvider,
		Resolver: plugloc.New(plugloc.WithReader(kube), plugloc.WithNamespace("velero"), plugloc.WithTempDir(t.TempDir())),
		Clients:  simClients{srv.URL}, Identities: veleroUser{},
		Shell: check.Shell{InPod: true, Source: "AWS_SHARED_CREDENTIALS_FILE=/credentials/cloud"}}
	rep, err := c.Run(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	return text.String()
}

// simClients reach the simulator at url whatever the credentials.
type simClients struct{ url string }

func (s simClients) Client(_ context.Context, region string, _ ec2api.Credentials) (ec2api.EC2, error) {
	return ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(s.url), Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}), nil
}

// veleroUser says the credentials are the README's IAM user velero's, from a credentials file.
type veleroUser struct{}

func (veleroUser) Account(context.Context, string, ec2api.Credentials) (ec2api.Identity, error) {
	return ec2api.Identity{Account: "111111111111", ARN: "arn:aws:iam::111111111111:user/velero", Chain: "access keys in a credentials file"}, nil
}
