package model_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// vaultID is a vault account's ID.
const vaultID = "222222222222"

// longAlias is a valid KMS alias ARN one character longer than a tag value.
var longAlias = "arn:aws:kms:us-west-2:111111111111:alias/" + strings.Repeat("k", 257-len("arn:aws:kms:us-west-2:111111111111:alias/"))

func TestParseConfig(t *testing.T) {
	full := map[string]string{
		model.ConfigRegion:                        mockec2.SrcRegion,
		model.ConfigProfile:                       "prod",
		model.ConfigCredentialsFile:               "/creds/cloud",
		model.ConfigEnableSharedConfig:            "true",
		model.ConfigEBSKMSKeyID:                   "alias/ebs",
		model.ConfigCopyToRegion:                  mockec2.DstRegion,
		model.ConfigCopyKMSKeyID:                  "alias/dr",
		model.ConfigCopyCompletionDurationMinutes: "60",
		model.ConfigRestoreAvailabilityZone:       "us-east-1b",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{model.ConfigRegion: mockec2.SrcRegion}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		in      map[string]string
		want    model.Config
		wantErr []string // substrings; none means success
	}{
		{name: "every key", in: full, want: model.Config{
			Region:                  mockec2.SrcRegion,
			Credentials:             ec2api.Credentials{Profile: "prod", File: "/creds/cloud"},
			EBSKMSKeyID:             "alias/ebs",
			CopyToRegion:            mockec2.DstRegion,
			CopyKMSKeyID:            "alias/dr",
			CopyCompletionMinutes:   60,
			RestoreAvailabilityZone: "us-east-1b",
		}},
		{name: "region only", in: with(), want: model.Config{Region: mockec2.SrcRegion}},
		{name: "copy without options", in: with(model.ConfigCopyToRegion, "eu-central-1"), want: model.Config{Region: mockec2.SrcRegion, CopyToRegion: "eu-central-1"}},
		{name: "enableSharedConfig false", in: with(model.ConfigEnableSharedConfig, "false"), want: model.Config{Region: mockec2.SrcRegion}},
		{name: "duration minimum", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyCompletionDurationMinutes, "15"),
			want: model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion, CopyCompletionMinutes: 15}},
		{name: "duration maximum", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyCompletionDurationMinutes, "2880"),
			want: model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion, CopyCompletionMinutes: 2880}},

		{name: "unknown key", in: with("bucket", "b"), wantErr: []string{`"bucket"`, "unknown"}},
		{name: "unknown keys sorted", in: with("zeta", "1", "alpha", "2"), wantErr: []string{`"alpha", "zeta"`}},
		{name: "copyKmsKeyId longer than a tag value", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyKMSKeyID, longAlias),
			wantErr: []string{`"copyKmsKeyId"`, "257 characters", "at most 256"}},
		{name: "vaultKmsKeyId longer than a tag value", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultKMSKeyID, longAlias),
			wantErr: []string{`"vaultKmsKeyId"`, "257 characters", "at most 256"}},
		{name: "copyKmsKeyId of a tag value's length", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyKMSKeyID, longAlias[1:]),
			want: model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion, CopyKMSKeyID: longAlias[1:]}},
		{name: "key case matters", in: with("Region", mockec2.SrcRegion), wantErr: []string{`"Region"`}},
		{name: "missing region", in: map[string]string{model.ConfigProfile: "p"}, wantErr: []string{`"region"`, "required"}},
		{name: "empty region", in: map[string]string{model.ConfigRegion: ""}, wantErr: []string{`"region"`}},
		{name: "bad region", in: map[string]string{model.ConfigRegion: "US-EAST-1"}, wantErr: []string{`"region"`, `"US-EAST-1"`}},
		{name: "zone as region", in: map[string]string{model.ConfigRegion: "us-east-1a"}, wantErr: []string{`"us-east-1a"`}},
		{name: "bad copyToRegion", in: with(model.ConfigCopyToRegion, "west"), wantErr: []string{`"copyToRegion"`, `"west"`}},
		{name: "copyToRegion is region", in: with(model.ConfigCopyToRegion, mockec2.SrcRegion), wantErr: []string{`"copyToRegion"`, `"us-east-1"`, "own region"}},
		{name: "copyKmsKeyId without copyToRegion", in: with(model.ConfigCopyKMSKeyID, "k"), wantErr: []string{`"copyKmsKeyId"`, `"copyToRegion"`}},
		{name: "duration without copyToRegion", in: with(model.ConfigCopyCompletionDurationMinutes, "60"), wantErr: []string{`"copyCompletionDurationMinutes"`, `"copyToRegion"`}},
		{name: "empty copyToRegion with copy option", in: with(model.ConfigCopyToRegion, "", model.ConfigCopyKMSKeyID, "k"), wantErr: []string{`"copyKmsKeyId"`}},
		{name: "duration below minimum", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyCompletionDurationMinutes, "0"), wantErr: []string{`"copyCompletionDurationMinutes"`, `"0"`}},
		{name: "duration negative", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyCompletionDurationMinutes, "-15"), wantErr: []string{`"-15"`}},
		{name: "duration off step", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyCompletionDurationMinutes, "20"), wantErr: []string{`"20"`, "steps of 15"}},
		{name: "duration above maximum", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyCompletionDurationMinutes, "2895"), wantErr: []string{`"2895"`}},
		{name: "duration not a number", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyCompletionDurationMinutes, "1h"), wantErr: []string{`"1h"`}},
		{name: "duration empty", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigCopyCompletionDurationMinutes, ""), wantErr: []string{`"copyCompletionDurationMinutes"`}},
		{name: "enableSharedConfig bad bool", in: with(model.ConfigEnableSharedConfig, "yes please"), wantErr: []string{`"enableSharedConfig"`, `"yes please"`}},

		{name: "vault with every key", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigVaultAccountID, vaultID, model.ConfigVaultCredentialSecret, "vault",
			model.ConfigVaultCredentialKey, "key", model.ConfigVaultProfile, "p", model.ConfigVaultRegion, "eu-west-1", model.ConfigVaultKMSKeyID, "alias/vault",
			model.ConfigVaultLockMode, "compliance", model.ConfigVaultLockDurationDays, "30", model.ConfigVaultLockCoolOffHours, "24", model.ConfigVaultRetainOnDelete, "true"),
			want: model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion, Vault: model.VaultConfig{AccountID: vaultID, CredentialSecret: "vault", CredentialKey: "key",
				Profile: "p", Region: "eu-west-1", KMSKeyID: "alias/vault", Lock: model.Lock{Mode: model.LockModeCompliance, Days: 30, CoolOffHours: 24}, RetainOnDelete: true}}},
		{name: "vault region defaults to copyToRegion", in: with(model.ConfigCopyToRegion, mockec2.DstRegion, model.ConfigVaultAccountID, vaultID, model.ConfigVaultCredentialSecret, "vault"),
			want: model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion, Vault: model.VaultConfig{AccountID: vaultID, CredentialSecret: "vault", CredentialKey: model.DefaultVaultCredentialKey, Region: mockec2.DstRegion}}},
		{name: "vault region defaults to region", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "vault"),
			want: model.Config{Region: mockec2.SrcRegion, Vault: model.VaultConfig{AccountID: vaultID, Profile: "vault", Region: mockec2.SrcRegion}}},
		{name: "governance lock", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultLockMode, "governance", model.ConfigVaultLockDurationDays, "1"),
			want: model.Config{Region: mockec2.SrcRegion, Vault: model.VaultConfig{AccountID: vaultID, Profile: "v", Region: mockec2.SrcRegion, Lock: model.Lock{Mode: model.LockModeGovernance, Days: 1}}}},
		{name: "vault key without account", in: with(model.ConfigVaultRegion, mockec2.DstRegion), wantErr: []string{`"vaultRegion"`, `"vaultAccountId"`}},
		{name: "bad vault account", in: with(model.ConfigVaultAccountID, "12345", model.ConfigVaultProfile, "v"), wantErr: []string{`"vaultAccountId"`, `"12345"`, "12-digit"}},
		{name: "vault without credentials", in: with(model.ConfigVaultAccountID, vaultID), wantErr: []string{`"vaultCredentialSecret"`, `"vaultProfile"`}},
		{name: "vault key without secret", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultCredentialKey, "k"), wantErr: []string{`"vaultCredentialKey"`, `"vaultCredentialSecret"`}},
		{name: "bad vault region", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultRegion, "west"), wantErr: []string{`"vaultRegion"`, `"west"`}},
		{name: "bad lock mode", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultLockMode, "strict", model.ConfigVaultLockDurationDays, "1"), wantErr: []string{`"vaultLockMode"`, `"strict"`}},
		{name: "lock without duration", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultLockMode, "compliance"), wantErr: []string{`"vaultLockDurationDays"`}},
		{name: "lock duration too long", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultLockMode, "compliance", model.ConfigVaultLockDurationDays, "36501"), wantErr: []string{`"36501"`}},
		{name: "duration without lock mode", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultLockDurationDays, "3"), wantErr: []string{`"vaultLockDurationDays"`, `"vaultLockMode"`}},
		{name: "cool-off with governance", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultLockMode, "governance", model.ConfigVaultLockDurationDays, "1", model.ConfigVaultLockCoolOffHours, "2"), wantErr: []string{`"vaultLockCoolOffHours"`, "compliance"}},
		{name: "cool-off too long", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultLockMode, "compliance", model.ConfigVaultLockDurationDays, "1", model.ConfigVaultLockCoolOffHours, "73"), wantErr: []string{`"73"`}},
		{name: "vault bucket with prefix and region", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultBucket, "velero-vault",
			model.ConfigVaultBucketPrefix, "cluster-a/", model.ConfigVaultBucketRegion, "eu-west-1"),
			want: model.Config{Region: mockec2.SrcRegion, Vault: model.VaultConfig{AccountID: vaultID, Profile: "v", Region: mockec2.SrcRegion,
				Bucket: model.VaultBucket{Name: "velero-vault", Prefix: "cluster-a", Region: "eu-west-1"}}}},
		{name: "vault bucket region defaults to vaultRegion", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultRegion, "us-west-2",
			model.ConfigVaultBucket, "velero-vault"),
			want: model.Config{Region: mockec2.SrcRegion, Vault: model.VaultConfig{AccountID: vaultID, Profile: "v", Region: "us-west-2",
				Bucket: model.VaultBucket{Name: "velero-vault", Region: "us-west-2"}}}},
		{name: "vault bucket without account", in: with(model.ConfigVaultBucket, "velero-vault"), wantErr: []string{`"vaultBucket"`, `"vaultAccountId"`}},
		{name: "vault bucket prefix without bucket", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultBucketPrefix, "p"),
			wantErr: []string{`"vaultBucketPrefix"`, `"vaultBucket"`}},
		{name: "vault bucket region without bucket", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultBucketRegion, "us-west-2"),
			wantErr: []string{`"vaultBucketRegion"`, `"vaultBucket"`}},
		{name: "vault bucket name with capitals", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultBucket, "Velero-Vault"),
			wantErr: []string{`"vaultBucket"`, `"Velero-Vault"`, "bucket name"}},
		{name: "vault bucket name too short", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultBucket, "vv"),
			wantErr: []string{`"vaultBucket"`, `"vv"`}},
		{name: "vault bucket name with two dots", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultBucket, "velero..vault"),
			wantErr: []string{`"vaultBucket"`, `"velero..vault"`}},
		{name: "vault bucket prefix with leading slash", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultBucket, "velero-vault",
			model.ConfigVaultBucketPrefix, "/cluster-a"), wantErr: []string{`"vaultBucketPrefix"`, `"/cluster-a"`}},
		{name: "bad vault bucket region", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultBucket, "velero-vault",
			model.ConfigVaultBucketRegion, "west"), wantErr: []string{`"vaultBucketRegion"`, `"west"`}},
		{name: "retain not a bool", in: with(model.ConfigVaultAccountID, vaultID, model.ConfigVaultProfile, "v", model.ConfigVaultRetainOnDelete, "keep"), wantErr: []string{`"vaultRetainOnDelete"`, `"keep"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := model.ParseConfig(tt.in)
			mockec2.WantErr(t, err, tt.wantErr...)
			if err == nil && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A secret put under a misspelt or misplaced key never reaches the error, which Velero keeps in
// the backup's log: the key is named, its value is not.
func TestUnknownConfigKeyErrorNeverPrintsTheValue(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	for _, key := range []string{"awsSecretAccessKey", "aws_secret_access_key", "credentials"} {
		t.Run(key, func(t *testing.T) {
			_, err := model.ParseConfig(map[string]string{model.ConfigRegion: mockec2.SrcRegion, key: secret})
			if err == nil || !strings.Contains(err.Error(), strconv.Quote(key)) || !strings.Contains(err.Error(), "unknown") {
				t.Fatalf("error %v, want one naming unknown key %q", err, key)
			}
			for _, part := range []string{secret, secret[:8], "EXAMPLEKEY"} {
				if strings.Contains(err.Error(), part) {
					t.Errorf("error %q prints the value", err)
				}
			}
		})
	}
}

func TestVaultBucketBackupsPrefix(t *testing.T) {
	for _, tt := range []struct{ prefix, want string }{{"", "backups/"}, {"cluster-a", "cluster-a/backups/"}, {"a/b", "a/b/backups/"}} {
		if got := (model.VaultBucket{Name: "b", Prefix: tt.prefix}).BackupsPrefix(); got != tt.want {
			t.Errorf("prefix %q: got %q, want %q", tt.prefix, got, tt.want)
		}
	}
}

func TestALocksTermReadsAsPeopleSayIt(t *testing.T) {
	for _, tc := range []struct {
		lock model.Lock
		want string
	}{
		{model.Lock{Mode: model.LockModeGovernance, Days: 1}, "governance, 1 day"},
		{model.Lock{Mode: model.LockModeCompliance, Days: 30, CoolOffHours: 24}, "compliance, 30 days"},
	} {
		if got := tc.lock.Term(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.lock, got, tc.want)
		}
	}
}
