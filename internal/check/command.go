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

// Main runs `velero-plugin-for-aws-async check` with args (those after "check") and returns the
// exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := cli.New(Command, "[flags]", fmt.Sprintf(
		"Checks every VolumeSnapshotLocation of this plugin before the first backup: credentials, accounts,\n"+
			"regions, the cluster's EBS volumes, the EC2 permissions (dry runs), KMS keys, copy slots and Velero's\n"+
			"settings. It creates, changes and deletes nothing. Exit status: %d no problem (warnings allowed),\n"+
			"%d problems found, %d the check could not run or could not read what it needs (an \"incomplete\" line).",
		ExitOK, ExitProblems, ExitError), stderr)
	only := cmd.Flags.String("location", "", "check only this VolumeSnapshotLocation (default: every one of provider "+location.DefaultProvider+")")
	return cmd.Run(args, stdout, nil, func(session *cli.Session) (cli.Report, int, error) {
		factory := ec2api.NewFactory()
		c := &Checker{
			Kube: session.Kube, Resolver: session.Resolver,
			Clients: factory, Identities: factory, Buckets: factory,
			Namespace: cmd.Namespace, Provider: location.DefaultProvider,
			Shell: shellOf(os.Getenv, fileExists),
		}
		rep, err := c.Run(ctx, *only)
		if err != nil {
			return nil, 0, err
		}
		rep.Plugin = version.String()
		return rep, rep.ExitCode(), nil
	})
}

// fileExists reports whether path names something the check can stat.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
