package plugin_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/sirupsen/logrus"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt/process"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Accounts of the credentials tests, and their keys.
const (
	accountA = "111111111111"
	accountB = "222222222222"
)

var (
	keyA = ec2sim.AccessKey{AccessKeyID: "AKIAACCOUNTA00000001", SecretAccessKey: "secret-of-account-a"}
	keyB = ec2sim.AccessKey{AccessKeyID: "AKIAACCOUNTB00000001", SecretAccessKey: "secret-of-account-b"}
)

// completedSnapshot makes a snapshot of a new volume of the key's account in region and waits
// until it completes.
func completedSnapshot(t *testing.T, srv *ec2sim.Server, account string, key ec2sim.AccessKey, region string) string {
	t.Helper()
	vol := srv.Sim.AddVolumesTo(account, region, ec2sim.VolumeSpec{})[0]
	c := ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider(key.AccessKeyID, key.SecretAccessKey, "")})
	out, err := c.CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.SnapshotId)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range srv.Sim.SnapshotsIn(account, region) {
			if s.ID == id && s.State == "completed" {
				return id
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("snapshot %s never completed", id)
	return ""
}

// Velero core writes a location's Secret to <secret>-<key> before each Init: Secret
// "aws-account" key "a" and Secret "aws" key "account-a" share that path. Through Velero's
// plugin client and one plugin process, a restore of account B's PV right after account A's,
// with B's keys just written to the shared path, creates B's volume signing as B only.
func TestRestoreSignsWithTheCredentialsInitWasHanded(t *testing.T) {
	const region = "us-east-1"
	cfg := rig.FastConfig(7)
	cfg.Accounts = []ec2sim.Account{
		{ID: accountA, AccessKeys: []ec2sim.AccessKey{keyA}},
		{ID: accountB, AccessKeys: []ec2sim.AccessKey{keyB}},
	}
	srv, err := ec2sim.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	rig.WithoutOwnCredentials(t, srv.URL)
	snapA := completedSnapshot(t, srv, accountA, keyA, region)
	snapB := completedSnapshot(t, srv, accountB, keyB, region)

	log := logrus.New()
	registry := process.NewRegistry(built.Dir, log, logrus.InfoLevel)
	if err := registry.DiscoverPlugins(); err != nil {
		t.Fatal(err)
	}
	m := clientmgmt.NewManager(log, logrus.InfoLevel, registry)
	defer m.CleanupClients()
	shared := filepath.Join(t.TempDir(), "aws-account-a") // both Secrets' file, as Velero names it
	config := map[string]string{model.ConfigRegion: region, model.ConfigCredentialsFile: shared}
	restores := []struct {
		account  string
		key      ec2sim.AccessKey
		snapshot string
	}{
		{accountA, keyA, snapA},
		{accountB, keyB, snapB},
		{accountA, keyA, snapA},
	}
	for i, r := range restores {
		if err := os.WriteFile(shared, r.key.CredentialsFile(), 0o600); err != nil {
			t.Fatal(err)
		}
		vs, err := m.GetVolumeSnapshotter(model.VolumeSnapshotterName)
		if err != nil {
			t.Fatal(err)
		}
		if err := vs.Init(config); err != nil {
			t.Fatalf("restore %d: Init: %v", i, err)
		}
		before := srv.Sim.Stats()
		volID, err := vs.CreateVolumeFromSnapshot(r.snapshot, "gp3", region+"a", nil)
		if err != nil {
			t.Fatalf("restore %d of account %s's snapshot: %v", i, r.account, err)
		}
		found := false
		for _, v := range srv.Sim.VolumesIn(r.account, region) {
			found = found || v.ID == volID
		}
		if !found {
			t.Errorf("restore %d: volume %s is not in account %s", i, volID, r.account)
		}
		after := srv.Sim.Stats()
		for _, other := range []string{accountA, accountB, "unknown"} {
			if other == r.account {
				continue
			}
			if n := after.Accounts[other].Total("", "") - before.Accounts[other].Total("", ""); n != 0 {
				t.Errorf("restore %d of account %s's PV: %d EC2 calls signed as %s", i, r.account, n, other)
			}
		}
	}
}
