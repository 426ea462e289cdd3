package security

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/vault"
)

// sidVaultRecords is the vault README's statement of the vault credentials on the vault bucket.
const sidVaultRecords = "VaultRecords"

// vaultRecordsActions returns the S3 actions of the vault README's VaultRecords statement.
func vaultRecordsActions(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../vault/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, m := range jsonBlock.FindAllSubmatch(b, -1) {
		var p policy
		if json.Unmarshal(m[1], &p) != nil {
			continue
		}
		for _, s := range p.Statement {
			if s.Sid == sidVaultRecords && s.Effect == "Allow" {
				actions = append(actions, s.Action...)
			}
		}
	}
	if len(actions) == 0 {
		t.Fatalf("no statement %s in internal/vault/README.md", sidVaultRecords)
	}
	return actions
}

// TestVaultRecordsStatementIsExactlyWhatCheckAndAuditRead: with only the VaultRecords
// statement, the vault's credentials read the vault bucket's Object Lock and records (check) and
// its records alone (audit); without any one of its actions the read is refused. The statement
// reads no record's content and writes nothing: holding the cluster's Secrets gives a thief the
// records' names, never their content nor their deletion.
func TestVaultRecordsStatementIsExactlyWhatCheckAndAuditRead(t *testing.T) {
	actions := vaultRecordsActions(t)
	for _, a := range actions {
		if !strings.HasPrefix(a, "s3:") || strings.ContainsAny(a, "*?") || a == "s3:GetObject" ||
			strings.Contains(a, "Put") || strings.Contains(a, "Delete") || strings.Contains(a, "Replicate") {
			t.Errorf("the VaultRecords statement allows %s: it must only list the bucket and read its Object Lock", a)
		}
	}
	const vaultAccount, bucket, region = "222222222222", "velero-vault", "us-west-2"
	key := ec2sim.AccessKey{AccessKeyID: "AKIAVAULTRECORDS", SecretAccessKey: "vault-records-secret"}
	run := func(t *testing.T, allowed []string) (readErr, recordsErr error) {
		srv, err := ec2sim.Start(ec2sim.Config{Accounts: []ec2sim.Account{{ID: vaultAccount, AccessKeys: []ec2sim.AccessKey{key}, AllowedActions: allowed}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		srv.OnlyThis(t)
		dir := t.TempDir()
		file := filepath.Join(dir, "vault")
		if err := os.WriteFile(file, key.CredentialsFile(), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := srv.Sim.CreateBucket(vaultAccount, bucket, region, &ec2sim.ObjectLock{Mode: "GOVERNANCE", Days: 30}); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"velero-backup.json", "b1-volumesnapshots.json.gz"} {
			if err := srv.Sim.PutObject(bucket, "backups/b1/"+f, []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		c, err := vault.Client(ctx, ec2api.NewFactory(), region, ec2api.Credentials{File: file})
		if err != nil {
			t.Fatal(err)
		}
		b := model.VaultBucket{Name: bucket, Region: region}
		got, readErr := vault.Read(ctx, c, b)
		if readErr == nil && (!got.Lock.Enabled || len(got.Records) != 1) {
			readErr = errors.New("read nothing")
		}
		_, recordsErr = vault.ReadRecords(ctx, c, b)
		return readErr, recordsErr
	}
	t.Run("the statement", func(t *testing.T) {
		if readErr, recordsErr := run(t, actions); readErr != nil || recordsErr != nil {
			t.Errorf("check's read: %v; audit's: %v; want both to succeed", readErr, recordsErr)
		}
	})
	for _, denied := range actions {
		t.Run("without "+denied, func(t *testing.T) {
			readErr, recordsErr := run(t, slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return a == denied }))
			var re *vault.ReadError
			if !errors.As(readErr, &re) || re.Problem != vault.Refused {
				t.Errorf("check's read: %v, want it refused", readErr)
			}
			if listed := denied != "s3:ListBucket"; listed != (recordsErr == nil) {
				t.Errorf("audit's read of the records: %v; it needs s3:ListBucket only", recordsErr)
			}
		})
	}
}
