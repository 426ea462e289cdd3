package model

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
)

// EBS snapshot locks: their modes, and the ranges of their duration and cool-off period.
const (
	LockModeCompliance = "compliance"
	LockModeGovernance = "governance"
	lockDaysMin        = 1
	lockDaysMax        = 36500
	coolOffHoursMin    = 1
	coolOffHoursMax    = 72
	// DefaultVaultCredentialKey is the key of the vault credentials Secret when
	// vaultCredentialKey is not set, as Velero's own credentials Secret names its key.
	DefaultVaultCredentialKey = "cloud"
)

// VaultConfig is where a location's vault copies go: another account, the credentials the
// plugin uses there, the region, the key and the lock. The zero VaultConfig asks for none.
type VaultConfig struct {
	// AccountID is the vault account's 12-digit ID.
	AccountID string
	// CredentialSecret and CredentialKey name a Secret in Velero's namespace holding an AWS
	// credentials file for the vault account; Profile picks a profile in it (or, without a
	// Secret, in the location's own credentials).
	CredentialSecret, CredentialKey, Profile string
	// Region holds the vault copies: vaultRegion, else copyToRegion, else the location's region.
	Region string
	// KMSKeyID, a key of the vault account in Region, encrypts the vault copies.
	KMSKeyID string
	// Lock, when its Mode is set, locks every vault copy.
	Lock Lock
	// RetainOnDelete keeps the vault copies when their backup is deleted.
	RetainOnDelete bool
	// Bucket, when its Name is set, is the vault account's bucket holding the backups' records.
	Bucket VaultBucket
}

// Lock is an EBS snapshot lock to put on vault copies.
type Lock struct {
	// Mode is LockModeCompliance or LockModeGovernance; "" for no lock.
	Mode string
	// Days is how long the lock lasts from the copy's completion.
	Days int32
	// CoolOffHours, compliance only, is how long the lock can still be removed.
	CoolOffHours int32
}

// vaultKeys are the config keys that need vaultAccountId.
var vaultKeys = []string{
	ConfigVaultCredentialSecret, ConfigVaultCredentialKey, ConfigVaultProfile, ConfigVaultRegion, ConfigVaultKMSKeyID,
	ConfigVaultLockMode, ConfigVaultLockDurationDays, ConfigVaultLockCoolOffHours, ConfigVaultRetainOnDelete,
	ConfigVaultBucket, ConfigVaultBucketPrefix, ConfigVaultBucketRegion,
}

// Enabled reports whether the location asks for vault copies.
func (v VaultConfig) Enabled() bool { return v.AccountID != "" }

// parseVault reads the vault keys of a location's config, whose region and copyToRegion are
// already valid.
func parseVault(m map[string]string, region, copyToRegion string) (VaultConfig, error) {
	v := VaultConfig{
		AccountID:        m[ConfigVaultAccountID],
		CredentialSecret: m[ConfigVaultCredentialSecret],
		CredentialKey:    m[ConfigVaultCredentialKey],
		Profile:          m[ConfigVaultProfile],
		Region:           m[ConfigVaultRegion],
		KMSKeyID:         m[ConfigVaultKMSKeyID],
	}
	if _, ok := m[ConfigVaultAccountID]; !ok {
		return VaultConfig{}, noKeysWithout(m, ConfigVaultAccountID, vaultKeys...)
	}
	if !awsid.IsAccountID(v.AccountID) {
		return VaultConfig{}, fmt.Errorf("config key %q: %q is not a 12-digit AWS account ID", ConfigVaultAccountID, v.AccountID)
	}
	if v.CredentialSecret == "" && v.Profile == "" {
		return VaultConfig{}, fmt.Errorf("config key %q needs credentials in the vault account: %q (a Secret holding a credentials file), %q, or both",
			ConfigVaultAccountID, ConfigVaultCredentialSecret, ConfigVaultProfile)
	}
	if v.CredentialKey != "" && v.CredentialSecret == "" {
		return VaultConfig{}, fmt.Errorf("config key %q (value %q) needs %q", ConfigVaultCredentialKey, v.CredentialKey, ConfigVaultCredentialSecret)
	}
	if v.CredentialSecret != "" && v.CredentialKey == "" {
		v.CredentialKey = DefaultVaultCredentialKey
	}
	switch {
	case v.Region == "" && copyToRegion != "":
		v.Region = copyToRegion
	case v.Region == "":
		v.Region = region
	case !awsid.IsRegion(v.Region):
		return VaultConfig{}, fmt.Errorf("config key %q: %q is not an AWS region name", ConfigVaultRegion, v.Region)
	}
	if val, ok := m[ConfigVaultRetainOnDelete]; ok {
		b, err := strconv.ParseBool(val)
		if err != nil {
			return VaultConfig{}, fmt.Errorf("config key %q: %q is not true or false", ConfigVaultRetainOnDelete, val)
		}
		v.RetainOnDelete = b
	}
	lock, err := parseLock(m)
	if err != nil {
		return VaultConfig{}, err
	}
	v.Lock = lock
	if v.Bucket, err = parseVaultBucket(m, v.Region); err != nil {
		return VaultConfig{}, err
	}
	return v, nil
}

// parseLock reads the vault lock keys.
func parseLock(m map[string]string) (Lock, error) {
	mode, hasMode := m[ConfigVaultLockMode]
	if !hasMode {
		return Lock{}, noKeysWithout(m, ConfigVaultLockMode, ConfigVaultLockDurationDays, ConfigVaultLockCoolOffHours)
	}
	if mode != LockModeCompliance && mode != LockModeGovernance {
		return Lock{}, fmt.Errorf("config key %q: %q is neither %q nor %q", ConfigVaultLockMode, mode, LockModeCompliance, LockModeGovernance)
	}
	l := Lock{Mode: mode}
	days, ok := m[ConfigVaultLockDurationDays]
	if !ok {
		return Lock{}, fmt.Errorf("config key %q needs %q", ConfigVaultLockMode, ConfigVaultLockDurationDays)
	}
	n, err := strconv.Atoi(days)
	if err != nil || n < lockDaysMin || n > lockDaysMax {
		return Lock{}, fmt.Errorf("config key %q: %q is not a number of days from %d to %d", ConfigVaultLockDurationDays, days, lockDaysMin, lockDaysMax)
	}
	l.Days = int32(n)
	if hours, ok := m[ConfigVaultLockCoolOffHours]; ok {
		if mode != LockModeCompliance {
			return Lock{}, fmt.Errorf("config key %q (value %q) applies only to %q locks", ConfigVaultLockCoolOffHours, hours, LockModeCompliance)
		}
		h, err := strconv.Atoi(hours)
		if err != nil || h < coolOffHoursMin || h > coolOffHoursMax {
			return Lock{}, fmt.Errorf("config key %q: %q is not a number of hours from %d to %d", ConfigVaultLockCoolOffHours, hours, coolOffHoursMin, coolOffHoursMax)
		}
		l.CoolOffHours = int32(h)
	}
	return l, nil
}

// String writes the lock as TagVaultLock holds it: "<mode>:<days>[:<cool-off hours>]".
func (l Lock) String() string {
	s := l.Mode + ":" + strconv.Itoa(int(l.Days))
	if l.CoolOffHours > 0 {
		s += ":" + strconv.Itoa(int(l.CoolOffHours))
	}
	return s
}

// Term is the lock as people read it: "governance, 30 days", "compliance, 1 day".
func (l Lock) Term() string {
	unit := " days"
	if l.Days == 1 {
		unit = " day"
	}
	return l.Mode + ", " + strconv.Itoa(int(l.Days)) + unit
}

// ParseLockTag reads a TagVaultLock value; ok is false when it is not one.
func ParseLockTag(s string) (l Lock, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != LockModeCompliance && parts[0] != LockModeGovernance {
		return Lock{}, false
	}
	days, err := strconv.Atoi(parts[1])
	if err != nil || days < lockDaysMin || days > lockDaysMax {
		return Lock{}, false
	}
	l = Lock{Mode: parts[0], Days: int32(days)}
	if len(parts) == 3 {
		h, err := strconv.Atoi(parts[2])
		if err != nil || h < coolOffHoursMin || h > coolOffHoursMax || l.Mode != LockModeCompliance {
			return Lock{}, false
		}
		l.CoolOffHours = int32(h)
	}
	return l, true
}

// RetainReason says why vaultRetainOnDelete keeps a vault copy when its backup is deleted, or ""
// when nothing does: the tag written on the copy, or on its source, when they were made, or the
// location's config as it is now. A setting turned on after the copy was made keeps it too: of
// what the tags and the config say, the safer wins.
func RetainReason(copyTagged, sourceTagged, configured bool) string {
	switch {
	case copyTagged:
		return "it is tagged " + TagVaultRetainOnDelete
	case sourceTagged:
		return "its source is tagged " + TagVaultRetainOnDelete
	case configured:
		return ConfigVaultRetainOnDelete + " is true"
	}
	return ""
}
