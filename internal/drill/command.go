package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

// Command is the subcommand's name: the first argument of the plugin binary.
const Command = "drill"

// Exit statuses, as check's and audit's.
const (
	// ExitPassed: every volume of the sample was restored (and initialized when asked) and deleted.
	ExitPassed = 0
	// ExitFailed: a volume could not be restored, did not become available in time, or could
	// not be deleted.
	ExitFailed = 1
	// ExitError: the drill could not run.
	ExitError = 2
)

// Output formats.
const (
	outputText = "text"
	outputJSON = "json"
)

// userAgent is the drill's Kubernetes client's.
const userAgent = "velero-plugin-for-aws-async-drill"

// Main runs `velero-plugin-for-aws-async drill` with args (those after "drill") and returns the
// exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet(Command, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: KUBECONFIG, ~/.kube/config, else the in-cluster config)")
	namespace := fs.String("namespace", location.Namespace(), "Velero's namespace (VELERO_NAMESPACE when set)")
	var o Options
	fs.StringVar(&o.Backup, "backup", "", "the Backup to restore (required)")
	fs.StringVar(&o.Location, "location", "", "the VolumeSnapshotLocation to restore through, e.g. the recovery region's (default: the backup's)")
	fs.IntVar(&o.Limits.MaxVolumes, "max-volumes", 0, "restore at most this many volumes (0: all)")
	fs.Int64Var(&o.Limits.MaxGiB, "max-gib", 0, "restore at most this many GiB in all (0: no limit)")
	fs.BoolVar(&o.WaitInitialized, "wait-initialized", false, "wait until each volume is fully initialized from its snapshot, not only available")
	fs.BoolVar(&o.Record, "record", false, "write the result on the Backup (annotation "+audit.DrillAnnotation+"), which audit shows")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "give up waiting for the volumes after this long")
	confirm := fs.Bool("confirm", false, "confirm the drill: it creates billable volumes (and deletes them)")
	output := fs.String("output", outputText, "output format: text or json")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: velero-plugin-for-aws-async drill --backup NAME --confirm [flags]\n\n"+
			"Restores the backup's volumes through a VolumeSnapshotLocation (the recovery region's, or the\n"+
			"vault's) with the restore code Velero's restore uses, measures how long until each volume is\n"+
			"available (and initialized), then deletes every volume it made. It never touches a snapshot.\n"+
			"Exit status: %d passed, %d failed, %d the drill could not run.\n\n", ExitPassed, ExitFailed, ExitError)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitPassed
		}
		return ExitError
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "drill: unexpected arguments %q\n", fs.Args())
		return ExitError
	case o.Backup == "":
		fmt.Fprintln(stderr, "drill: --backup NAME is required")
		return ExitError
	case !*confirm:
		fmt.Fprintln(stderr, "drill: a drill creates billable EBS volumes for its duration: add --confirm to run it")
		return ExitError
	case *output != outputText && *output != outputJSON:
		fmt.Fprintf(stderr, "drill: --output %q: want %s or %s\n", *output, outputText, outputJSON)
		return ExitError
	case o.Timeout <= 0 || o.Timeout >= audit.DrillMaxDuration:
		fmt.Fprintf(stderr, "drill: --timeout %s: want more than 0 and less than %s\n", o.Timeout, audit.DrillMaxDuration)
		return ExitError
	}
	kube, err := location.NewClient(*kubeconfig, userAgent)
	if err != nil {
		fmt.Fprintf(stderr, "drill: %v\n", err)
		return ExitError
	}
	tmp, err := os.MkdirTemp("", "velero-async-drill-")
	if err != nil {
		fmt.Fprintf(stderr, "drill: %v\n", err)
		return ExitError
	}
	defer os.RemoveAll(tmp)
	log := logrus.New()
	log.Out, log.Level = stderr, logrus.WarnLevel
	d := &Driller{
		Kube: kube, Records: audit.VeleroRecords{Client: kube},
		Resolver: location.New(location.WithReader(kube), location.WithNamespace(*namespace),
			location.WithTempDir(tmp), location.WithLogger(log)),
		Clients: ec2api.NewFactory(), Clock: clock.RealClock{}, Log: log,
		Namespace: *namespace, Provider: location.DefaultProvider,
	}
	rep, err := d.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "drill: %v\n", err)
		return ExitError
	}
	write := rep.WriteText
	if *output == outputJSON {
		write = rep.WriteJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "drill: %v\n", err)
		return ExitError
	}
	if !rep.Passed() {
		return ExitFailed
	}
	return ExitPassed
}
