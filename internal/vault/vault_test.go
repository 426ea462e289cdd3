package vault_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/vault"
)

// The source account, the vault account and its roles.
const (
	sourceAccount = "111111111111"
	vaultAccount  = "222222222222"
	vaultRole     = "arn:aws:iam::222222222222:role/velero-vault"
	blindRole     = "arn:aws:iam::222222222222:role/no-s3"
	externalID    = "velero-vault-111111111111"
	vaultRegion   = "us-west-2"
)

var (
	sourceKey = ec2sim.AccessKey{AccessKeyID: "AKIASOURCE", SecretAccessKey: "secret-of-source"}
	vaultKey  = ec2sim.AccessKey{AccessKeyID: "AKIAVAULT", SecretAccessKey: "secret-of-vault"}
)

// world starts a simulator with both accounts, the vault role the source account assumes, and
// points the SDK at it.
func world(t *testing.T) *ec2sim.Server {
	t.Helper()
	srv, err := ec2sim.Start(ec2sim.Config{
		Accounts: []ec2sim.Account{
			{ID: sourceAccount, AccessKeys: []ec2sim.AccessKey{sourceKey}},
			{ID: vaultAccount, AccessKeys: []ec2sim.AccessKey{vaultKey}},
		},
		Roles: []ec2sim.Role{
			{ARN: vaultRole, Trust: ec2sim.Trust{Principals: []string{sourceAccount}, ExternalID: externalID}},
			{ARN: blindRole, Trust: ec2sim.Trust{Principals: []string{sourceAccount}}, AllowedActions: []string{"DescribeSnapshots"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	srv.OnlyThis(t)
	return srv
}

// file writes a credentials file.
func file(t *testing.T, content string) ec2api.Credentials {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return ec2api.Credentials{File: path}
}

// assumedRole is a profile assuming role from the source account's keys, as the README's
// vault-role.ini does from IRSA.
func assumedRole(t *testing.T, role string) ec2api.Credentials {
	return file(t, "[default]\nrole_arn = "+role+"\nexternal_id = "+externalID+"\nrole_session_name = velero-vault\nsource_profile = keys\n\n"+
		"[profile keys]\naws_access_key_id = "+sourceKey.AccessKeyID+"\naws_secret_access_key = "+sourceKey.SecretAccessKey+"\n")
}

// putRecord puts a backup's record into bucket: its Backup, and its volume snapshots unless
// half.
func putRecord(t *testing.T, sim *ec2sim.Simulator, bucket, prefix, name string, half bool) {
	t.Helper()
	files := []string{"velero-backup.json", name + "-logs.gz"}
	if !half {
		files = append(files, name+"-volumesnapshots.json.gz")
	}
	for _, f := range files {
		if err := sim.PutObject(bucket, prefix+"backups/"+name+"/"+f, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRead(t *testing.T) {
	srv := world(t)
	sim := srv.Sim
	governance := &ec2sim.ObjectLock{Mode: "GOVERNANCE", Days: 30}
	for _, b := range []struct {
		account, name, region string
		lock                  *ec2sim.ObjectLock
	}{
		{vaultAccount, "vault-records", vaultRegion, governance},
		{vaultAccount, "vault-unlocked", vaultRegion, nil},
		{vaultAccount, "vault-no-default", vaultRegion, &ec2sim.ObjectLock{}},
		{vaultAccount, "vault-years", vaultRegion, &ec2sim.ObjectLock{Mode: "COMPLIANCE", Years: 1}},
		{vaultAccount, "vault-many", vaultRegion, governance},
		{sourceAccount, "source-records", "us-east-1", governance},
	} {
		if err := sim.CreateBucket(b.account, b.name, b.region, b.lock); err != nil {
			t.Fatal(err)
		}
	}
	putRecord(t, sim, "vault-records", "cluster-a/", "daily-1", false)
	putRecord(t, sim, "vault-records", "cluster-a/", "daily-2", true)
	putRecord(t, sim, "vault-records", "", "other-prefix", false)
	const many = 1100 // more than one page of keys
	for i := range many {
		putRecord(t, sim, "vault-many", "", fmt.Sprintf("b-%04d", i), false)
	}
	keys := file(t, string(vaultKey.CredentialsFile()))
	bucket := func(name string) model.VaultBucket {
		return model.VaultBucket{Name: name, Prefix: "cluster-a", Region: vaultRegion}
	}
	tests := []struct {
		name        string
		creds       ec2api.Credentials
		bucket      model.VaultBucket
		wantLock    vault.Lock
		wantRecords []string
		wantProblem vault.Problem
		wantCode    string // "" for a read that succeeds
	}{
		{name: "the vault's keys: lock and complete records under the prefix", creds: keys, bucket: bucket("vault-records"),
			wantLock: vault.Lock{Enabled: true, Mode: model.LockModeGovernance, Days: 30}, wantRecords: []string{"daily-1"}},
		{name: "an assumed role of the vault account reads the same", creds: assumedRole(t, vaultRole), bucket: bucket("vault-records"),
			wantLock: vault.Lock{Enabled: true, Mode: model.LockModeGovernance, Days: 30}, wantRecords: []string{"daily-1"}},
		{name: "without Object Lock", creds: keys, bucket: bucket("vault-unlocked"), wantRecords: []string{}},
		{name: "Object Lock without a default retention", creds: keys, bucket: bucket("vault-no-default"),
			wantLock: vault.Lock{Enabled: true}, wantRecords: []string{}},
		{name: "a retention in years counts 365 days a year", creds: keys, bucket: bucket("vault-years"),
			wantLock: vault.Lock{Enabled: true, Mode: model.LockModeCompliance, Days: 365}, wantRecords: []string{}},
		{name: "records over several pages", creds: keys, bucket: model.VaultBucket{Name: "vault-many", Region: vaultRegion},
			wantLock: vault.Lock{Enabled: true, Mode: model.LockModeGovernance, Days: 30}, wantRecords: make([]string, many)},
		{name: "a bucket that does not exist", creds: keys, bucket: bucket("vault-gone"), wantProblem: vault.Missing, wantCode: "NoSuchBucket"},
		{name: "another account's bucket", creds: keys, bucket: model.VaultBucket{Name: "source-records", Region: "us-east-1"},
			wantProblem: vault.Refused, wantCode: "AccessDenied"},
		{name: "the wrong region", creds: keys, bucket: model.VaultBucket{Name: "vault-records", Region: "eu-west-1"},
			wantProblem: vault.Refused, wantCode: "AuthorizationHeaderMalformed"},
		{name: "a role without S3 permissions", creds: assumedRole(t, blindRole), bucket: bucket("vault-records"),
			wantProblem: vault.Refused, wantCode: "AccessDenied"},
		{name: "keys S3 does not know", creds: file(t, string(ec2sim.AccessKey{AccessKeyID: "AKIANOBODY", SecretAccessKey: "x"}.CredentialsFile())),
			bucket: bucket("vault-records"), wantProblem: vault.Refused, wantCode: "InvalidAccessKeyId"},
	}
	f := ec2api.NewFactory()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c, err := vault.Client(ctx, f, tt.bucket.Region, tt.creds)
			if err != nil {
				t.Fatal(err)
			}
			got, err := vault.Read(ctx, c, tt.bucket)
			if tt.wantCode != "" {
				var re *vault.ReadError
				if !errors.As(err, &re) || re.Problem != tt.wantProblem || re.Code != tt.wantCode {
					t.Fatalf("error %v, want problem %d with code %s", err, tt.wantProblem, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Lock != tt.wantLock {
				t.Errorf("lock %+v, want %+v", got.Lock, tt.wantLock)
			}
			if len(got.Records) != len(tt.wantRecords) {
				t.Fatalf("records %v, want %d of them %v", got.Records, len(tt.wantRecords), tt.wantRecords)
			}
			for _, name := range tt.wantRecords {
				if _, ok := got.Records[name]; name != "" && !ok {
					t.Errorf("records %v lack %s", got.Records, name)
				}
			}
		})
	}
}
