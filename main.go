// Command velero-plugin-for-aws-async serves the plugins Velero runs for asynchronous EBS
// snapshots with cross-region copies. Run as `velero-plugin-for-aws-async check [flags]`, it
// checks the plugin's VolumeSnapshotLocations instead (internal/check) and exits.
package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"github.com/vmware-tanzu/velero/pkg/features"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"

	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	plugin "github.com/velero-async/velero-plugin-for-aws/velero-plugin-for-aws"
)

func main() {
	// Velero starts plugin processes with no arguments or with its server's flags (--features,
	// --log-level, …), all beginning with "-": a first argument "check" is only ever a person's.
	if len(os.Args) > 1 && os.Args[1] == check.Command {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := check.Main(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	pflag.CommandLine.Var(featureFlags{}, "features", "Velero feature flags, passed on by the Velero server")
	plugin.Register(framework.NewServer().BindFlags(pflag.CommandLine), ec2api.NewFactory()).Serve()
}

// featureFlags enables the Velero features named on the command line, as the Velero server does.
type featureFlags struct{}

func (featureFlags) String() string { return strings.Join(features.All(), ",") }
func (featureFlags) Type() string   { return "stringSlice" }
func (featureFlags) Set(v string) error {
	features.Enable(strings.Split(v, ",")...)
	return nil
}
