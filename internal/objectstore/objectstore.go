// Package objectstore reads what Velero keeps in its backup storage locations: which backups a
// location's object storage holds, and each backup's record of its native snapshots. It reads
// them as Velero's backup sync and deletion do (pkg/persistence), through the location's
// object-store plugin, started from a plugin directory by Velero's plugin manager: the upstream
// velero-plugin-for-aws for an S3 bucket, with the location's config and credentials as Velero's
// server passes them. So it reads what the bucket holds whatever the cluster has synced, and
// needs no Velero server to answer.
package objectstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/persistence"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt/process"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CallTimeout bounds one read of a storage location; the plugin calls take no context.
const CallTimeout = 2 * time.Minute

// DefaultPluginDir is the directory of the running binary: in Velero's pod, /plugins, where
// every plugin's init container put its binary.
func DefaultPluginDir() string {
	exe, err := os.Executable()
	if err != nil {
		return "/plugins"
	}
	return filepath.Dir(exe)
}

// RecordedSnapshot is one native snapshot Velero recorded for a backup.
type RecordedSnapshot struct {
	// ID is the snapshot ID CreateSnapshot returned; Location the VolumeSnapshotLocation.
	ID, Location, PV string
	// VolumeType, VolumeAZ and VolumeIOPS are the backed-up volume's, which a restore passes
	// to CreateVolumeFromSnapshot.
	VolumeType, VolumeAZ string
	VolumeIOPS           *int64
}

// Secrets reads the Secrets a storage location names: its credential, written to a private
// file for its plugin (*location.Resolver), and its CA certificate.
type Secrets interface {
	StorageCredentialsFile(ctx context.Context, bsl string, sel *corev1.SecretKeySelector) (string, error)
}

// Reader reads storage locations through their object-store plugins. Close stops the plugin
// processes it started.
type Reader struct {
	manager clientmgmt.Manager
	getter  persistence.ObjectBackupStoreGetter
	secrets *secretStores
	log     logrus.FieldLogger

	mu     sync.Mutex
	stores map[string]persistence.BackupStore // by storage location name
}

// Open discovers the plugins in dir, as Velero's server does at its start. Velero's plugin
// manager starts the running binary too, with the argument run-plugins, to list the plugins
// compiled into it (the binary answers none), and passes every plugin the running process's
// arguments after its second, as the server's flags: the binary must have been started with a
// command.
func Open(ctx context.Context, dir string, kube client.Reader, namespace string, secrets Secrets, log logrus.FieldLogger) (*Reader, error) {
	if len(os.Args) < 2 {
		return nil, errors.New("Velero's plugin manager needs the binary started with a command")
	}
	level := logrus.WarnLevel
	registry := process.NewRegistry(dir, log, level)
	if err := registry.DiscoverPlugins(); err != nil {
		return nil, fmt.Errorf("starting the plugins in %s to read the backup storage locations: %w", dir, err)
	}
	stores := &secretStores{ctx: ctx, kube: kube, namespace: namespace, secrets: secrets}
	return &Reader{
		manager: clientmgmt.NewManager(log, level, registry),
		getter:  persistence.NewObjectBackupStoreGetterWithSecretStore(stores, stores), secrets: stores,
		log: log, stores: map[string]persistence.BackupStore{},
	}, nil
}

// Close stops the plugin processes.
func (r *Reader) Close() { r.manager.CleanupClients() }

// Backups lists the backups bsl's object storage holds, by name.
func (r *Reader) Backups(ctx context.Context, bsl *velerov1.BackupStorageLocation) ([]string, error) {
	var names []string
	err := r.call(ctx, bsl, func(s persistence.BackupStore) (err error) {
		names, err = s.ListBackups()
		return err
	})
	return names, err
}

// ErrNoRecord says a backup's object storage holds no record of its native snapshots.
var ErrNoRecord = errors.New("no record of its native snapshots is in its storage location")

// VolumeSnapshots returns the native snapshots Velero recorded for backup in bsl's object
// storage, without those whose CreateSnapshot failed; ErrNoRecord when it holds no record.
func (r *Reader) VolumeSnapshots(ctx context.Context, bsl *velerov1.BackupStorageLocation, backup string) ([]RecordedSnapshot, error) {
	var out []RecordedSnapshot
	err := r.call(ctx, bsl, func(s persistence.BackupStore) error {
		snaps, err := s.GetBackupVolumeSnapshots(backup)
		if err != nil {
			return err
		}
		if snaps == nil {
			return ErrNoRecord
		}
		out = make([]RecordedSnapshot, 0, len(snaps))
		for _, v := range snaps {
			if v.Status.ProviderSnapshotID == "" {
				continue // a failed CreateSnapshot: Velero recorded no snapshot
			}
			out = append(out, RecordedSnapshot{ID: v.Status.ProviderSnapshotID, Location: v.Spec.Location, PV: v.Spec.PersistentVolumeName,
				VolumeType: v.Spec.VolumeType, VolumeAZ: v.Spec.VolumeAZ, VolumeIOPS: v.Spec.VolumeIOPS})
		}
		return nil
	})
	return out, err
}

// call runs read on bsl's backup store, opened once, within CallTimeout and ctx.
func (r *Reader) call(ctx context.Context, bsl *velerov1.BackupStorageLocation, read func(persistence.BackupStore) error) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		s, err := r.store(bsl)
		if err == nil {
			err = read(s)
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer from the object-store plugin of backup storage location %s: %w", bsl.Name, ctx.Err())
	}
}

// store opens bsl's backup store through its plugin, once.
func (r *Reader) store(bsl *velerov1.BackupStorageLocation) (persistence.BackupStore, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.stores[bsl.Name]; ok {
		return s, nil
	}
	r.secrets.bsl = bsl.Name
	s, err := r.getter.Get(bsl, r.manager, r.log)
	if err != nil {
		return nil, fmt.Errorf("opening backup storage location %s (provider %s) through its plugin: %w", bsl.Name, bsl.Spec.Provider, err)
	}
	r.stores[bsl.Name] = s
	return s, nil
}

// secretStores hands Velero's backup store getter a storage location's credential file and its
// CA certificate Secret, as Velero's server's credential and secret stores do. Velero's getter
// takes no context and no location name: bsl is the storage location being opened (Reader.store
// opens one at a time).
type secretStores struct {
	ctx       context.Context
	kube      client.Reader
	namespace string
	secrets   Secrets
	bsl       string
}

// Path writes the Secret key sel selects to a private file and returns its path.
func (s *secretStores) Path(sel *corev1.SecretKeySelector) (string, error) {
	return s.secrets.StorageCredentialsFile(s.ctx, s.bsl, sel)
}

// Get returns the Secret key sel selects.
func (s *secretStores) Get(sel *corev1.SecretKeySelector) (string, error) {
	var secret corev1.Secret
	if err := s.kube.Get(s.ctx, client.ObjectKey{Namespace: s.namespace, Name: sel.Name}, &secret); err != nil {
		return "", err
	}
	data, ok := secret.Data[sel.Key]
	if !ok {
		return "", fmt.Errorf("secret %s/%s has no key %q", s.namespace, sel.Name, sel.Key)
	}
	return string(data), nil
}
