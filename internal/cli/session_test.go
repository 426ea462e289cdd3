package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/kubeapi"
)

// noReport is a command's empty report.
type noReport struct{}

func (noReport) WriteText(io.Writer) error { return nil }

// holding lists the files under dir that hold secret.
func holding(t *testing.T, dir, secret string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(secret)) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// A command's credentials never outlive it on disk: while it resolves a location's Secret and
// loads AWS clients with it, they live in memory only (on Linux; elsewhere in a private
// directory), and once it has run no file holding them is left under the temporary directory.
func TestSessionCredentialsNeverOnDisk(t *testing.T) {
	const secret = "session-secret-access-key"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	api, err := kubeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	if err := api.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	api.Put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "aws"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id = AKIASESSION\naws_secret_access_key = " + secret + "\n")}})
	api.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "ebs"},
		Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider, Config: map[string]string{model.ConfigRegion: "us-east-1"},
			Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "aws"}, Key: "cloud"}}})
	var stderr strings.Builder
	ran := false
	code := New("check", "[flags]", "Checks.", &stderr).Run([]string{"--kubeconfig", kubeconfig, "--namespace", "velero"}, io.Discard, nil,
		func(s *Session) (Report, int, error) {
			ctx := context.Background()
			backup := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "b1"},
				Spec: velerov1.BackupSpec{VolumeSnapshotLocations: []string{"ebs"}}}
			choice, err := s.Resolver.ForBackup(ctx, backup, "us-east-1")
			if err != nil || len(choice.Locations) != 1 {
				t.Fatalf("locations %+v, err %v", choice, err)
			}
			creds := choice.Locations[0].Credentials
			if b, err := os.ReadFile(creds.File); err != nil || !bytes.Contains(b, []byte(secret)) {
				t.Fatalf("the location's credentials file %s reads %q (err %v), want the Secret's key", creds.File, b, err)
			}
			if _, err := ec2api.NewFactory().Client(ctx, "us-east-1", creds); err != nil {
				t.Fatal(err)
			}
			if runtime.GOOS == "linux" {
				if found := holding(t, tmp, secret); len(found) != 0 || !s.files.InMemory() {
					t.Errorf("while the command runs, its credentials are on disk: %v", found)
				}
			}
			ran = true
			return noReport{}, ExitOK, nil
		})
	if code != ExitOK || !ran {
		t.Fatalf("exit %d, ran %v: %s", code, ran, stderr.String())
	}
	if found := holding(t, tmp, secret); len(found) != 0 {
		t.Errorf("after the command, its credentials are left on disk: %v", found)
	}
}
