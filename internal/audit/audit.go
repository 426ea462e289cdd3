// Package audit is the plugin's disaster-recovery audit (velero-plugin-for-aws-async audit):
// for each backup of the plugin's VolumeSnapshotLocations it counts the sources, the copies in
// copyToRegion and the vault copies (with their locks) and says whether the backup is DR-ready;
// for each schedule it gives the newest DR-ready backup in each recovery place against the
// schedule's interval; for a location with a vault bucket, whether each backup restores
// without its source account (vault copies and the record in the vault bucket), and the
// recovery point for that loss; and it finds this install's orphans: snapshots no backup
// needs, with their size and monthly cost.
//
// A snapshot is an orphan only when no backup record in any of this install's backup storage
// locations can name it (orphans.go): the audit reads the storage locations' object storage
// through their plugins, as Velero's backup sync does, so a backup the cluster has not synced
// yet keeps its snapshots. It is this install's when it carries this install's identity
// (ebs.TagInstall). Others' are counted, and those of releases that did not tag the install
// are listed, never deleted.
//
// The audit reads only (Describe and List requests, and reads of object storage) unless
// --delete-orphans --confirm is given.
package audit

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/utils/clock"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/objectstore"
)

// Command is the subcommand's name: the first argument of the plugin binary.
const Command = "audit"

// Main runs `velero-plugin-for-aws-async audit` with args (those after "audit") and returns the
// exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := cli.New(Command, "[flags]", fmt.Sprintf(
		"Says, for each backup of this plugin's VolumeSnapshotLocations, what is restorable where and since\n"+
			"when; for each schedule, how old the newest restorable backup is in each recovery place; and which\n"+
			"snapshots of this install no backup needs, with what they cost. It changes nothing unless\n"+
			"--delete-orphans --confirm is given. Exit status: %d nothing to report, %d findings, %d the audit\n"+
			"could not read everything.", ExitOK, ExitFindings, ExitError), stderr)
	fs := cmd.Flags
	def := DefaultOptions()
	only := fs.String("location", "", "audit only this VolumeSnapshotLocation (default: every one of provider "+location.DefaultProvider+")")
	deleteOrphans := fs.Bool("delete-orphans", false, "delete this install's orphans (only with --confirm)")
	confirm := fs.Bool("confirm", false, "confirm --delete-orphans")
	standard := fs.Float64("price-standard", DefaultStandardPrice, "snapshot storage price, USD per GiB-month, standard tier")
	archive := fs.Float64("price-archive", DefaultArchivePrice, "snapshot storage price, USD per GiB-month, archive tier")
	grace := fs.Duration("orphan-grace", def.OrphanGrace, "a snapshot younger than this is never an orphan")
	slack := fs.Duration("recovery-slack", def.RecoverySlack, "how much older than its schedule's interval a recovery point may be")
	pluginDir := fs.String("plugin-dir", objectstore.DefaultPluginDir(), "directory of Velero's plugins, the object-store plugin of every backup storage location among them (in Velero's pod: /plugins)")
	invalid := func() error {
		if *confirm && !*deleteOrphans {
			return errors.New("--confirm confirms --delete-orphans, which is not given")
		}
		return nil
	}
	return cmd.Run(args, stdout, invalid, func(session *cli.Session) (cli.Report, int, error) {
		opts := Options{Prices: map[string]float64{TierStandard: *standard, TierArchive: *archive}, OrphanGrace: *grace, RecoverySlack: *slack}
		stores, err := objectstore.Open(ctx, *pluginDir, session.Kube, cmd.Namespace, session.Resolver, session.Log)
		if err != nil {
			return nil, 0, err
		}
		defer stores.Close()
		factory := ec2api.NewFactory()
		a := &Auditor{
			Kube: session.Kube, Stores: stores, Resolver: session.Resolver,
			Clients: factory, Buckets: factory, Clock: clock.RealClock{},
			Namespace: cmd.Namespace, Provider: location.DefaultProvider,
		}
		rep, err := a.Run(ctx, *only, opts, *deleteOrphans && *confirm)
		if err != nil {
			return nil, 0, err
		}
		if *deleteOrphans && !*confirm && len(rep.Orphans) > 0 {
			fmt.Fprintln(stderr, "audit: --delete-orphans without --confirm deletes nothing: add --confirm to delete the orphans listed")
		}
		return rep, rep.Exit(), nil
	})
}
