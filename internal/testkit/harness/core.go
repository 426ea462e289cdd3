package harness

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt/process"
	biav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/backupitemaction/v2"
	riav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v2"
	vsv1 "github.com/vmware-tanzu/velero/pkg/plugin/velero/volumesnapshotter/v1"
)

// PluginManager is the part of Velero's clientmgmt.Manager that core uses for volume
// snapshots and item operations. clientmgmt.Manager satisfies it; so can an in-process fake.
type PluginManager interface {
	GetVolumeSnapshotter(name string) (vsv1.VolumeSnapshotter, error)
	GetBackupItemActionsV2() ([]biav2.BackupItemAction, error)
	GetBackupItemActionV2(name string) (biav2.BackupItemAction, error)
	GetRestoreItemActionsV2() ([]riav2.RestoreItemAction, error)
	GetRestoreItemActionV2(name string) (riav2.RestoreItemAction, error)
	CleanupClients()
}

// ManagerFactory returns a fresh plugin manager, as core's newPluginManager does.
type ManagerFactory func() PluginManager

// ProcessPlugins discovers the plugins in dir with Velero's process registry and returns a
// factory of Velero plugin managers over it: every manager starts its own plugin processes.
func ProcessPlugins(dir string, log logrus.FieldLogger, level logrus.Level) (ManagerFactory, error) {
	registry := process.NewRegistry(dir, log, level)
	if err := registry.DiscoverPlugins(); err != nil {
		return nil, fmt.Errorf("discovering plugins in %s: %w", dir, err)
	}
	return func() PluginManager { return clientmgmt.NewManager(log, level, registry) }, nil
}

// NewLogger returns a logrus logger writing text to w at level.
func NewLogger(w io.Writer, level logrus.Level) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(w)
	l.SetLevel(level)
	return l
}

// Core plays Velero core: it runs backups, restores and deletions through plugin managers.
type Core struct {
	// Plugins returns a fresh plugin manager; core uses one per backup, restore and reconcile.
	Plugins ManagerFactory
	// Log receives core's log lines.
	Log logrus.FieldLogger
	// SyncPeriod is --item-operation-sync-frequency: the time between reconciles.
	SyncPeriod time.Duration
	// Workers is --item-block-worker-count: how many PVs are backed up at once (at least 1).
	Workers int
	// Hooks run at points of the operation loop, for fault injection.
	Hooks Hooks
	// Observer, if set, sees the state after the item phase and after every reconcile.
	Observer Observer
	// API, when set, is the cluster's Kubernetes API. Core writes there what Velero's server
	// has in it: the VolumeSnapshotLocation of every backup, restore and deletion, every Backup
	// and Restore when it starts, when its item phase ends, after every reconcile (so before
	// every round of Progress calls) and when it ends, and it deletes a Backup whose deletion
	// succeeded. It reads there the Secret of a location's spec.credential, which it hands to the
	// volume snapshotter as a credentialsFile as Velero does. Without an API core writes nothing
	// and refuses locations with spec.credential.
	API API
	// CredentialsDir is where core writes the credentials files of locations' spec.credential
	// (Velero's server uses <os.TempDir()>/credentials); by default a new temporary directory.
	CredentialsDir string

	// observing makes the backup controller and the operations controller, which run at once
	// when several backups do, call Observer one at a time.
	observing sync.Mutex
	// credMu guards credDir, the credentials directory in use, and the files in it.
	credMu  sync.Mutex
	credDir string
}

// Hooks run inside the operation loop; nil hooks are skipped. When several backups run at once
// (Backups), n counts the reconciles of the backup concerned, and AfterItem, which runs in the
// backup controller, may run while the others run in the operations controller.
type Hooks struct {
	// AfterItem runs in the item phase after the i-th PV (counting from 0) is backed up.
	AfterItem func(i int)
	// BeforeReconcile runs before reconcile n (counting from 1) creates its plugin manager.
	BeforeReconcile func(n int)
	// BeforeProgress runs in reconcile n before the Progress call of the i-th open operation
	// (counting from 0), after the plugin manager of that reconcile is in use.
	BeforeProgress func(n, i int)
	// Expire runs in reconcile n after a Progress call that left op open; when it reports true,
	// core treats op as past its item-operation timeout, as for an operation opened longer
	// before the others than the timeout: it calls Cancel and fails the operation, and polls it
	// no more.
	Expire func(n int, op *Operation) bool
}

func (c *Core) log() logrus.FieldLogger {
	if c.Log == nil {
		return NewLogger(io.Discard, logrus.PanicLevel)
	}
	return c.Log
}

func (c *Core) syncPeriod() time.Duration {
	if c.SyncPeriod <= 0 {
		return 10 * time.Second
	}
	return c.SyncPeriod
}

func (c *Core) workers() int {
	if c.Workers < 1 {
		return 1
	}
	return c.Workers
}

func (c *Core) observe(s Status) {
	c.observing.Lock()
	defer c.observing.Unlock()
	if c.Observer != nil {
		c.Observer.Observe(s)
	}
}
