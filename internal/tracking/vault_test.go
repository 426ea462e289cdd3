package tracking_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/deleting"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
	"github.com/velero-async/velero-plugin-for-aws/internal/tracking"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
)

// The vault flow against the simulator's two accounts: the source account shares each completed
// snapshot with the vault account, the vault account copies and locks it, the share is removed,
// and only then does the operation complete; deletion keeps a locked vault copy.

const (
	sourceAccount = rig.SourceAccount
	vaultAccount  = rig.VaultAccount
	sourceRegion  = "us-east-1"
	vaultRegion   = "us-west-2"
	// grantedKey may be used by the vault account; privateKey only by the source account.
	grantedKey = "arn:aws:kms:us-east-1:111111111111:key/11111111-1111-1111-1111-111111111111"
	privateKey = "arn:aws:kms:us-east-1:111111111111:key/22222222-2222-2222-2222-222222222222"
)

// newVaultWorld is both accounts, with a customer key granted to the vault and one not.
func newVaultWorld(t *testing.T, faults ec2sim.Faults) *rig.Accounts {
	t.Helper()
	return rig.NewAccounts(t, ec2sim.Config{
		Unthrottled:      true,
		SnapshotDuration: ec2sim.Range(10*time.Second, 10*time.Second),
		CopyDuration:     ec2sim.Range(20*time.Second, 20*time.Second),
		KMSKeys:          []ec2sim.KMSKey{{ARN: grantedKey, GrantAccounts: []string{vaultAccount}}, {ARN: privateKey}},
		Faults:           faults,
		Seed:             7,
	}, nil, nil)
}

func vaultConfig(lock model.Lock) model.Config {
	return model.Config{Region: sourceRegion, Vault: model.VaultConfig{AccountID: vaultAccount, Profile: "vault", Region: vaultRegion, Lock: lock}}
}

func TestVaultCopyIsSharedCopiedLockedAndUnshared(t *testing.T) {
	dayLock := model.Lock{Mode: model.LockModeGovernance, Days: 1}
	tests := []struct {
		name    string
		lock    model.Lock
		vol     ec2sim.VolumeSpec
		restart bool
		// foreign, when set, puts in the vault first another cluster's vault copy for a backup of
		// the same name, from the same source region: it must be left as it is.
		foreign bool
		faults  ec2sim.Faults
		// wantErr, when set, is a substring of the operation's error; the operation must
		// succeed otherwise.
		wantErr []string
	}{
		{name: "locked vault copy", lock: dayLock},
		{name: "locked vault copy, a new process every call", lock: dayLock, restart: true},
		{name: "no lock", vol: ec2sim.VolumeSpec{}},
		{name: "another cluster's vault copy of a backup of the same name", lock: dayLock, foreign: true},
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
			foreignID := ""
			if tt.foreign {
				foreignID = foreignVaultCopy(t, w)
			}
			vol := tt.vol
			vol.SizeGiB = 8
			srcID, opID, err := w.Snapshot(vaultConfig(tt.lock), sourceRegion, vol)
			if err != nil {
				t.Fatalf("CreateSnapshot: %v", err)
			}
			seen, p, completed := w.Follow(opID, tt.restart)
			log := strings.Join(seen, "\n")
			if !completed {
				t.Fatalf("operation not completed:\n%s", log)
			}
			if st := w.Sim.Stats(); len(tt.faults.DropActions) > 0 {
				for _, a := range tt.faults.DropActions {
					if st.Total(a, "ok") == st.Total(a, "") {
						t.Errorf("no answer to %s was lost: the row proves nothing", a)
					}
				}
			}
			if shared := w.Sim.SharedSnapshots(sourceAccount); len(shared) > 0 {
				t.Errorf("snapshots left shared with the vault: %+v", shared)
			}
			copies := w.VaultCopies(vaultRegion, srcID)
			if foreignID != "" {
				for _, f := range w.Sim.SnapshotsIn(vaultAccount, vaultRegion) {
					if f.ID == foreignID && (f.LockState != "" || f.Tags[model.TagBackupDeletedAt] != "" || f.State != "completed") {
						t.Errorf("another cluster's vault copy %s was touched: %+v", f.ID, f)
					}
				}
			}
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
			if c.State != "completed" || c.Tags[model.TagBackup] != rig.AccountsBackup || c.Tags[model.TagSourceAccount] != sourceAccount {
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
				if !strings.Contains(p.Description, "locked (governance, 1 day)") {
					t.Errorf("completion %q does not say the copy is locked", p.Description)
				}
			} else if c.LockState != "" {
				t.Errorf("vault copy locked (%s) though no lock was asked for", c.LockState)
			}
		})
	}
}

func TestDeletingABackupKeepsLockedVaultCopies(t *testing.T) {
	tests := []struct {
		name     string
		lock     model.Lock
		retain   bool
		wantKept bool
	}{
		{name: "unlocked copy is deleted"},
		{name: "locked copy is kept", lock: model.Lock{Mode: model.LockModeCompliance, Days: 1}, wantKept: true},
		{name: "retained copy is kept", retain: true, wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newVaultWorld(t, ec2sim.Faults{})
			cfg := vaultConfig(tt.lock)
			cfg.Vault.RetainOnDelete = tt.retain
			srcID := completedVaultBackup(t, w, cfg)
			s := deleting.NewDeleter(cfg, w.Source, w.Options()...)
			if err := s.DeleteSnapshot(context.Background(), srcID); err != nil {
				t.Fatalf("DeleteSnapshot: %v (a kept vault copy is no failure)", err)
			}
			if left := w.Sim.SnapshotsIn(sourceAccount, sourceRegion); len(left) != 0 {
				t.Errorf("source account keeps %d snapshots", len(left))
			}
			copies := w.VaultCopies(vaultRegion, srcID)
			switch {
			case tt.wantKept && (len(copies) != 1 || copies[0].Tags[model.TagBackupDeletedAt] == ""):
				t.Errorf("vault copies %+v: want the one copy kept, tagged %s", copies, model.TagBackupDeletedAt)
			case !tt.wantKept && len(copies) != 0:
				t.Errorf("vault copies %+v left after deletion", copies)
			}
		})
	}
}

// foreignVaultCopy makes, in the vault account and region, a completed snapshot tagged as a vault
// copy for another cluster's backup of the same name from the same source region, as that
// cluster's plugin would have; it returns its ID.
func foreignVaultCopy(t *testing.T, w *rig.Accounts) string {
	t.Helper()
	ctx := context.Background()
	vol := w.Sim.AddVolumesTo(vaultAccount, vaultRegion, ec2sim.VolumeSpec{AvailabilityZone: vaultRegion + "a", SizeGiB: 8})[0]
	c, err := w.Vault(ctx, vaultRegion)
	if err != nil {
		t.Fatal(err)
	}
	tags := []types.Tag{}
	for k, v := range map[string]string{model.TagBackup: rig.AccountsBackup, model.TagBackupUID: "uid-of-another-cluster",
		model.TagSourceSnapshotID: "snap-0f0f0f0f0f0f0f0f0", model.TagSourceRegion: sourceRegion, model.TagVaultLock: "governance:1"} {
		tags = append(tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tags}}})
	if err != nil {
		t.Fatal(err)
	}
	w.Clock.Step(time.Minute) // completed before the backup starts
	return aws.ToString(out.SnapshotId)
}

// A vaultAccountId that is not the vault credentials' account: the vault account cannot see
// the share, and the operation fails saying so once EC2's listing lag has passed since the
// source was first shared, not at Velero's item-operation timeout.
func TestVaultCopyToAWrongVaultAccountFailsAfterTheListingLag(t *testing.T) {
	w := newVaultWorld(t, ec2sim.Faults{})
	cfg := vaultConfig(model.Lock{})
	cfg.Vault.AccountID = "333333333333"
	_, opID, err := w.Snapshot(cfg, sourceRegion, ec2sim.VolumeSpec{SizeGiB: 8})
	if err != nil {
		t.Fatalf("CreateSnapshot: %v", err)
	}
	seen, p, completed := w.Follow(opID, true)
	if !completed {
		t.Fatalf("operation still waiting after 10 minutes:\n%s", strings.Join(seen, "\n"))
	}
	for _, s := range []string{"cannot see the snapshot shared with account 333333333333", model.ConfigVaultAccountID} {
		if !strings.Contains(p.Err, s) {
			t.Errorf("error %q does not name %q", p.Err, s)
		}
	}
	if len(seen) > 8 {
		t.Errorf("failed after %d Progress calls, want within about the listing lag:\n%s", len(seen), strings.Join(seen, "\n"))
	}
	if shared := w.Sim.SharedSnapshots(sourceAccount); len(shared) > 0 {
		t.Errorf("snapshots left shared: %+v", shared)
	}
}

// placesLocator finds every backup's operations in its places.
type placesLocator []ebs.Place

func (l placesLocator) BackupPlaces(context.Context, *velerov1.Backup, string) ([]ebs.Place, error) {
	return l, nil
}

func (l placesLocator) RestorePlaces(context.Context, *velerov1.Restore, string) ([]ebs.Place, error) {
	return l, nil
}

// Vault credentials that are the source account's (the vault Secret holds the cluster's own
// keys, or vaultProfile assumes a role in the source account), with vaultRegion the copy
// region: no copy is taken for the vault copy, nothing stays shared, and the operation fails
// naming both accounts. STS's answer is waited for when it does not come.
func TestAVaultCopyIsOnlyEverInTheVaultAccount(t *testing.T) {
	stsDown := errors.New("dial tcp: connection refused")
	tests := []struct {
		name string
		// identity is what STS says of the vault credentials; nil: not asked.
		identity func(context.Context) (string, error)
		// copyRegion is the location's copyToRegion.
		copyRegion string
		wantErr    []string
		wantWait   string
	}{
		{name: "STS names the source account", identity: func(context.Context) (string, error) { return sourceAccount, nil }, copyRegion: vaultRegion,
			wantErr: []string{"account " + sourceAccount, "not of vault account " + vaultAccount}},
		{name: "without STS, the copies the vault credentials list are the source account's", copyRegion: vaultRegion,
			wantErr: []string{"account " + sourceAccount, "not of vault account " + vaultAccount}},
		{name: "STS does not answer", identity: func(context.Context) (string, error) { return "", stsDown },
			wantWait: "waiting to confirm the account of the credentials for vault account " + vaultAccount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newVaultWorld(t, ec2sim.Faults{})
			cfg := vaultConfig(model.Lock{Mode: model.LockModeGovernance, Days: 1})
			cfg.CopyToRegion = tt.copyRegion
			srcID, opID, err := w.Snapshot(cfg, sourceRegion, ec2sim.VolumeSpec{SizeGiB: 8})
			if err != nil {
				t.Fatalf("CreateSnapshot: %v", err)
			}
			loc := placesLocator{{Location: "default", Clients: w.Source, Vault: w.Source, VaultIdentity: tt.identity}}
			tr := tracking.NewTracker(w.Source, append(w.Options(), ebs.WithLocator(loc))...)
			backup := &velerov1.Backup{}
			backup.Name, backup.UID = rig.AccountsBackup, "uid-nightly"
			backup.Status.VolumeSnapshotsAttempted, backup.Status.VolumeSnapshotsCompleted = 1, 1
			var p velero.OperationProgress
			var seen []string
			for range 30 {
				if p, err = tr.Progress(context.Background(), opID, backup); err != nil {
					t.Fatal(err)
				}
				seen = append(seen, p.Description+p.Err)
				if p.Completed {
					break
				}
				w.Clock.Step(10 * time.Second)
			}
			log := strings.Join(seen, "\n")
			if tt.wantWait != "" {
				if p.Completed || !strings.Contains(p.Description, tt.wantWait) {
					t.Errorf("want the operation waiting with %q:\n%s", tt.wantWait, log)
				}
			} else {
				if !p.Completed {
					t.Fatalf("operation not completed:\n%s", log)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(p.Err, s) {
						t.Errorf("error %q does not name %q", p.Err, s)
					}
				}
			}
			if n := len(w.VaultCopies(vaultRegion, srcID)); n != 0 {
				t.Errorf("%d vault copies; the vault credentials are not the vault's", n)
			}
			for _, s := range w.Sim.SnapshotsIn(sourceAccount, vaultRegion) {
				if s.LockState != "" {
					t.Errorf("snapshot %s of the source account locked as a vault copy", s.ID)
				}
			}
			if shared := w.Sim.SharedSnapshots(sourceAccount); len(shared) > 0 {
				t.Errorf("snapshots left shared: %+v", shared)
			}
		})
	}
}

// completedVaultBackup backs up a new 8 GiB volume in the source region with cfg and follows
// its operation until it completes without error (vault copy made); it returns the source's ID.
func completedVaultBackup(t *testing.T, w *rig.Accounts, cfg model.Config) string {
	t.Helper()
	srcID, opID, err := w.Snapshot(cfg, sourceRegion, ec2sim.VolumeSpec{SizeGiB: 8})
	if err != nil {
		t.Fatalf("CreateSnapshot: %v", err)
	}
	if seen, p, completed := w.Follow(opID, false); !completed || p.Err != "" {
		t.Fatalf("backup did not complete: %+v\n%s", p, strings.Join(seen, "\n"))
	}
	return srcID
}

// A regional copy that fails (a copyKmsKeyId the account may not use in the copy region) fails
// the operation, but not before the vault side has ended cleanly: the vault copy made beside it
// is locked as configured, and the source is no longer shared with the vault account.
func TestAFailedRegionalCopyLeavesTheVaultCopyLockedAndNothingShared(t *testing.T) {
	w := newVaultWorld(t, ec2sim.Faults{})
	cfg := vaultConfig(model.Lock{Mode: model.LockModeGovernance, Days: 1})
	cfg.CopyToRegion, cfg.CopyKMSKeyID = "eu-west-1", privateKey
	srcID, opID, err := w.Snapshot(cfg, sourceRegion, ec2sim.VolumeSpec{SizeGiB: 8})
	if err != nil {
		t.Fatalf("CreateSnapshot: %v", err)
	}
	seen, p, completed := w.Follow(opID, true)
	log := strings.Join(seen, "\n")
	if !completed || !strings.Contains(p.Err, "failed") || !strings.Contains(p.Err, "eu-west-1") {
		t.Fatalf("operation ended (completed=%v) with error %q; want it failed naming the copy into eu-west-1:\n%s", completed, p.Err, log)
	}
	if shared := w.Sim.SharedSnapshots(sourceAccount); len(shared) > 0 {
		t.Errorf("snapshots left shared with the vault once the operation failed: %+v\n%s", shared, log)
	}
	copies := w.VaultCopies(vaultRegion, srcID)
	if len(copies) == 0 {
		t.Fatalf("no vault copy was made: the test proves nothing\n%s", log)
	}
	for _, c := range copies {
		if c.LockState != string(model.LockModeGovernance) {
			t.Errorf("vault copy %s (%s) has lock %q, want governance\n%s", c.ID, c.State, c.LockState, log)
		}
	}
}
