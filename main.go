// Command velero-plugin-for-aws-async serves the plugins Velero runs for asynchronous EBS
// snapshots with cross-region copies. Run with a command for people as its first argument
// (`velero-plugin-for-aws-async check`, `audit`, `drill`, `version`, `--help`; internal/commands),
// it does that instead and exits; started with run-plugins by the plugin manager of its own
// audit, it serves none.
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

	"github.com/velero-async/velero-plugin-for-aws/internal/commands"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	plugin "github.com/velero-async/velero-plugin-for-aws/velero-plugin-for-aws"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, serve := commands.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch serve {
	case commands.Exit:
		os.Exit(code)
	case commands.ServeNone:
		framework.NewServer().Serve()
	case commands.ServePlugins:
		pflag.CommandLine.Var(featureFlags{}, "features", "Velero feature flags, passed on by the Velero server")
		plugin.Register(framework.NewServer().BindFlags(pflag.CommandLine), ec2api.NewFactory()).Serve()
	}
}

// featureFlags enables the Velero features named on the command line, as the Velero server does.
type featureFlags struct{}

func (featureFlags) String() string { return strings.Join(features.All(), ",") }
func (featureFlags) Type() string   { return "stringSlice" }
func (featureFlags) Set(v string) error {
	features.Enable(strings.Split(v, ",")...)
	return nil
}
