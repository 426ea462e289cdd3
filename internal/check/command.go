package check

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/version"
)

// userAgent is the check's Kubernetes client's, as the plugin's item actions name theirs.
const userAgent = "velero-plugin-for-aws-async-check"

// Main runs `velero-plugin-for-aws-async check` with args (those after "check") and returns the
// exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := cli.New(Command, fmt.Sprintf("Usage: velero-plugin-for-aws-async check [flags]\n\n"+
		"Checks every VolumeSnapshotLocation of this plugin before the first backup: credentials, accounts,\n"+
		"regions, the cluster's EBS volumes, the EC2 permissions (dry runs), KMS keys, copy slots and Velero's\n"+
		"settings. It creates, changes and deletes nothing. Exit status: %d no problem (warnings allowed),\n"+
		"%d problems found, %d the check could not run or could not read what it needs (an \"incomplete\" line).\n\n",
		ExitOK, ExitProblems, ExitError), stderr)
	only := cmd.Flags.String("location", "", "check only this VolumeSnapshotLocation (default: every one of provider "+location.DefaultProvider+")")
	if err := cmd.Parse(args); err != nil {
		if cli.IsHelp(err) {
			return ExitOK
		}
		return ExitError
	}
	session, err := cmd.Open(userAgent)
	if err != nil {
		return ExitError
	}
	defer session.Close()
	factory := ec2api.NewFactory()
	c := &Checker{
		Kube: session.Kube, Resolver: session.Resolver,
		Clients: factory, Identities: factory,
		Namespace: cmd.Namespace, Provider: location.DefaultProvider,
		Shell: shellOf(os.Getenv, fileExists),
	}
	rep, err := c.Run(ctx, *only)
	if err != nil {
		cmd.Errorf("%v", err)
		return ExitError
	}
	rep.Plugin = version.String()
	if cmd.Write(stdout, rep.WriteText, rep.WriteJSON) != nil {
		return ExitError
	}
	return rep.ExitCode()
}

// fileExists reports whether path names something the check can stat.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
