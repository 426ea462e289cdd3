package location

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// A location's vault credentials: a Secret of their own, or a profile of the location's own
// credentials; none without a vault account; a missing Secret is an error naming it.
func TestVaultCredentials(t *testing.T) {
	const vaultFile = "[default]\naws_access_key_id=AKIAVAULT\naws_secret_access_key=vault-secret\n"
	tests := []struct {
		name     string
		opts     []vslOpt
		want     *ec2api.Credentials // File "secret" stands for the Secret's file
		wantErr  error
		wantFile string
	}{
		{name: "no vault", opts: []vslOpt{withConfig(ConfigVaultProfile, "ignored")}},
		{name: "secret, default key", opts: []vslOpt{withConfig(ConfigVaultAccountID, "222222222222", ConfigVaultCredentialSecret, "vault")},
			want: &ec2api.Credentials{File: "secret"}, wantFile: vaultFile},
		{name: "secret, named key and profile", opts: []vslOpt{withConfig(ConfigVaultAccountID, "222222222222", ConfigVaultCredentialSecret, "vault",
			ConfigVaultCredentialKey, "other", ConfigVaultProfile, "vault")},
			want: &ec2api.Credentials{File: "secret", Profile: "vault"}, wantFile: "[vault]\n"},
		{name: "profile of the location's own credentials", opts: []vslOpt{withCred("main", "cloud"),
			withConfig(ConfigVaultAccountID, "222222222222", ConfigVaultProfile, "vault-role")},
			want: &ec2api.Credentials{File: "main", Profile: "vault-role"}},
		{name: "missing secret", opts: []vslOpt{withConfig(ConfigVaultAccountID, "222222222222", ConfigVaultCredentialSecret, "absent")},
			wantErr: ErrSecretNotFound},
		{name: "missing key", opts: []vslOpt{withConfig(ConfigVaultAccountID, "222222222222", ConfigVaultCredentialSecret, "vault", ConfigVaultCredentialKey, "nope")},
			wantErr: ErrKeyNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := newFake(t, vsl("a", "us-east-1", tt.opts...),
				secret("vault", map[string]string{"cloud": vaultFile, "other": "[vault]\n"}),
				secret("main", map[string]string{"cloud": "[default]\n"}))
			f := newFixture(t, rd)
			c, err := f.r.ForBackup(context.Background(), backup("bk", "a"), "us-east-1")
			if tt.wantErr != nil {
				var ce *CredentialError
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &ce) || ce.Location != "a" {
					t.Fatalf("error %v, want a CredentialError of location a wrapping %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gotVault := c.Locations[0].Vault
			if tt.want == nil {
				if gotVault != nil {
					t.Fatalf("vault credentials %+v for a location without a vault", gotVault)
				}
				return
			}
			want := *tt.want
			switch want.File {
			case "secret":
				key := "cloud"
				if tt.wantFile != vaultFile {
					key = "other"
				}
				want.File = f.credPath("vault", key)
			case "main":
				want.File = f.credPath("main", "cloud")
			}
			if gotVault == nil || *gotVault != want {
				t.Fatalf("vault credentials %+v, want %+v", gotVault, want)
			}
			if tt.wantFile != "" {
				if b, err := os.ReadFile(gotVault.File); err != nil || string(b) != tt.wantFile {
					t.Errorf("vault credentials file holds %q (%v), want %q", b, err, tt.wantFile)
				}
			}
			// The VolumeSnapshotter, given the location's config as Velero passes it, finds the same.
			vs, err := f.r.VaultCredentials(context.Background(), "a", c.Locations[0].Config)
			if err != nil || vs == nil || *vs != want {
				t.Errorf("VaultCredentials = %+v, %v; want %+v", vs, err, want)
			}
		})
	}
}
