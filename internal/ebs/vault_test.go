package ebs_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The vault flow against the simulator's two accounts: the source account shares each completed
// snapshot with the vault account, the vault account copies and locks it, the share is removed,
// and only then does the operation complete; deletion keeps a locked vault copy.

const (
	sourceAccount = "111111111111"
	vaultAccount  = "222222222222"
	sourceRegion  = "us-east-1"
	vaultRegion   = "us-west-2"
	vaultBackup   = "nightly"
	vaultUID      = "uid-nightly"
	pvName        = "pv-vault"
	// grantedKey may be used by the vault account; privateKey only by the source account.
	grantedKey = "arn:aws:kms:us-east-1:111111111111:key/11111111-1111-1111-1111-111111111111"
	privateKey = "arn:aws:kms:us-east-1:111111111111:key/22222222-2222-2222-2222-222222222222"
)

var keys = map[string][2]string{
	sourceAccount: {"AKIASOURCEACCOUNT000", "source-secret"},
	vaultAccount:  {"AKIAVAULTACCOUNT0000", "vault-secret"},
}

// vaultWorld is the simulator with both accounts on a fake clock, and the EC2 clients of each.
type vaultWorld struct {
	t      *testing.T
	clk    *clocktesting.FakeClock
	sim    *ec2sim.Simulator
	source ec2api.Regional
	vault  ec2api.Regional
}

func newVaultWorld(t *testing.T, faults ec2sim.Faults) *vaultWorld {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	cfg := ec2sim.Config{
		Unthrottled:      true,
		SnapshotDuration: ec2sim.Range(10*time.Second, 10*time.Second),
		CopyDuration:     ec2sim.Range(20*time.Second, 20*time.Second),
		KMSKeys:          []ec2sim.KMSKey{{ARN: grantedKey, GrantAccounts: []string{vaultAccount}}, {ARN: privateKey}},
		Faults:           faults,
		Seed:             7,
	}
	for _, id := range []string{sourceAccount, vaultAccount} {
		cfg.Accounts = append(cfg.Accounts, ec2sim.Account{ID: id, AccessKeys: []ec2sim.AccessKey{{AccessKeyID: keys[id][0], SecretAccessKey: keys[id][1]}}})
	}
	srv, err := ec2sim.Start(cfg, ec2sim.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	w := &vaultWorld{t: t, clk: clk, sim: srv.Sim}
	w.source, w.vault = w.clients(srv.URL, sourceAccount), w.clients(srv.URL, vaultAccount)
	return w
}

func (w *vaultWorld) clients(url, account string) ec2api.Regional {
	return func(_ context.Context, region string) (ec2api.EC2, error) {
		return ec2.New(ec2.Options{
			Region: region, BaseEndpoint: aws.String(url),
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: keys[account][0], SecretAccessKey: keys[account][1]}, nil
			}),
		}), nil
	}
}

func (w *vaultWorld) opts() []ebs.Option {
	log := logrus.New()
	log.Out = io.Discard
	return []ebs.Option{ebs.WithClock(w.clk), ebs.WithLogger(log), ebs.WithVaultClients(w.vault)}
}

// snapshot takes a snapshot of a new volume in the source account, as Velero asks for it, and
// returns the operation that follows it.
func (w *vaultWorld) snapshot(cfg ebs.Config, vol ec2sim.VolumeSpec) (snapID, opID string) {
	w.t.Helper()
	vol.AvailabilityZone = sourceRegion + "a"
	volID := w.sim.AddVolumesTo(sourceAccount, sourceRegion, vol)[0]
	handoff := ebs.NewHandoff(w.clk)
	handoff.Put(vaultBackup, pvName, volID, vaultUID)
	op := ebs.Operation{Region: sourceRegion, VolumeID: volID, Issued: w.clk.Now(), PV: pvName}
	s := ebs.NewSnapshotter(cfg, w.source, append(w.opts(), ebs.WithHandoff(handoff))...)
	id, err := s.CreateSnapshot(context.Background(), volID, map[string]string{ebs.TagBackup: vaultBackup, ebs.TagPV: pvName})
	if err != nil {
		w.t.Fatalf("CreateSnapshot: %v", err)
	}
	return id, op.String()
}

// maxProgressCalls bounds the Progress calls of one operation: 10 minutes of fake time.
const maxProgressCalls = 60

// follow calls Progress every 10 s of fake time until the operation completes, with a new
// Tracker (a new plugin process) before every call when restart is set; it returns every
// description seen and the last progress.
func (w *vaultWorld) follow(opID string, restart bool) ([]string, velero.OperationProgress) {
	w.t.Helper()
	backup := &velerov1.Backup{}
	backup.Name, backup.UID = vaultBackup, vaultUID
	backup.Status.Phase = velerov1.BackupPhaseWaitingForPluginOperations
	backup.Status.VolumeSnapshotsAttempted, backup.Status.VolumeSnapshotsCompleted = 1, 1
	tr := ebs.NewTracker(w.source, w.opts()...)
	var seen []string
	for range maxProgressCalls {
		if restart {
			tr = ebs.NewTracker(w.source, w.opts()...)
		}
		p, err := tr.Progress(context.Background(), opID, backup)
		if err != nil {
			w.t.Fatalf("Progress: %v", err)
		}
		seen = append(seen, fmt.Sprintf("%d/%d %s%s", p.NCompleted, p.NTotal, p.Description, p.Err))
		if p.Completed {
			return seen, p
		}
		w.clk.Step(10 * time.Second)
	}
	w.t.Fatalf("operation not completed after 10 minutes: %s", strings.Join(seen, "\n"))
	return nil, velero.OperationProgress{}
}

func vaultConfig(lock ebs.Lock) ebs.Config {
	return ebs.Config{Region: sourceRegion, Vault: ebs.VaultConfig{AccountID: vaultAccount, Profile: "vault", Region: vaultRegion, Lock: lock}}
}

func TestVaultCopyIsSharedCopiedLockedAndUnshared(t *testing.T) {
	dayLock := ebs.Lock{Mode: ebs.LockModeGovernance, Days: 1}
	tests := []struct {
		name    string
		lock    ebs.Lock
		vol     ec2sim.VolumeSpec
		restart bool
		faults  ec2sim.Faults
		// wantErr, when set, is a substring of the operation's error; the operation must
		// succeed otherwise.
		wantErr []string
	}{
		{name: "locked vault copy", lock: dayLock},
		{name: "locked vault copy, a new process every call", lock: dayLock, restart: true},
		{name: "no lock", vol: ec2sim.VolumeSpec{}},
		{name: "answers lost after sharing, copying and locking took effect", lock: dayLock, restart: true,
			faults: ec2sim.Faults{DropAfterEffectRate: 1, DropActions: []string{"ModifySnapshotAttribute", "CopySnapshot", "LockSnapshot"}}},
		{name: "customer key granted to the vault", lock: dayLock, vol: ec2sim.VolumeSpec{KmsKeyID: grantedKey}},
		{name: "default aws/ebs key cannot be shared", vol: ec2sim.VolumeSpec{Encrypted: true},
			wantErr: []string{"cannot be shared", "aws/ebs", vaultAccount, "customer managed key"}},
		{name: "customer key the vault may not use", vol: ec2sim.VolumeSpec{KmsKeyID: privateKey}, restart: true,
			wantErr: []string{"vault copy", "failed", privateKey, "key policy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newVaultWorld(t, tt.faults)
			vol := tt.vol
			vol.SizeGiB = 8
			srcID, opID := w.snapshot(vaultConfig(tt.lock), vol)
			seen, p := w.follow(opID, tt.restart)
			log := strings.Join(seen, "\n")
			if st := w.sim.Stats(); len(tt.faults.DropActions) > 0 {
				for _, a := range tt.faults.DropActions {
					if st.Total(a, "ok") == st.Total(a, "") {
						t.Errorf("no answer to %s was lost: the row proves nothing", a)
					}
				}
			}
			if shared := w.sim.SharedSnapshots(sourceAccount); len(shared) > 0 {
				t.Errorf("snapshots left shared with the vault: %+v", shared)
			}
			copies := vaultCopies(w.sim, srcID)
			if len(tt.wantErr) > 0 {
				for _, s := range tt.wantErr {
					if !strings.Contains(p.Err, s) {
						t.Errorf("error %q does not name %q", p.Err, s)
					}
				}
				return
			}
			if p.Err != "" || p.NCompleted != p.NTotal || p.NTotal != 200 {
				t.Fatalf("operation ended %d/%d with error %q:\n%s", p.NCompleted, p.NTotal, p.Err, log)
			}
			if len(copies) != 1 {
				t.Fatalf("%d vault copies of %s, want 1: %+v", len(copies), srcID, copies)
			}
			c := copies[0]
			if c.State != "completed" || c.Tags[ebs.TagBackup] != vaultBackup || c.Tags[ebs.TagSourceAccount] != sourceAccount {
				t.Errorf("vault copy %+v: want completed, tagged with its backup and source account", c)
			}
			for _, step := range []string{"vault copy " + c.ID + " in vault account " + vaultAccount + " in " + vaultRegion} {
				if !strings.Contains(log, step) {
					t.Errorf("no description mentions %q:\n%s", step, log)
				}
			}
			if tt.lock.Mode != "" {
				if c.LockState != string(tt.lock.Mode) {
					t.Errorf("vault copy lock state %q, want %q", c.LockState, tt.lock.Mode)
				}
				if !strings.Contains(p.Description, "locked (governance, 1 days)") {
					t.Errorf("completion %q does not say the copy is locked", p.Description)
				}
			} else if c.LockState != "" {
				t.Errorf("vault copy locked (%s) though no lock was asked for", c.LockState)
			}
		})
	}
}

// vaultCopies are the vault account's copies of a source.
func vaultCopies(sim *ec2sim.Simulator, sourceID string) []ec2sim.Snapshot {
	var out []ec2sim.Snapshot
	for _, s := range sim.SnapshotsIn(vaultAccount, vaultRegion) {
		if s.SourceSnapshotID == sourceID {
			out = append(out, s)
		}
	}
	return out
}

func TestDeletingABackupKeepsLockedVaultCopies(t *testing.T) {
	tests := []struct {
		name     string
		lock     ebs.Lock
		retain   bool
		wantKept bool
	}{
		{name: "unlocked copy is deleted"},
		{name: "locked copy is kept", lock: ebs.Lock{Mode: ebs.LockModeCompliance, Days: 1}, wantKept: true},
		{name: "retained copy is kept", retain: true, wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newVaultWorld(t, ec2sim.Faults{})
			cfg := vaultConfig(tt.lock)
			cfg.Vault.RetainOnDelete = tt.retain
			srcID, opID := w.snapshot(cfg, ec2sim.VolumeSpec{SizeGiB: 8})
			if _, p := w.follow(opID, false); p.Err != "" {
				t.Fatalf("backup failed: %s", p.Err)
			}
			s := ebs.NewSnapshotter(cfg, w.source, w.opts()...)
			if err := s.DeleteSnapshot(context.Background(), srcID); err != nil {
				t.Fatalf("DeleteSnapshot: %v (a kept vault copy is no failure)", err)
			}
			if left := w.sim.SnapshotsIn(sourceAccount, sourceRegion); len(left) != 0 {
				t.Errorf("source account keeps %d snapshots", len(left))
			}
			copies := vaultCopies(w.sim, srcID)
			switch {
			case tt.wantKept && (len(copies) != 1 || copies[0].Tags[ebs.TagBackupDeletedAt] == ""):
				t.Errorf("vault copies %+v: want the one copy kept, tagged %s", copies, ebs.TagBackupDeletedAt)
			case !tt.wantKept && len(copies) != 0:
				t.Errorf("vault copies %+v left after deletion", copies)
			}
		})
	}
}
