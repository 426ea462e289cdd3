package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

// Command is the subcommand's name: the first argument of the plugin binary.
const Command = "drill"

// Exit statuses, as check's and audit's.
const (
	// ExitPassed: every volume of the sample was restored (and initialized when asked) and deleted.
	ExitPassed = cli.ExitOK
	// ExitFailed: a volume could not be restored, did not become available in time, or could
	// not be deleted.
	ExitFailed = 1
	// ExitError: the drill could not run.
	ExitError = cli.ExitError
)

// Main runs `velero-plugin-for-aws-async drill` with args (those after "drill") and returns the
// exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := cli.New(Command, "(--backup NAME | --schedule NAME) --confirm [flags]", fmt.Sprintf(
		"Restores the backup's volumes from its copies in the location's copyToRegion (--from source:\n"+
			"its snapshots in the location's region; --from vault: its vault copies, with the vault's\n"+
			"credentials) with the restore code Velero's restore uses, measures how long until each volume\n"+
			"is available (and initialized), then deletes every volume it made, also when interrupted.\n"+
			"It never touches a snapshot.\n"+
			"Exit status: %d passed, %d failed, %d the drill could not run.", ExitPassed, ExitFailed, ExitError), stderr)
	fs := cmd.Flags
	var o Options
	fs.StringVar(&o.Backup, "backup", "", "the Backup to restore")
	fs.StringVar(&o.Schedule, "schedule", "", "instead of --backup, restore the newest Completed or PartiallyFailed backup of this Schedule (for a CronJob)")
	from := fs.String("from", string(FromCopy), fmt.Sprintf("what to restore from: %s (the copies in the location's copyToRegion), %s (the location's region) or %s (the vault copies)", FromCopy, FromSource, FromVault))
	fs.StringVar(&o.Location, "location", "", "the VolumeSnapshotLocation whose settings and credentials the drill uses, e.g. a recovery cluster's (default: the backup's)")
	fs.IntVar(&o.Limits.MaxVolumes, "max-volumes", 0, "restore at most this many volumes (0: all)")
	fs.Int64Var(&o.Limits.MaxGiB, "max-gib", 0, "restore at most this many GiB in all (0: no limit)")
	fs.BoolVar(&o.WaitInitialized, "wait-initialized", false, "wait until each volume is fully initialized from its snapshot, not only available")
	fs.BoolVar(&o.Record, "record", false, "write the result on the Backup (annotation "+audit.DrillAnnotation+"), which audit shows")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "give up waiting for the volumes after this long")
	confirm := fs.Bool("confirm", false, "confirm the drill: it creates billable volumes (and deletes them)")
	invalid := func() error {
		o.From = From(*from)
		switch {
		case !slices.Contains(Froms, o.From):
			return badFrom(o.From)
		case (o.Backup == "") == (o.Schedule == ""):
			return errors.New("name the backup: --backup NAME, or --schedule NAME for its newest")
		case !*confirm:
			return errors.New("a drill creates billable EBS volumes for its duration: add --confirm to run it")
		case o.Timeout <= 0 || o.Timeout >= audit.DrillMaxDuration:
			return fmt.Errorf("--timeout %s: want more than 0 and less than %s", o.Timeout, audit.DrillMaxDuration)
		}
		return nil
	}
	return cmd.Run(args, stdout, invalid, func(session *cli.Session) (cli.Report, int, error) {
		d := &Driller{
			Kube: session.Kube, Records: audit.VeleroRecords{Client: session.Kube}, Resolver: session.Resolver,
			Clients: ec2api.NewFactory(), Clock: clock.RealClock{}, Log: session.Log,
			Namespace: cmd.Namespace, Provider: location.DefaultProvider,
		}
		rep, err := d.Run(ctx, o)
		if err != nil {
			return nil, 0, err
		}
		return rep, rep.Exit(), nil
	})
}
