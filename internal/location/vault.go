package location

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// Location config keys naming the credentials of a location's vault account.
const (
	ConfigVaultAccountID        = "vaultAccountId"
	ConfigVaultCredentialSecret = "vaultCredentialSecret"
	ConfigVaultCredentialKey    = "vaultCredentialKey"
	ConfigVaultProfile          = "vaultProfile"
	// DefaultVaultCredentialKey is the Secret key read when vaultCredentialKey is not set.
	DefaultVaultCredentialKey = "cloud"
)

// VaultCredentials returns the credentials the config of location (as Velero passes it to the
// VolumeSnapshotter) names for its vault account: the credentials file in the Secret
// vaultCredentialSecret of Velero's namespace (key vaultCredentialKey, default "cloud"), or
// the location's own credentials, with the profile vaultProfile. It returns nil when the
// config names no vault account.
func (r *Resolver) VaultCredentials(ctx context.Context, location string, cfg map[string]string) (*ec2api.Credentials, error) {
	if cfg[ConfigVaultAccountID] == "" {
		return nil, nil
	}
	rd, err := r.client()
	if err != nil && cfg[ConfigVaultCredentialSecret] != "" {
		return nil, err
	}
	return r.vaultCredentials(ctx, rd, r.namespace, location, cfg)
}

// vaultCredentials is VaultCredentials with the reader and namespace chosen.
func (r *Resolver) vaultCredentials(ctx context.Context, rd client.Reader, ns, location string, cfg map[string]string) (*ec2api.Credentials, error) {
	if cfg[ConfigVaultAccountID] == "" {
		return nil, nil
	}
	creds := &ec2api.Credentials{Profile: cfg[ConfigVaultProfile], File: cfg[ConfigCredentialsFile]}
	if name := cfg[ConfigVaultCredentialSecret]; name != "" {
		key := cfg[ConfigVaultCredentialKey]
		if key == "" {
			key = DefaultVaultCredentialKey
		}
		path, err := r.credentialsFile(ctx, rd, ns, location, &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key,
		})
		if err != nil {
			return nil, err
		}
		creds.File = path
	}
	return creds, nil
}
