// Package e2e holds the end-to-end rig of the plugin: a real etcd, kube-apiserver and Velero server
// (with the upstream velero-plugin-for-aws serving the BackupStorageLocation from a local
// S3-compatible server) and this plugin serving the VolumeSnapshotLocation against the EC2
// simulator. The scenario lives in files behind the "e2e" build tag:
//
//	go test -tags e2e -v -timeout 40m ./internal/testkit/e2e/
//
// The tools are built by build-tools.sh (from the nested modules under tools/) into a cache keyed by
// their versions; set E2E_BIN to a directory holding them to skip that step. E2E_KEEP=1 keeps the
// work directory (logs are always kept and their folder is printed at the end).
package e2e
