// Package commands dispatches the plugin binary's arguments: a command for people (check,
// audit, drill, version, --help), or Velero's start of the binary to serve its plugins.
package commands

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/version"
)

// binaryName is the plugin binary's name, in Velero's plugins directory and in usage lines.
const binaryName = cli.BinaryName

// Exit statuses of the binary's own commands (a command's own, such as check's, may say more).
const (
	exitOK    = 0
	exitUsage = 2
)

// command is one of the binary's commands for people: the first argument names it.
type command struct {
	name, summary string
	// run gets the arguments after the command's name and returns the exit status.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands are the binary's commands for people, in the order --help lists them.
var commands = []command{
	{check.Command, "check this plugin's VolumeSnapshotLocations before the first backup; changes nothing", check.Main},
	{audit.Command, "what each backup can restore where, its age, and what is orphaned; read-only", audit.Main},
	{drill.Command, "restore a backup's volumes where it would recover, time it, delete them", drill.Main},
	{versionCommand, "print the plugin's version and commit", printVersion},
}

// versionCommand prints the version; helpArgs ask for the usage.
const versionCommand = "version"

var helpArgs = []string{"--help", "-h", "help"}

// Serving is what the binary serves once Run returns.
type Serving int

const (
	// Exit: a command for people ran; the binary exits with its status.
	Exit Serving = iota
	// ServePlugins: Velero started the binary to serve its plugins.
	ServePlugins
	// ServeNone: Velero's plugin manager, in one of this binary's own commands (audit starts
	// the storage locations' plugins), asks which plugins the running binary compiled in, as
	// it asks Velero's own: none. This binary's plugins are found in the plugin directory.
	ServeNone
)

// runPlugins is the argument Velero's plugin manager starts the running binary with, to list
// the plugins compiled into it (pkg/plugin/clientmgmt/process, client_builder.go).
const runPlugins = "run-plugins"

// Run runs the command args name, or says what to serve when args are Velero's: Velero starts
// plugin processes with no arguments or with its server's flags (--features, --log-level, …),
// all beginning with "-", and never with --help, so a first argument that is no flag, or is a
// help flag, is only ever a person's, but for run-plugins.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int, serve Serving) {
	if len(args) == 0 {
		return exitOK, ServePlugins
	}
	first := args[0]
	if first == runPlugins {
		return exitOK, ServeNone
	}
	for _, h := range helpArgs {
		if first == h {
			usage(stdout)
			return exitOK, Exit
		}
	}
	for _, c := range commands {
		if first == c.name {
			return c.run(ctx, args[1:], stdout, stderr), Exit
		}
	}
	if strings.HasPrefix(first, "-") {
		return exitOK, ServePlugins
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n\n", binaryName, first)
	usage(stderr)
	return exitUsage, Exit
}

// usage lists the commands for people first, then says what the binary does without one.
func usage(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: Velero plugins for EBS snapshots that do not block backups,\nwith copies to a second region and a vault account.\n\n", binaryName)
	fmt.Fprintf(&b, "Usage:\n  %s COMMAND [flags]\n\nCommands:\n", binaryName)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "\nRun `%s COMMAND --help` for a command's flags.\n\n", binaryName)
	fmt.Fprintf(&b, "With no command, the binary serves Velero its plugins %s,\n%s and %s:\n"+
		"Velero starts it with its server's flags (--log-level, --features, …). It is not run by hand.\n",
		model.VolumeSnapshotterName, model.BackupItemActionName, model.RestoreItemActionName)
	_, _ = io.WriteString(w, b.String())
}

// printVersion is the version command: the plugin's version and commit, stamped at build.
func printVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "%s %s: takes no arguments\n", binaryName, versionCommand)
		return exitUsage
	}
	fmt.Fprintln(stdout, binaryName, version.String())
	return exitOK
}
