package ebs

import (
	"strconv"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// vaultID is a vault account's ID.
const vaultID = "222222222222"

// longAlias is a valid KMS alias ARN one character longer than a tag value.
var longAlias = "arn:aws:kms:us-west-2:111111111111:alias/" + strings.Repeat("k", 257-len("arn:aws:kms:us-west-2:111111111111:alias/"))

func TestParseConfig(t *testing.T) {
	full := map[string]string{
		ConfigRegion:                        srcRegion,
		ConfigProfile:                       "prod",
		ConfigCredentialsFile:               "/creds/cloud",
		ConfigEnableSharedConfig:            "true",
		ConfigEBSKMSKeyID:                   "alias/ebs",
		ConfigCopyToRegion:                  dstRegion,
		ConfigCopyKMSKeyID:                  "alias/dr",
		ConfigCopyCompletionDurationMinutes: "60",
		ConfigRestoreAvailabilityZone:       "us-east-1b",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{ConfigRegion: srcRegion}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		in      map[string]string
		want    Config
		wantErr []string // substrings; none means success
	}{
		{name: "every key", in: full, want: Config{
			Region:                  srcRegion,
			Credentials:             ec2api.Credentials{Profile: "prod", File: "/creds/cloud"},
			EBSKMSKeyID:             "alias/ebs",
			CopyToRegion:            dstRegion,
			CopyKMSKeyID:            "alias/dr",
			CopyCompletionMinutes:   60,
			RestoreAvailabilityZone: "us-east-1b",
		}},
		{name: "region only", in: with(), want: Config{Region: srcRegion}},
		{name: "copy without options", in: with(ConfigCopyToRegion, "eu-central-1"), want: Config{Region: srcRegion, CopyToRegion: "eu-central-1"}},
		{name: "enableSharedConfig false", in: with(ConfigEnableSharedConfig, "false"), want: Config{Region: srcRegion}},
		{name: "duration minimum", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyCompletionDurationMinutes, "15"),
			want: Config{Region: srcRegion, CopyToRegion: dstRegion, CopyCompletionMinutes: 15}},
		{name: "duration maximum", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyCompletionDurationMinutes, "2880"),
			want: Config{Region: srcRegion, CopyToRegion: dstRegion, CopyCompletionMinutes: 2880}},

		{name: "unknown key", in: with("bucket", "b"), wantErr: []string{`"bucket"`, "unknown"}},
		{name: "unknown keys sorted", in: with("zeta", "1", "alpha", "2"), wantErr: []string{`"alpha", "zeta"`}},
		{name: "copyKmsKeyId longer than a tag value", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyKMSKeyID, longAlias),
			wantErr: []string{`"copyKmsKeyId"`, "257 characters", "at most 256"}},
		{name: "vaultKmsKeyId longer than a tag value", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultKMSKeyID, longAlias),
			wantErr: []string{`"vaultKmsKeyId"`, "257 characters", "at most 256"}},
		{name: "copyKmsKeyId of a tag value's length", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyKMSKeyID, longAlias[1:]),
			want: Config{Region: srcRegion, CopyToRegion: dstRegion, CopyKMSKeyID: longAlias[1:]}},
		{name: "key case matters", in: with("Region", srcRegion), wantErr: []string{`"Region"`}},
		{name: "missing region", in: map[string]string{ConfigProfile: "p"}, wantErr: []string{`"region"`, "required"}},
		{name: "empty region", in: map[string]string{ConfigRegion: ""}, wantErr: []string{`"region"`}},
		{name: "bad region", in: map[string]string{ConfigRegion: "US-EAST-1"}, wantErr: []string{`"region"`, `"US-EAST-1"`}},
		{name: "zone as region", in: map[string]string{ConfigRegion: "us-east-1a"}, wantErr: []string{`"us-east-1a"`}},
		{name: "bad copyToRegion", in: with(ConfigCopyToRegion, "west"), wantErr: []string{`"copyToRegion"`, `"west"`}},
		{name: "copyToRegion is region", in: with(ConfigCopyToRegion, srcRegion), wantErr: []string{`"copyToRegion"`, `"us-east-1"`, "own region"}},
		{name: "copyKmsKeyId without copyToRegion", in: with(ConfigCopyKMSKeyID, "k"), wantErr: []string{`"copyKmsKeyId"`, `"copyToRegion"`}},
		{name: "duration without copyToRegion", in: with(ConfigCopyCompletionDurationMinutes, "60"), wantErr: []string{`"copyCompletionDurationMinutes"`, `"copyToRegion"`}},
		{name: "empty copyToRegion with copy option", in: with(ConfigCopyToRegion, "", ConfigCopyKMSKeyID, "k"), wantErr: []string{`"copyKmsKeyId"`}},
		{name: "duration below minimum", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyCompletionDurationMinutes, "0"), wantErr: []string{`"copyCompletionDurationMinutes"`, `"0"`}},
		{name: "duration negative", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyCompletionDurationMinutes, "-15"), wantErr: []string{`"-15"`}},
		{name: "duration off step", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyCompletionDurationMinutes, "20"), wantErr: []string{`"20"`, "steps of 15"}},
		{name: "duration above maximum", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyCompletionDurationMinutes, "2895"), wantErr: []string{`"2895"`}},
		{name: "duration not a number", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyCompletionDurationMinutes, "1h"), wantErr: []string{`"1h"`}},
		{name: "duration empty", in: with(ConfigCopyToRegion, dstRegion, ConfigCopyCompletionDurationMinutes, ""), wantErr: []string{`"copyCompletionDurationMinutes"`}},
		{name: "enableSharedConfig bad bool", in: with(ConfigEnableSharedConfig, "yes please"), wantErr: []string{`"enableSharedConfig"`, `"yes please"`}},

		{name: "vault with every key", in: with(ConfigCopyToRegion, dstRegion, ConfigVaultAccountID, vaultID, ConfigVaultCredentialSecret, "vault",
			ConfigVaultCredentialKey, "key", ConfigVaultProfile, "p", ConfigVaultRegion, "eu-west-1", ConfigVaultKMSKeyID, "alias/vault",
			ConfigVaultLockMode, "compliance", ConfigVaultLockDurationDays, "30", ConfigVaultLockCoolOffHours, "24", ConfigVaultRetainOnDelete, "true"),
			want: Config{Region: srcRegion, CopyToRegion: dstRegion, Vault: VaultConfig{AccountID: vaultID, CredentialSecret: "vault", CredentialKey: "key",
				Profile: "p", Region: "eu-west-1", KMSKeyID: "alias/vault", Lock: Lock{Mode: LockModeCompliance, Days: 30, CoolOffHours: 24}, RetainOnDelete: true}}},
		{name: "vault region defaults to copyToRegion", in: with(ConfigCopyToRegion, dstRegion, ConfigVaultAccountID, vaultID, ConfigVaultCredentialSecret, "vault"),
			want: Config{Region: srcRegion, CopyToRegion: dstRegion, Vault: VaultConfig{AccountID: vaultID, CredentialSecret: "vault", CredentialKey: DefaultVaultCredentialKey, Region: dstRegion}}},
		{name: "vault region defaults to region", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "vault"),
			want: Config{Region: srcRegion, Vault: VaultConfig{AccountID: vaultID, Profile: "vault", Region: srcRegion}}},
		{name: "governance lock", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultLockMode, "governance", ConfigVaultLockDurationDays, "1"),
			want: Config{Region: srcRegion, Vault: VaultConfig{AccountID: vaultID, Profile: "v", Region: srcRegion, Lock: Lock{Mode: LockModeGovernance, Days: 1}}}},
		{name: "vault key without account", in: with(ConfigVaultRegion, dstRegion), wantErr: []string{`"vaultRegion"`, `"vaultAccountId"`}},
		{name: "bad vault account", in: with(ConfigVaultAccountID, "12345", ConfigVaultProfile, "v"), wantErr: []string{`"vaultAccountId"`, `"12345"`, "12-digit"}},
		{name: "vault without credentials", in: with(ConfigVaultAccountID, vaultID), wantErr: []string{`"vaultCredentialSecret"`, `"vaultProfile"`}},
		{name: "vault key without secret", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultCredentialKey, "k"), wantErr: []string{`"vaultCredentialKey"`, `"vaultCredentialSecret"`}},
		{name: "bad vault region", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultRegion, "west"), wantErr: []string{`"vaultRegion"`, `"west"`}},
		{name: "bad lock mode", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultLockMode, "strict", ConfigVaultLockDurationDays, "1"), wantErr: []string{`"vaultLockMode"`, `"strict"`}},
		{name: "lock without duration", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultLockMode, "compliance"), wantErr: []string{`"vaultLockDurationDays"`}},
		{name: "lock duration too long", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultLockMode, "compliance", ConfigVaultLockDurationDays, "36501"), wantErr: []string{`"36501"`}},
		{name: "duration without lock mode", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultLockDurationDays, "3"), wantErr: []string{`"vaultLockDurationDays"`, `"vaultLockMode"`}},
		{name: "cool-off with governance", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultLockMode, "governance", ConfigVaultLockDurationDays, "1", ConfigVaultLockCoolOffHours, "2"), wantErr: []string{`"vaultLockCoolOffHours"`, "compliance"}},
		{name: "cool-off too long", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultLockMode, "compliance", ConfigVaultLockDurationDays, "1", ConfigVaultLockCoolOffHours, "73"), wantErr: []string{`"73"`}},
		{name: "retain not a bool", in: with(ConfigVaultAccountID, vaultID, ConfigVaultProfile, "v", ConfigVaultRetainOnDelete, "keep"), wantErr: []string{`"vaultRetainOnDelete"`, `"keep"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(tt.in)
			wantErr(t, err, tt.wantErr...)
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
			_, err := ParseConfig(map[string]string{ConfigRegion: srcRegion, key: secret})
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
