package security

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework/common"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
	plugin "github.com/velero-async/velero-plugin-for-aws/velero-plugin-for-aws"
)

// Accounts of the credentials cases and their keys; revokedKey is a key EC2 no longer knows.
const (
	isolationA = "111111111111"
	isolationB = "222222222222"
)

var (
	isolationKeyA = ec2sim.AccessKey{AccessKeyID: "AKIAISOLATIONA000001", SecretAccessKey: "isolation-secret-of-a"}
	isolationKeyB = ec2sim.AccessKey{AccessKeyID: "AKIAISOLATIONB000001", SecretAccessKey: "isolation-secret-of-b"}
	revokedKey    = ec2sim.AccessKey{AccessKeyID: "AKIAREVOKED000000001", SecretAccessKey: "revoked-secret"}
)

// twoAccounts starts a simulator of accounts A and B, each with a volume in the source region,
// and points this process's SDK at it with no credentials of its own.
func twoAccounts(t *testing.T) (srv *ec2sim.Server, volA, volB string) {
	t.Helper()
	cfg := rig.FastConfig(1)
	cfg.Accounts = []ec2sim.Account{
		{ID: isolationA, AccessKeys: []ec2sim.AccessKey{isolationKeyA}},
		{ID: isolationB, AccessKeys: []ec2sim.AccessKey{isolationKeyB}},
	}
	srv, err := ec2sim.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	rig.WithoutOwnCredentials(t, srv.URL)
	volA = srv.Sim.AddVolumesTo(isolationA, rig.SourceRegion, ec2sim.VolumeSpec{})[0]
	volB = srv.Sim.AddVolumesTo(isolationB, rig.SourceRegion, ec2sim.VolumeSpec{})[0]
	return srv, volA, volB
}

// volumeSnapshotter makes the volume snapshotter through plugin.Register, logging to log.
func volumeSnapshotter(t *testing.T, log logrus.FieldLogger) *plugin.VolumeSnapshotter {
	t.Helper()
	reg := &registry{Server: framework.NewServer(), made: map[string]common.HandlerInitializer{}}
	plugin.Register(reg, ec2api.NewFactory())
	return instance[*plugin.VolumeSnapshotter](t, reg, model.VolumeSnapshotterName, log)
}

// write replaces path's content.
func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Credentials never cross locations: Velero core writes each location's Secret to
// <secret>-<key> before Init, so locations A (Secret "aws-account", key "a") and B (Secret
// "aws", key "account-a") share one path. Each CreateSnapshot signs with the credentials the
// last Init was handed, and nothing of one account is asked with the other's keys.
func TestCredentialsNeverCrossLocations(t *testing.T) {
	srv, volA, volB := twoAccounts(t)
	vs := volumeSnapshotter(t, logrus.New())
	shared := filepath.Join(t.TempDir(), "aws-account-a")
	config := map[string]string{model.ConfigRegion: rig.SourceRegion, model.ConfigCredentialsFile: shared}
	steps := []struct {
		account, volume string
		key             ec2sim.AccessKey
	}{
		{isolationA, volA, isolationKeyA},
		{isolationB, volB, isolationKeyB},
		{isolationA, volA, isolationKeyA},
	}
	for i, s := range steps {
		write(t, shared, s.key.CredentialsFile())
		if err := vs.Init(config); err != nil {
			t.Fatalf("step %d: Init: %v", i, err)
		}
		before := srv.Sim.Stats()
		if _, err := vs.CreateSnapshot(s.volume, rig.SourceRegion+"a", map[string]string{"velero.io/backup": fmt.Sprintf("b%d", i)}); err != nil {
			t.Fatalf("step %d: snapshot of account %s's volume: %v", i, s.account, err)
		}
		after := srv.Sim.Stats()
		for _, other := range []string{isolationA, isolationB, "unknown"} {
			if n := after.Accounts[other].Total("", "") - before.Accounts[other].Total("", ""); other != s.account && n != 0 {
				t.Errorf("step %d, account %s's volume: %d requests signed as %s", i, s.account, n, other)
			}
		}
	}
}

// A rotated key takes effect at the next call: the credentials file is rewritten in place with
// a new key (the old one revoked), and the next call signs with the new one, for the volume
// snapshotter (at its next Init) and for the clients the item actions use (at the next call).
func TestRotatedCredentialsTakeEffectAtTheNextCall(t *testing.T) {
	_, volA, _ := twoAccounts(t)
	path := filepath.Join(t.TempDir(), "credentials")
	t.Run("volume snapshotter", func(t *testing.T) {
		vs := volumeSnapshotter(t, logrus.New())
		config := map[string]string{model.ConfigRegion: rig.SourceRegion, model.ConfigCredentialsFile: path}
		write(t, path, revokedKey.CredentialsFile())
		if err := vs.Init(config); err != nil {
			t.Fatal(err)
		}
		if _, _, err := vs.GetVolumeInfo(volA, ""); err == nil || !strings.Contains(err.Error(), "AuthFailure") {
			t.Fatalf("with the revoked key: %v, want AuthFailure", err)
		}
		write(t, path, isolationKeyA.CredentialsFile())
		if err := vs.Init(config); err != nil {
			t.Fatal(err)
		}
		if _, _, err := vs.GetVolumeInfo(volA, ""); err != nil {
			t.Errorf("after the rotation: %v", err)
		}
	})
	t.Run("item actions' clients", func(t *testing.T) {
		f := ec2api.NewFactory()
		describe := func() error {
			c, err := f.Client(context.Background(), rig.SourceRegion, ec2api.Credentials{File: path})
			if err == nil {
				_, err = c.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{VolumeIds: []string{volA}}, ec2api.Bounded)
			}
			return err
		}
		write(t, path, revokedKey.CredentialsFile())
		if err := describe(); ec2api.Code(err) != "AuthFailure" {
			t.Fatalf("with the revoked key: %v, want AuthFailure", err)
		}
		write(t, path, isolationKeyA.CredentialsFile())
		if err := describe(); err != nil {
			t.Errorf("after the rotation: %v", err)
		}
	})
}

// A secret put under a config key the plugin does not know is named by its key only: neither
// Init's error, which Velero records in the backup's log, nor the plugin's own log echo it.
func TestMisplacedSecretIsNotEchoed(t *testing.T) {
	twoAccounts(t)
	secret := randomSecret(t, 40)
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	vs := volumeSnapshotter(t, log)
	for _, key := range []string{"awsSecretAccessKey", "aws_secret_access_key", "secretAccessKey"} {
		err := vs.Init(map[string]string{model.ConfigRegion: rig.SourceRegion, key: secret})
		if err == nil || !strings.Contains(err.Error(), `"`+key+`"`) {
			t.Errorf("Init with %s: %v, want an error naming the key", key, err)
		}
		if err != nil && strings.Contains(err.Error(), secret[:12]) {
			t.Errorf("Init with %s: the error echoes the value: %v", key, err)
		}
	}
	for _, e := range hook.AllEntries() {
		if line, _ := e.String(); strings.Contains(line, secret[:12]) {
			t.Errorf("logged the value: %s", line)
		}
	}
}
