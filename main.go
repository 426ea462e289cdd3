// Command velero-plugin-for-aws-async serves the plugins Velero runs for asynchronous EBS
// snapshots with cross-region copies.
package main

import (
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	"github.com/vmware-tanzu/velero/pkg/features"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	plugin "github.com/velero-async/velero-plugin-for-aws/velero-plugin-for-aws"
)

func main() {
	pflag.CommandLine.Var(featureFlags{}, "features", "Velero feature flags, passed on by the Velero server")
	clients := ec2api.NewFactory()
	framework.NewServer().
		BindFlags(pflag.CommandLine).
		RegisterVolumeSnapshotter(ebs.VolumeSnapshotterName, func(log logrus.FieldLogger) (any, error) {
			return plugin.NewVolumeSnapshotter(clients, log), nil
		}).
		RegisterBackupItemActionV2(ebs.BackupItemActionName, func(log logrus.FieldLogger) (any, error) {
			tracker := ebs.NewTracker(clients.ForCredentials(ec2api.Credentials{}), ebs.WithLogger(log))
			return plugin.NewSnapshotProgressAction(tracker, clock.RealClock{}, log), nil
		}).
		RegisterRestoreItemActionV2(ebs.RestoreItemActionName, func(log logrus.FieldLogger) (any, error) {
			watcher := ebs.NewVolumeWatcher(clients.ForCredentials(ec2api.Credentials{}), ebs.WithLogger(log))
			return plugin.NewVolumeRestoreAction(watcher, clock.RealClock{}, log), nil
		}).
		Serve()
}

// featureFlags enables the Velero features named on the command line, as the Velero server does.
type featureFlags struct{}

func (featureFlags) String() string { return strings.Join(features.All(), ",") }
func (featureFlags) Type() string   { return "stringSlice" }
func (featureFlags) Set(v string) error {
	features.Enable(strings.Split(v, ",")...)
	return nil
}
