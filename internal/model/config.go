package model

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// EBS time-based copies take a completion duration in 15-minute steps up to 48 hours.
const (
	copyDurationStep = 15
	copyDurationMax  = 2880
)

// Config is a VolumeSnapshotLocation's config, validated.
type Config struct {
	// Region holds the snapshots this location takes, deletes and restores from.
	Region string
	// Credentials choose a profile or credentials file beyond the SDK's default chain.
	Credentials ec2api.Credentials
	// EBSKMSKeyID encrypts volumes restored by this location.
	EBSKMSKeyID string
	// CopyToRegion, when set, gets a copy of every snapshot.
	CopyToRegion string
	// CopyKMSKeyID, a key in CopyToRegion, encrypts the copies.
	CopyKMSKeyID string
	// CopyCompletionMinutes, when non-zero, asks EBS for time-based copies of that duration.
	CopyCompletionMinutes int32
	// RestoreAvailabilityZone, when set, is where restored volumes are created.
	RestoreAvailabilityZone string
	// Vault, when enabled, gets a copy of every snapshot in another account.
	Vault VaultConfig
	// Restore is how the location restores volumes.
	Restore RestoreConfig
}

var knownConfigKeys = []string{
	ConfigRegion, ConfigProfile, ConfigCredentialsFile, ConfigEnableSharedConfig, ConfigEBSKMSKeyID,
	ConfigCopyToRegion, ConfigCopyKMSKeyID, ConfigCopyCompletionDurationMinutes, ConfigRestoreAvailabilityZone,
	ConfigVaultAccountID, ConfigVaultCredentialSecret, ConfigVaultCredentialKey, ConfigVaultProfile, ConfigVaultRegion,
	ConfigVaultKMSKeyID, ConfigVaultLockMode, ConfigVaultLockDurationDays, ConfigVaultLockCoolOffHours, ConfigVaultRetainOnDelete,
	ConfigVaultBucket, ConfigVaultBucketPrefix, ConfigVaultBucketRegion,
	ConfigVolumeInitializationRate, ConfigWaitForVolumeInitialization, ConfigVolumeInitializationFallback,
}

// ConfigKeys are the VolumeSnapshotLocation config keys the plugin knows, in the order its
// errors list them.
func ConfigKeys() []string { return slices.Clone(knownConfigKeys) }

// tagCarriedKeys are the config keys whose values ride on every source snapshot as a tag (the
// copy intent) and are not validated otherwise: a value longer than a tag value could not be
// carried in full.
var tagCarriedKeys = []string{ConfigCopyKMSKeyID, ConfigVaultKMSKeyID}

// ParseConfig validates a VolumeSnapshotLocation's config. Every error names the key, and the
// value of a known key; never the value of an unknown key, which may be a misplaced secret
// that Velero would keep in the backup's log.
func ParseConfig(m map[string]string) (Config, error) {
	var unknown []string
	for k := range m {
		if !slices.Contains(knownConfigKeys, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Config{}, fmt.Errorf("unknown config key %s (known keys: %s)", strings.Join(unknown, ", "), strings.Join(knownConfigKeys, ", "))
	}
	for _, k := range tagCarriedKeys {
		if n := utf8.RuneCountInString(m[k]); n > MaxTagValueLen {
			return Config{}, fmt.Errorf("config key %q: its value has %d characters; it is carried in a snapshot tag, whose values hold at most %d",
				k, n, MaxTagValueLen)
		}
	}
	c := Config{
		Region:                  m[ConfigRegion],
		Credentials:             ec2api.Credentials{Profile: m[ConfigProfile], File: m[ConfigCredentialsFile]},
		EBSKMSKeyID:             m[ConfigEBSKMSKeyID],
		CopyToRegion:            m[ConfigCopyToRegion],
		CopyKMSKeyID:            m[ConfigCopyKMSKeyID],
		RestoreAvailabilityZone: m[ConfigRestoreAvailabilityZone],
	}
	if c.Region == "" {
		return Config{}, fmt.Errorf("config key %q is required", ConfigRegion)
	}
	if !awsid.IsRegion(c.Region) {
		return Config{}, fmt.Errorf("config key %q: %q is not an AWS region name", ConfigRegion, c.Region)
	}
	if _, err := parseBoolKey(m, ConfigEnableSharedConfig); err != nil {
		return Config{}, err
	}
	if err := c.parseCopy(m); err != nil {
		return Config{}, err
	}
	vault, err := parseVault(m, c.Region, c.CopyToRegion)
	if err != nil {
		return Config{}, err
	}
	c.Vault = vault
	if c.Restore, err = ParseRestore(m); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseCopy reads the keys of the copy into copyToRegion.
func (c *Config) parseCopy(m map[string]string) error {
	if c.CopyToRegion == "" {
		return noKeysWithout(m, ConfigCopyToRegion, ConfigCopyKMSKeyID, ConfigCopyCompletionDurationMinutes)
	}
	if !awsid.IsRegion(c.CopyToRegion) {
		return fmt.Errorf("config key %q: %q is not an AWS region name", ConfigCopyToRegion, c.CopyToRegion)
	}
	if c.CopyToRegion == c.Region {
		return fmt.Errorf("config key %q: %q is the location's own region; name another region", ConfigCopyToRegion, c.CopyToRegion)
	}
	if v, ok := m[ConfigCopyCompletionDurationMinutes]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < copyDurationStep || n > copyDurationMax || n%copyDurationStep != 0 {
			return fmt.Errorf("config key %q: %q is not a number of minutes from %d to %d in steps of %d",
				ConfigCopyCompletionDurationMinutes, v, copyDurationStep, copyDurationMax, copyDurationStep)
		}
		c.CopyCompletionMinutes = int32(n)
	}
	return nil
}

// noKeysWithout fails naming the first of keys that m sets, which needs the key needed m lacks.
func noKeysWithout(m map[string]string, needed string, keys ...string) error {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return fmt.Errorf("config key %q (value %q) needs %q", k, v, needed)
		}
	}
	return nil
}
