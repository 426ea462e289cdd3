// Package plugin composes the plugin's jobs (internal/tracking, internal/deleting, internal/restoring) into Velero's plugin interfaces: a
// VolumeSnapshotter that only starts snapshots, a BackupItemAction v2 that tracks each snapshot
// and its cross-region copy as an asynchronous operation, and a RestoreItemAction v2 that keeps a
// restore waiting until its volumes are usable.
package plugin
