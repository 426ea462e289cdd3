package explore

import (
	"context"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The restore drill (velero-plugin-for-aws-async drill --confirm) as an actor, through
// internal/drill, on the cluster orphans.go builds: a drill of the finished backup through its
// location, the recovery location in the copy region or the one restoring from the vault, under
// the step's faults. The promise: it never creates, changes, shares or deletes a snapshot,
// deletes no volume but its own, and every volume it makes carries its tag from its creation.

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
const catDrillTouched category = "a drill created, changed, shared or deleted a snapshot, deleted a volume not its own, or left a volume without its tag"

// drillLocations are the locations a drill may restore the backup through.
func (w *world) drillLocations() []string {
	out := []string{locationName}
	if w.cfg.CopyToRegion != "" {
		out = append(out, recoveryLocation)
	}
	if w.cfg.Vault.Enabled() {
		out = append(out, vaultRecoveryLocation)
	}
	return out
}

// drill is a drill of the backup through loc with --max-volumes maxVolumes, checked as it returns.
func (w *world) drill(loc string, maxVolumes int) {
	before := w.holdings()
	c := w.cluster(true)
	d := &drill.Driller{Kube: c.kube, Records: c, Resolver: c.resolver, Clients: clusterClients{w: w, role: drillRole},
		Clock: w.clk, Log: w.log, Namespace: veleroNamespace, Provider: model.VolumeSnapshotterName}
	var rep drill.Report
	var err error
	if !w.onClock(func(ctx context.Context) {
		rep, err = d.Run(ctx, drill.Options{Backup: backupName, Location: loc, Limits: drill.Limits{MaxVolumes: maxVolumes}, Timeout: drillTimeout, PollInterval: drillPoll})
	}) {
		w.violate(catHung, "the drill through %s did not return", loc)
	}
	w.logf("drill: through %s, --max-volumes %d -> %s; problems %v %v", loc, maxVolumes, rep.Summary(), rep.Problems, err)
	w.checkDrill(before)
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

// checkDrill checks what the drill did since before: within drillBounds, and every volume it
// left tagged as this install's drill's, so that the next drill or audit deletes it.
func (w *world) checkDrill(before holdings) {
	for id, v := range w.checkSince(before, drillBounds) {
		if v.Tags[audit.TagDrill] != ourInstall {
			w.violate(catDrillTouched, "volume %s in %s of %s, left by the drill, is not tagged as this install's drill's (tags %v)", id, v.Region, v.Account, v.Tags)
		}
		// No restore of Velero's made it: the restore checks do not count it.
		w.restoredFor[id] = ""
	}
}
