package explore

import (
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
)

// TestVaultRestorable plays a healthy backup with a vault bucket to its end and audits it: the
// verdict without the source account follows the record's replication and the bucket's answer,
// and no promise breaks.
func TestVaultRestorable(t *testing.T) {
	tests := []struct {
		name  string
		lag   time.Duration
		fault string
		// want is the verdict: restorable, or the start of why not or of what is unknown;
		// point whether the recovery point without the source account names the backup.
		want  audit.AccountLoss
		point bool
	}{
		{name: "record replicated: vault-restorable, and the recovery point", want: audit.AccountLoss{Restorable: true}, point: true},
		{name: "record within RTC's 15 minutes, arrived by the audit: vault-restorable", lag: 15 * time.Minute, want: audit.AccountLoss{Restorable: true}, point: true},
		{name: "record not replicated yet: not vault-restorable, no record", lag: 24 * time.Hour, want: audit.AccountLoss{Why: "no record of it in vault bucket velero-vault"}},
		{name: "replication broken: not vault-restorable, no record", lag: recordsNeverArrive, want: audit.AccountLoss{Why: "no record of it in vault bucket velero-vault"}},
		{name: "vault bucket refusing the audit: unknown", fault: vaultBucketRefused, want: audit.AccountLoss{Unknown: "vault bucket velero-vault could not be read: "}},
		{name: "vault bucket throttling the audit: unknown", fault: vaultBucketThrottled, want: audit.AccountLoss{Unknown: "vault bucket velero-vault could not be read: "}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := newWorld(onePV(setup{vault: true, vaultRegion: farRegion, lock: true, vaultCredsOf: vaultAccount, vaultAccountID: vaultAccount,
				vaultBucket: true, recordLag: tt.lag, timeout: dayTimeout, seed: int64(80 + i)}))
			if err != nil {
				t.Fatal(err)
			}
			w.runAll()
			w.pollUntilEnded()
			w.advance(time.Hour)
			w.vaultBucketFault = tt.fault
			rep := w.deleteOrphans("", audit.DefaultOrphanGrace, true)
			trace := strings.Join(w.trace, "\n")
			for _, v := range w.violations {
				t.Errorf("%s\n%s", v, trace)
			}
			var got audit.AccountLoss
			for _, b := range rep.Backups {
				if b.Name == backupName && b.AccountLoss != nil {
					got = *b.AccountLoss
				}
			}
			if got.Restorable != tt.want.Restorable || !strings.HasPrefix(got.Why, tt.want.Why) || !strings.HasPrefix(got.Unknown, tt.want.Unknown) ||
				tt.want.Why == "" && got.Why != "" || tt.want.Unknown == "" && got.Unknown != "" {
				t.Errorf("verdict %+v, want %+v\n%s", got, tt.want, trace)
			}
			named := false
			for _, p := range rep.RecoveryPoints {
				named = named || p.Place == accountLossPlace && p.Backup == backupName
			}
			if named != tt.point {
				t.Errorf("recovery point without the source account names the backup: %v, want %v (%+v)", named, tt.point, rep.RecoveryPoints)
			}
		})
	}
}
