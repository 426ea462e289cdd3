package audit_test

import (
	"maps"
	"strings"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/audittest"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// vaultBucket is the vault account's bucket the records are replicated to.
const vaultBucket = "velero-vault"

// withVaultBucket is audittest.LocationConfig naming the vault bucket.
func withVaultBucket() map[string]string {
	cfg := maps.Clone(audittest.LocationConfig)
	cfg[model.ConfigVaultBucket] = vaultBucket
	return cfg
}

// replicated puts a backup's record into the vault bucket, as replication does.
func replicated(t *testing.T, w *audittest.World, backup string) {
	t.Helper()
	for _, f := range []string{"velero-backup.json", backup + "-volumesnapshots.json.gz"} {
		if err := w.Srv.Sim.PutObject(vaultBucket, "backups/"+backup+"/"+f, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
}

// Whether each backup restores without its source account: its vault copies completed and
// locked, and its record in the vault bucket. What was not read is unknown, never restorable.
func TestVaultRestorable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []audittest.Option
		outcome audittest.Outcome
		// noRecord leaves the record out of the vault bucket; noBucket makes no bucket.
		noRecord, noBucket bool
		restorable         bool
		unknown, why       string // substrings; "" for none
		exit               int
	}{
		{name: "vault copies completed and locked, the record in the vault bucket: vault-restorable", restorable: true, exit: audit.ExitOK},
		{name: "the record not yet in the vault bucket: not vault-restorable", noRecord: true,
			why: "no record of it in vault bucket velero-vault under backups/", exit: audit.ExitFindings},
		{name: "a vault copy missing: not vault-restorable", outcome: audittest.Outcome{Vault: "missing"},
			why: "vault 222222222222 us-west-2: 0 completed, 1 missing", exit: audit.ExitFindings},
		{name: "a vault copy not locked though asked: not vault-restorable", outcome: audittest.Outcome{Unlocked: true},
			why: "1 of 1 vault copies not locked", exit: audit.ExitFindings},
		{name: "the vault bucket not read: unknown, never restorable", noBucket: true,
			unknown: "vault bucket velero-vault could not be read", exit: audit.ExitError},
		{name: "the vault account's snapshots not read: unknown, never restorable",
			opts:    []audittest.Option{audittest.WithAllowed(nil, []string{"CopySnapshot", "CreateTags", "LockSnapshot"})},
			unknown: "vault 222222222222 us-west-2", exit: audit.ExitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := audittest.New(t, tc.opts...)
			w.Cluster(audittest.ClusterAUID, withVaultBucket())
			if !tc.noBucket {
				if err := w.Srv.Sim.CreateBucket(audittest.VaultAccount, vaultBucket, audittest.CopyRegion, &ec2sim.ObjectLock{Mode: "GOVERNANCE", Days: audittest.VaultLockDays}); err != nil {
					t.Fatal(err)
				}
			}
			w.Backup("b1", audittest.ScheduleName, w.Clock.Now(), velerov1.BackupPhaseCompleted, w.Take("b1", w.Vols[0], tc.outcome))
			if !tc.noRecord && !tc.noBucket {
				replicated(t, w, "b1")
			}
			rep := w.Audit(false)
			out := audittest.Text(t, rep)
			if len(rep.Backups) != 1 || rep.Backups[0].AccountLoss == nil {
				t.Fatalf("backups %+v: want b1 judged for the loss of its account\n%s", rep.Backups, out)
			}
			l := rep.Backups[0].AccountLoss
			if l.Restorable != tc.restorable || !strings.Contains(l.Unknown, tc.unknown) || !strings.Contains(l.Why, tc.why) ||
				(tc.unknown == "") != (l.Unknown == "") || (tc.why == "") != (l.Why == "") {
				t.Errorf("%+v, want restorable %v, unknown %q, why %q\n%s", *l, tc.restorable, tc.unknown, tc.why, out)
			}
			if rep.Exit() != tc.exit {
				t.Errorf("exit %d, want %d\n%s", rep.Exit(), tc.exit, out)
			}
			var point *audit.RecoveryPoint
			for i, p := range rep.RecoveryPoints {
				if p.Place == "without the source account" {
					point = &rep.RecoveryPoints[i]
				}
			}
			switch {
			case point == nil:
				t.Errorf("no recovery point without the source account: %+v", rep.RecoveryPoints)
			case tc.restorable && point.Backup != "b1", !tc.restorable && point.Backup != "",
				tc.unknown != "" && point.Unknown == "":
				t.Errorf("recovery point %+v, want b1 only when vault-restorable, unknown when b1 is\n%s", *point, out)
			}
		})
	}
}

// A location without vaultBucket makes no claim about the loss of its account.
func TestNoVaultBucketNoAccountLossLine(t *testing.T) {
	w := audittest.New(t)
	w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
	w.Backup("b1", "", w.Clock.Now(), velerov1.BackupPhaseCompleted, w.Take("b1", w.Vols[0], audittest.Outcome{}))
	rep := w.Audit(false)
	if len(rep.Backups) != 1 || rep.Backups[0].AccountLoss != nil || strings.Contains(audittest.Text(t, rep), "without the source account") {
		t.Errorf("backups %+v: want no judgement of the loss of the account without a vault bucket", rep.Backups)
	}
}
