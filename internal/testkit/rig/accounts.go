package rig

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
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
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/tracking"
)

// The accounts of Accounts and their access keys.
const (
	SourceAccount = "111111111111"
	VaultAccount  = "222222222222"
)

// accountKeys are the accounts' access keys: the source account's are those plugin processes
// find in their environment (UseEndpoint).
var accountKeys = map[string]ec2sim.AccessKey{
	SourceAccount: harnessKey,
	VaultAccount:  {AccessKeyID: "AKIAVAULTACCOUNT0000", SecretAccessKey: "vault-secret"},
}

// WithAccounts returns cfg with the source account (the default one, which seeded volumes
// belong to) and the vault account added, authentication on, each allowed only the given EC2
// actions when not empty.
func WithAccounts(cfg ec2sim.Config, sourceAllowed, vaultAllowed []string) ec2sim.Config {
	cfg.Accounts = nil
	for _, a := range []struct {
		id      string
		allowed []string
	}{{SourceAccount, sourceAllowed}, {VaultAccount, vaultAllowed}} {
		cfg.Accounts = append(cfg.Accounts, ec2sim.Account{ID: a.id, AccessKeys: []ec2sim.AccessKey{accountKeys[a.id]}, AllowedActions: a.allowed})
	}
	return cfg
}

// Accounts is the simulator with a source account and a vault account, authentication on and
// time on a fake clock, with EC2 clients signing as each: for in-process tests of the plugin's
// logic across accounts.
type Accounts struct {
	Clock *clocktesting.FakeClock
	Sim   *ec2sim.Simulator
	// URL is the simulator's endpoint, for EC2, STS and EKS Pod Identity.
	URL string
	// Source and Vault reach EC2 as each account.
	Source, Vault ec2api.Regional
}

// NewAccounts starts the simulator of cfg with both accounts added (allowed, when not empty,
// the actions of sourceAllowed and vaultAllowed) and stops it when the test ends.
func NewAccounts(t testing.TB, cfg ec2sim.Config, sourceAllowed, vaultAllowed []string) *Accounts {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	srv, err := ec2sim.Start(WithAccounts(cfg, sourceAllowed, vaultAllowed), ec2sim.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &Accounts{Clock: clk, Sim: srv.Sim, URL: srv.URL, Source: SigningAs(srv.URL, SourceAccount), Vault: SigningAs(srv.URL, VaultAccount)}
}

// SigningAs returns clients of the simulator at url that sign as the account (SourceAccount
// or VaultAccount).
func SigningAs(url, account string) ec2api.Regional {
	return func(_ context.Context, region string) (ec2api.EC2, error) { return ClientAs(url, account, region), nil }
}

// ClientAs is an EC2 client of the simulator at url in region signing as the account.
func ClientAs(url, account, region string) *ec2.Client {
	key := accountKeys[account]
	return ec2.New(ec2.Options{
		Region: region, BaseEndpoint: aws.String(url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey}, nil
		}),
	})
}

// The backup and PV of the operations Accounts runs.
const (
	AccountsBackup = "nightly"
	accountsUID    = "uid-nightly"
	accountsPV     = "pv-vault"
	// maxProgressCalls bounds the Progress calls of one operation: 10 minutes of fake time.
	maxProgressCalls = 60
	// progressEvery is the fake time between two Progress calls.
	progressEvery = 10 * time.Second
)

// Options are the options of the plugin's types in the accounts: the fake clock, a quiet log,
// and the vault account's clients.
func (a *Accounts) Options() []ebs.Option {
	log := logrus.New()
	log.Out = io.Discard
	return []ebs.Option{ebs.WithClock(a.Clock), ebs.WithLogger(log), ebs.WithVaultClients(a.Vault)}
}

// Snapshot takes a snapshot of a new volume of the source account in region, as Velero asks
// the plugin for it under cfg, and returns the snapshot and the operation following it.
func (a *Accounts) Snapshot(cfg model.Config, region string, vol ec2sim.VolumeSpec) (snapID, opID string, err error) {
	vol.AvailabilityZone = region + "a"
	volID := a.Sim.AddVolumesTo(SourceAccount, region, vol)[0]
	handoff := ebs.NewHandoff(a.Clock)
	handoff.Put(AccountsBackup, accountsPV, volID, accountsUID)
	op := model.Operation{Region: region, VolumeID: volID, Issued: a.Clock.Now(), PV: accountsPV}
	s := tracking.NewSnapshotter(cfg, a.Source, append(a.Options(), ebs.WithHandoff(handoff))...)
	id, err := s.CreateSnapshot(context.Background(), volID, map[string]string{model.TagBackup: AccountsBackup, model.TagPV: accountsPV})
	return id, op.String(), err
}

// Follow calls Progress every 10 s of fake time until the operation completes, with a new
// Tracker (a new plugin process) before every call when restart is set; it returns every
// progress seen ("n/total description error") and the last one, and whether it completed
// within 10 minutes.
func (a *Accounts) Follow(opID string, restart bool) (seen []string, last velero.OperationProgress, completed bool) {
	backup := &velerov1.Backup{}
	backup.Name, backup.UID = AccountsBackup, accountsUID
	backup.Status.Phase = velerov1.BackupPhaseWaitingForPluginOperations
	backup.Status.VolumeSnapshotsAttempted, backup.Status.VolumeSnapshotsCompleted = 1, 1
	tr := tracking.NewTracker(a.Source, a.Options()...)
	for range maxProgressCalls {
		if restart {
			tr = tracking.NewTracker(a.Source, a.Options()...)
		}
		p, err := tr.Progress(context.Background(), opID, backup)
		if err != nil {
			p.Err = "Progress returned an error, which fails the operation: " + err.Error()
			p.Completed = true
		}
		seen = append(seen, fmt.Sprintf("%d/%d %s%s", p.NCompleted, p.NTotal, p.Description, p.Err))
		if last = p; p.Completed {
			return seen, last, true
		}
		a.Clock.Step(progressEvery)
	}
	return seen, last, false
}

// VaultCopies are the vault account's copies of a source in region.
func (a *Accounts) VaultCopies(region, sourceID string) []ec2sim.Snapshot {
	var out []ec2sim.Snapshot
	for _, s := range a.Sim.SnapshotsIn(VaultAccount, region) {
		if s.SourceSnapshotID == sourceID {
			out = append(out, s)
		}
	}
	return out
}

// WithoutOwnCredentials points this test process's SDK at the EC2 and STS endpoint url with no
// credentials, profile, shared files or instance metadata of its own, until the test ends: only
// the credentials a test hands the plugin can sign.
func WithoutOwnCredentials(t testing.TB, url string) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_EC2": url, "AWS_ENDPOINT_URL_STS": url, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
	} {
		t.Setenv(k, v)
	}
}
