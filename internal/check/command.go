package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/version"
)

// Command is the subcommand's name: the first argument of the plugin binary.
const Command = "check"

// Exit statuses.
const (
	// ExitOK: no finding failed and every check could read what it needs (warnings and lines
	// not checked allowed).
	ExitOK = 0
	// ExitProblems: at least one finding failed.
	ExitProblems = 1
	// ExitError: the check could not run (bad flags, no Kubernetes API, the locations not
	// listable).
	ExitError = 2
	// ExitIncomplete: no finding failed, but the Kubernetes API refused a read a check needs
	// (an "incomplete" line, whose fix says what to grant).
	ExitIncomplete = ExitError
)

// binaryName is the plugin binary's, which the text output names with its version.
const binaryName = "velero-plugin-for-aws-async"

// Output formats.
const (
	outputText = "text"
	outputJSON = "json"
)

// userAgent is the check's Kubernetes client's, as the plugin's item actions name theirs.
const userAgent = "velero-plugin-for-aws-async-check"

// Main runs `velero-plugin-for-aws-async check` with args (those after "check") and returns the
// exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet(Command, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: KUBECONFIG, ~/.kube/config, else the in-cluster config)")
	namespace := fs.String("namespace", location.Namespace(), "Velero's namespace (VELERO_NAMESPACE when set)")
	only := fs.String("location", "", "check only this VolumeSnapshotLocation (default: every one of provider "+location.DefaultProvider+")")
	output := fs.String("output", outputText, "output format: text or json")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: velero-plugin-for-aws-async check [flags]\n\n"+
			"Checks every VolumeSnapshotLocation of this plugin before the first backup: credentials, accounts,\n"+
			"regions, the cluster's EBS volumes, the EC2 permissions (dry runs), KMS keys, copy slots and Velero's\n"+
			"settings. It creates, changes and deletes nothing. Exit status: %d no problem (warnings allowed),\n"+
			"%d problems found, %d the check could not run or could not read what it needs (an \"incomplete\" line).\n\n",
			ExitOK, ExitProblems, ExitError)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK
		}
		return ExitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "check: unexpected arguments %q\n", fs.Args())
		return ExitError
	}
	if *output != outputText && *output != outputJSON {
		fmt.Fprintf(stderr, "check: --output %q: want %s or %s\n", *output, outputText, outputJSON)
		return ExitError
	}
	rep, err := run(ctx, *kubeconfig, *namespace, *only, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "check: %v\n", err)
		return ExitError
	}
	rep.Plugin = version.String()
	write := rep.WriteText
	if *output == outputJSON {
		write = rep.WriteJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "check: %v\n", err)
		return ExitError
	}
	return rep.ExitCode()
}

// run builds the real ports and runs the check. The credentials files the Resolver writes go
// to a directory of the check's own, removed at the end.
func run(ctx context.Context, kubeconfig, namespace, only string, stderr io.Writer) (Report, error) {
	kube, err := location.NewClient(kubeconfig, userAgent)
	if err != nil {
		return Report{}, err
	}
	tmp, err := os.MkdirTemp("", "velero-async-check-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(tmp)
	log := logrus.New()
	log.Out, log.Level = stderr, logrus.WarnLevel
	factory := ec2api.NewFactory()
	c := &Checker{
		Kube: kube,
		Resolver: location.New(location.WithReader(kube), location.WithNamespace(namespace),
			location.WithTempDir(tmp), location.WithLogger(log)),
		Clients: factory, Identities: factory,
		Namespace: namespace, Provider: location.DefaultProvider,
		Shell: shellOf(os.Getenv, fileExists),
	}
	return c.Run(ctx, only)
}

// fileExists reports whether path names something the check can stat.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
