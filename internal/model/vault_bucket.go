package model

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
)

// VaultBucket is the vault account's S3 bucket to which the BackupStorageLocation's bucket is
// replicated: the backups' records a restore needs once the source account is gone.
type VaultBucket struct {
	// Name is the bucket's name.
	Name string
	// Prefix is the BackupStorageLocation's prefix as the bucket holds it, without a trailing "/".
	Prefix string
	// Region is the bucket's region: vaultBucketRegion, else the vault's region.
	Region string
}

// bucketName is an S3 general purpose bucket's name: 3 to 63 lowercase letters, digits, dots and
// hyphens, beginning and ending with a letter or digit.
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// Enabled reports whether the location names a vault bucket.
func (b VaultBucket) Enabled() bool { return b.Name != "" }

// BackupsPrefix is where the bucket holds the backups' records, as Velero lays out a
// BackupStorageLocation: "<prefix>/backups/", or "backups/" without a prefix.
func (b VaultBucket) BackupsPrefix() string {
	if b.Prefix == "" {
		return "backups/"
	}
	return b.Prefix + "/backups/"
}

// parseVaultBucket reads the vault bucket keys of a location whose vault region is valid.
func parseVaultBucket(m map[string]string, vaultRegion string) (VaultBucket, error) {
	name, ok := m[ConfigVaultBucket]
	if !ok {
		return VaultBucket{}, noKeysWithout(m, ConfigVaultBucket, ConfigVaultBucketPrefix, ConfigVaultBucketRegion)
	}
	if !bucketName.MatchString(name) || strings.Contains(name, "..") {
		return VaultBucket{}, fmt.Errorf("config key %q: %q is not an S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens)", ConfigVaultBucket, name)
	}
	b := VaultBucket{Name: name, Prefix: strings.TrimRight(m[ConfigVaultBucketPrefix], "/"), Region: m[ConfigVaultBucketRegion]}
	if strings.HasPrefix(b.Prefix, "/") {
		return VaultBucket{}, fmt.Errorf("config key %q: %q begins with \"/\"; give the BackupStorageLocation's prefix as its spec.objectStorage.prefix holds it",
			ConfigVaultBucketPrefix, b.Prefix)
	}
	switch {
	case b.Region == "":
		b.Region = vaultRegion
	case !awsid.IsRegion(b.Region):
		return VaultBucket{}, fmt.Errorf("config key %q: %q is not an AWS region name", ConfigVaultBucketRegion, b.Region)
	}
	return b, nil
}
