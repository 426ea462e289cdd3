package plugin

import (
	"context"
	"sync"

	"github.com/sirupsen/logrus"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/restoring"
	"github.com/velero-async/velero-plugin-for-aws/internal/tracking"
)

// installUserAgent is the user agent of the read of this install's identity.
const installUserAgent = "velero-plugin-for-aws-async"

// Register registers the plugin's three plugins on server, reaching EC2 through clients. The
// item actions read the backup's VolumeSnapshotLocations (and their Secrets) through the
// Kubernetes API, to use the credentials the volume snapshotter used; the server's
// --default-volume-snapshot-locations flag, which Velero passes on to plugins, names the default.
func Register(server framework.Server, clients *ec2api.Factory) framework.Server {
	handoff := ebs.NewHandoff(clock.RealClock{})
	var once sync.Once
	var shared *location.Resolver
	// The flags are parsed when Serve starts, before any plugin is made.
	resolver := func(log logrus.FieldLogger) *location.Resolver {
		once.Do(func() {
			shared = location.New(
				location.WithProvider(model.VolumeSnapshotterName),
				location.WithDefaultLocations(server.GetConfig().DefaultVolumeSnapshotLocations.Data()))
		})
		return shared.WithLogger(log)
	}
	var installOnce sync.Once
	var installID string
	install := func() string { // read once per plugin process; unread, snapshots go untagged
		installOnce.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), location.DefaultRequestTimeout)
			defer cancel()
			if kube, err := location.NewClient("", installUserAgent); err == nil {
				installID, _ = location.ReadInstall(ctx, kube, resolver(logrus.StandardLogger()).Namespace())
			}
		})
		return installID
	}
	locator := func(log logrus.FieldLogger) ebs.Locator { return ebs.NewLocator(resolver(log), clients) }
	defaults := clients.ForCredentials(ec2api.Credentials{})
	return server.
		RegisterVolumeSnapshotter(model.VolumeSnapshotterName, func(log logrus.FieldLogger) (any, error) {
			vault := func(ctx context.Context, config map[string]string) (*ec2api.Credentials, error) {
				return resolver(log).VaultCredentials(ctx, "", config)
			}
			return NewVolumeSnapshotter(clients, handoff, vault, log).TagInstall(install), nil
		}).
		RegisterBackupItemActionV2(model.BackupItemActionName, func(log logrus.FieldLogger) (any, error) {
			tracker := tracking.NewTracker(defaults, ebs.WithLogger(log), ebs.WithLocator(locator(log)), ebs.WithInstall(install))
			return NewSnapshotProgressAction(tracker, handoff, clock.RealClock{}, log), nil
		}).
		RegisterRestoreItemActionV2(model.RestoreItemActionName, func(log logrus.FieldLogger) (any, error) {
			watcher := restoring.NewVolumeWatcher(defaults, ebs.WithLogger(log), ebs.WithLocator(locator(log)))
			return NewVolumeRestoreAction(watcher, clock.RealClock{}, log), nil
		})
}
