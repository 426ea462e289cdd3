// Package model is the plugin's public model and the rules on it: plugin names, tag keys and
// values, VolumeSnapshotLocation config keys and a location's validated config, operation IDs,
// EC2's tag limits, where a source's copies go, and which snapshot is whose (a backup's
// identity, what this plugin's CreateSnapshot writes at creation). It is pure: no EC2, no clock.
package model

// Plugin names as users register them in Velero. They are public: they appear in
// VolumeSnapshotLocations and in backups' operation records.
const (
	// VolumeSnapshotterName is the VolumeSnapshotLocation provider.
	VolumeSnapshotterName = "velero-async.io/aws"
	// BackupItemActionName tracks each snapshot and its copy as a Velero async operation.
	BackupItemActionName = "velero-async.io/aws-snapshot-progress"
	// RestoreItemActionName tracks restored volumes until they are available.
	RestoreItemActionName = "velero-async.io/aws-volume-restore"
)

// Tags Velero core puts on every snapshot it asks for.
const (
	TagBackup = "velero.io/backup"
	TagPV     = "velero.io/pv"
)

// The plugin's own tag keys. They are public: they live on users' AWS resources.
const (
	TagPrefix = "velero-async.io/"
	// TagCopyToRegion, on a source snapshot, names the region its copy goes to.
	TagCopyToRegion = TagPrefix + "copy-to-region"
	// TagCopyKMSKeyID, on a source snapshot, names the KMS key that encrypts its copy.
	TagCopyKMSKeyID = TagPrefix + "copy-kms-key-id"
	// TagCopyCompletionMinutes, on a source snapshot, asks for a time-based copy.
	TagCopyCompletionMinutes = TagPrefix + "copy-completion-duration-minutes"
	// TagCopyRequestedAt, on a source snapshot, records when a copy was last requested
	// (RFC 3339), so a restarted plugin waits for an invisible copy instead of copying again.
	TagCopyRequestedAt = TagPrefix + "copy-requested-at"
	// TagCopyCancelled, on a source snapshot, records that Velero cancelled its operation
	// (RFC 3339): its copy is never started again.
	TagCopyCancelled = TagPrefix + "copy-cancelled"
	// TagCopyFailed, on a source snapshot, records that its operation failed because a copy of
	// it (regional or vault) was refused or ended in error (RFC 3339): it is never shared or
	// copied again. Only this plugin writes it, on sources of its own backups.
	TagCopyFailed = TagPrefix + "copy-failed"
	// TagDeletionRequestedAt, on a source snapshot, records that its deletion began (RFC 3339):
	// no copy of it is started afterwards.
	TagDeletionRequestedAt = TagPrefix + "deletion-requested-at"
	// TagBackupUID, on a source snapshot, is the UID of the Velero Backup it was taken for. UIDs
	// are unique across clusters and across backups reusing a name, so it identifies this
	// install's backup where the name cannot.
	TagBackupUID = TagPrefix + "backup-uid"
	// TagInstall, on a source snapshot (and so on its copies), identifies the Velero install that
	// took it: the UID of its cluster's kube-system namespace and Velero's namespace, which a
	// synced or re-created Backup, a recovery cluster or a reinstall do not change or share.
	// Snapshots without it (earlier releases) belong to no known install.
	TagInstall = TagPrefix + "install"
	// TagCreateToken, on a source snapshot, is random and shared by every request of one
	// CreateSnapshot call: after an ambiguous failure the call looks only for its own snapshot.
	TagCreateToken = TagPrefix + "create-token"
	// TagRecorded, on a source snapshot, says whether CreateSnapshot returned it to Velero:
	// recordedPending from its creation until then; recordedTrue once returned by a call that
	// may have made more than one (the others are deleted), recordedReturned once returned by a
	// call that made only it. Snapshots of earlier releases carry recordedTrue or nothing.
	TagRecorded = TagPrefix + "recorded"
	// TagSourceSnapshotID, on a copy, names the snapshot it was copied from.
	TagSourceSnapshotID = TagPrefix + "source-snapshot-id"
	// TagSourceRegion, on a copy, names the region of the snapshot it was copied from.
	TagSourceRegion = TagPrefix + "source-region"
	// TagSourceAccount, on a vault copy, names the account of the snapshot it was copied from.
	TagSourceAccount = TagPrefix + "source-account"
	// TagVaultAccount, on a source snapshot, names the account its vault copy goes to.
	TagVaultAccount = TagPrefix + "vault-account"
	// TagVaultRegion, on a source snapshot, names the region of its vault copy.
	TagVaultRegion = TagPrefix + "vault-region"
	// TagVaultKMSKeyID, on a source snapshot, names the vault account's KMS key that encrypts
	// its vault copy.
	TagVaultKMSKeyID = TagPrefix + "vault-kms-key-id"
	// TagVaultLock, on a source snapshot, asks for a lock on its vault copy:
	// "<mode>:<days>[:<cool-off hours>]".
	TagVaultLock = TagPrefix + "vault-lock"
	// TagVaultRequestedAt, on a source snapshot, records when its vault copy was last requested
	// (RFC 3339), as TagCopyRequestedAt does for the regional copy.
	TagVaultRequestedAt = TagPrefix + "vault-requested-at"
	// TagVaultSharedAt, on a source snapshot, is written before the snapshot is shared with the
	// vault account (RFC 3339) and removed once the share is removed: while it is there, the
	// snapshot may be shared.
	TagVaultSharedAt = TagPrefix + "vault-shared-at"
	// TagBackupDeletedAt, on a snapshot kept by its lock (or a vault copy kept by
	// vaultRetainOnDelete), records when its backup was deleted (RFC 3339).
	TagBackupDeletedAt = TagPrefix + "backup-deleted-at"
	// TagVolumeType, TagVolumeIOPS and TagVolumeThroughput record the volume's settings
	// so a restore can recreate them.
	TagVolumeType       = TagPrefix + "volume-type"
	TagVolumeIOPS       = TagPrefix + "volume-iops"
	TagVolumeThroughput = TagPrefix + "volume-throughput"
	// TagVolumeAZ, on a source snapshot, is the backed-up volume's availability zone: a restore
	// in the volume's region uses it when Velero passes no zone (a PV whose only zone is one
	// Velero does not read, such as EKS Auto Mode's topology key).
	TagVolumeAZ = TagPrefix + "volume-az"
	// TagRestoreToken, on a restored volume, is the ClientToken of the CreateVolume that made
	// it: when every answer of that call is lost, the volume is found by it.
	TagRestoreToken = TagPrefix + "restore-token"
)

// VolumeSnapshotLocation config keys.
const (
	ConfigRegion                        = "region"
	ConfigProfile                       = "profile"
	ConfigCredentialsFile               = "credentialsFile"
	ConfigEnableSharedConfig            = "enableSharedConfig"
	ConfigEBSKMSKeyID                   = "ebsKmsKeyId"
	ConfigCopyToRegion                  = "copyToRegion"
	ConfigCopyKMSKeyID                  = "copyKmsKeyId"
	ConfigCopyCompletionDurationMinutes = "copyCompletionDurationMinutes"
	ConfigRestoreAvailabilityZone       = "restoreAvailabilityZone"
	ConfigVaultAccountID                = "vaultAccountId"
	ConfigVaultCredentialSecret         = "vaultCredentialSecret"
	ConfigVaultCredentialKey            = "vaultCredentialKey"
	ConfigVaultProfile                  = "vaultProfile"
	ConfigVaultRegion                   = "vaultRegion"
	ConfigVaultKMSKeyID                 = "vaultKmsKeyId"
	ConfigVaultLockMode                 = "vaultLockMode"
	ConfigVaultLockDurationDays         = "vaultLockDurationDays"
	ConfigVaultLockCoolOffHours         = "vaultLockCoolOffHours"
	ConfigVaultRetainOnDelete           = "vaultRetainOnDelete"
	ConfigVaultBucket                   = "vaultBucket"
	ConfigVaultBucketPrefix             = "vaultBucketPrefix"
	ConfigVaultBucketRegion             = "vaultBucketRegion"
)

// TagVaultRetainOnDelete, "true" on a source snapshot taken by a location with
// vaultRetainOnDelete and on its vault copy, keeps the vault copy when its backup is deleted,
// whichever location deletes it: one without vault config, or one restoring from the vault
// that finds the vault copy as a plain copy of the recorded source.
const TagVaultRetainOnDelete = TagPrefix + "vault-retain-on-delete"
