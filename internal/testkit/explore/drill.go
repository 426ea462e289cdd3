package explore

import (
	"context"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The restore drill (velero-plugin-for-aws-async drill --confirm) as an actor, through
// internal/drill, on the cluster orphans.go builds: a drill of the finished backup from the
// copies (the default), the sources or the vault of its location, or through the recovery
// location in the copy region or the one restoring from the vault, under the step's faults.
// The promise: it never creates, changes, shares or deletes a snapshot, deletes no volume but
// its own, every volume it makes carries its tag from its creation, and it makes each volume
// only from what it was asked to restore from, as EC2 knows it: a copy of a recorded snapshot
// made in the copy region of the location's account for the copies, a vault copy in the vault
// account for the vault, never a snapshot that only looks like one.

// drillTimeout bounds a drill's wait for its volumes (the simulator makes a volume in a
// second), and drillPoll is how often it asks: every second of a wait is a step of the fake
// clock, which takes real time.
const (
	drillTimeout = 3 * time.Minute
	drillPoll    = syncPeriod
)

// drillRole is the role of the drill's requests; drillRequests the only actions it may send.
const drillRole = "drill"

var drillRequests = map[string]bool{
	"DescribeSnapshots": true, "DescribeVolumes": true, "DescribeVolumeStatus": true, "DescribeAvailabilityZones": true,
	"CreateVolume": true, "DeleteVolume": true,
}

// catDrillTouched is the promise a drill breaks.
const catDrillTouched category = "a drill created, changed, shared or deleted a snapshot, deleted a volume not its own, left a volume without its tag, or made one from what it was not asked to restore from"

// drillWay is how a drill is asked to restore: --location (empty: the backup's) and --from.
type drillWay struct {
	location string
	from     drill.From
}

// drillWays are the ways a drill may restore the backup.
func (w *world) drillWays() []drillWay {
	out := []drillWay{{from: drill.FromCopy}, {from: drill.FromSource}}
	if w.cfg.Vault.Enabled() {
		out = append(out, drillWay{from: drill.FromVault})
	}
	if w.cfg.CopyToRegion != "" {
		out = append(out, drillWay{location: recoveryLocation, from: drill.FromCopy})
	}
	if w.cfg.Vault.Enabled() {
		out = append(out, drillWay{location: vaultRecoveryLocation, from: drill.FromCopy})
	}
	return out
}

// drill is a drill of the backup the way way asks, with --max-volumes maxVolumes, checked as
// it returns.
func (w *world) drill(way drillWay, maxVolumes int) {
	before := w.holdings()
	c := w.cluster(true)
	clients := &creatingClients{clusterClients: clusterClients{w: w, role: drillRole}}
	d := &drill.Driller{Kube: c.kube, Records: c, Resolver: c.resolver, Clients: clients,
		Clock: w.clk, Log: w.log, Namespace: veleroNamespace, Provider: model.VolumeSnapshotterName}
	var rep drill.Report
	var err error
	if !w.onClock(func(ctx context.Context) {
		rep, err = d.Run(ctx, drill.Options{Backup: backupName, Location: way.location, From: way.from,
			Limits: drill.Limits{MaxVolumes: maxVolumes}, Timeout: drillTimeout, PollInterval: drillPoll})
	}) {
		w.violate(catHung, "the drill --location %q --from %s did not return", way.location, way.from)
	}
	w.logf("drill: --location %q --from %s, --max-volumes %d -> %s; problems %v %v", way.location, way.from, maxVolumes, rep.Summary(), rep.Problems, err)
	w.checkDrill(before, way, clients.made)
}

// drillBounds are what a drill may do: only the requests a restore and its clean-up make;
// every snapshot as it was; no volume deleted but a drill's.
var drillBounds = bounds{cat: catDrillTouched, role: drillRole, requests: drillRequests,
	keepSnapshot: func(ec2sim.Snapshot) string { return "a drill deletes no snapshot" },
	keepVolume: func(v ec2sim.Volume) string {
		if v.Tags[audit.TagDrill] == "" {
			return "no drill's"
		}
		return ""
	}}

// checkDrill checks what the drill the way way asks did since before: within drillBounds,
// every volume it left tagged as this install's drill's, so that the next drill or audit
// deletes it, and every CreateVolume it sent (made) of a snapshot it may restore from.
func (w *world) checkDrill(before holdings, way drillWay, made []createdVolume) {
	for id, v := range w.checkSince(before, drillBounds) {
		if v.Tags[audit.TagDrill] != ourInstall {
			w.violate(catDrillTouched, "volume %s in %s of %s, left by the drill, is not tagged as this install's drill's (tags %v)", id, v.Region, v.Account, v.Tags)
		}
		// No restore of Velero's made it: the restore checks do not count it.
		w.restoredFor[id] = ""
	}
	for _, m := range made {
		s, ok := before.snaps[m.snapshotID]
		if !ok {
			w.violate(catDrillTouched, "the drill --location %q --from %s asked for a volume from %s, which no account held", way.location, way.from, m.snapshotID)
			continue
		}
		if why := w.drillMayRestore(way, s); why != "" {
			w.violate(catDrillTouched, "the drill --location %q --from %s asked for a volume in %s of %s from %s (%s in %s of %s, tags %v): %s",
				way.location, way.from, m.region, m.account, s.ID, kindOf(s), s.Region, s.Account, s.Tags, why)
		}
	}
}

// drillMayRestore says why a drill the way way asks must not make a volume from s, as EC2
// knows it (its true source, not its tags); "" when it may.
func (w *world) drillMayRestore(way drillWay, s ec2sim.Snapshot) string {
	recorded := w.recordedIDs()
	switch {
	case way.location == recoveryLocation:
		if s.Account != sourceAccount || s.Region != copyRegion || !slices.Contains(recorded, s.SourceSnapshotID) {
			return "the recovery location restores from the copies of the recorded snapshots in " + copyRegion + " of " + sourceAccount
		}
	case way.location == vaultRecoveryLocation:
		if s.Account != w.setup.vaultCredsOf || s.Region != w.cfg.Vault.Region || !slices.Contains(recorded, s.SourceSnapshotID) {
			return "the vault's recovery location restores from copies of the recorded snapshots in its region and account"
		}
	case way.from == drill.FromSource || way.from == drill.FromCopy && w.cfg.CopyToRegion == "":
		if !slices.Contains(recorded, s.ID) {
			return "a drill of the location's region restores from the recorded snapshots"
		}
	case way.from == drill.FromCopy:
		if s.Account != sourceAccount || s.Region != w.cfg.CopyToRegion || !slices.Contains(recorded, s.SourceSnapshotID) || s.Tags[model.TagSourceAccount] != "" {
			return "a drill of the copies restores only from the regional copies of the recorded snapshots, in copyToRegion of the location's account"
		}
	case way.from == drill.FromVault:
		if s.Account != w.cfg.Vault.AccountID || s.Region != w.cfg.Vault.Region || !slices.Contains(recorded, s.SourceSnapshotID) {
			return "a drill of the vault restores only from the vault copies of the recorded snapshots, in vaultRegion of vaultAccountId"
		}
	}
	return ""
}

// recordedIDs are the snapshots Velero recorded for the backup through this plugin's location.
func (w *world) recordedIDs() []string {
	var ids []string
	for _, op := range w.ops {
		if op.snapshotID != "" && !op.upstream {
			ids = append(ids, op.snapshotID)
		}
	}
	return ids
}

// createdVolume is a CreateVolume a drill sent: from which snapshot, in which account and region.
type createdVolume struct{ snapshotID, account, region string }

// creatingClients are the drill's clients, noting every CreateVolume they send.
type creatingClients struct {
	clusterClients
	made []createdVolume
}

// Client is the drill's client of region, signing with creds, noting its CreateVolumes.
func (c *creatingClients) Client(ctx context.Context, region string, creds ec2api.Credentials) (ec2api.EC2, error) {
	client, err := c.clusterClients.Client(ctx, region, creds)
	if err != nil {
		return nil, err
	}
	account, _ := c.w.accountOfCredentials(creds)
	return creatingClient{Client: client.(*ec2.Client), note: func(id string) {
		c.made = append(c.made, createdVolume{snapshotID: id, account: account, region: region})
	}}, nil
}

// creatingClient is an EC2 client noting the snapshot of every CreateVolume it sends.
type creatingClient struct {
	*ec2.Client
	note func(snapshotID string)
}

func (c creatingClient) CreateVolume(ctx context.Context, in *ec2.CreateVolumeInput, optFns ...func(*ec2.Options)) (*ec2.CreateVolumeOutput, error) {
	c.note(aws.ToString(in.SnapshotId))
	return c.Client.CreateVolume(ctx, in, optFns...)
}
