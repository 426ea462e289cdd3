package explore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/objectstore"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/kubeapi"
)

// The audit's orphan deletion (velero-plugin-for-aws-async audit --delete-orphans --confirm) as
// an actor, through internal/audit's Read, Decide and DeleteOrphans, on the world's accounts and
// the cluster as it stands at that step; and another install of this release, or an earlier
// release, snapshotting in the same account with the plugin's tags. The promise: the deletion
// deletes nothing a backup needs, nothing of another install or of an unknown one, no locked or
// retained copy, and changes and shares nothing.
//
// The cluster both the audit and the drill (drill.go) read holds the world's backup while it is
// not deleted, with Velero's record of its snapshots once its item phase is over, the location,
// a recovery location in the copy region and one restoring from the vault (as the README's
// recovery setups have them), and the credentials Secret.

// Actor kinds of the audit and the drill.
const (
	actDeleteOrphans = "audit: --delete-orphans --confirm"
	actTaggedForeign = "other install: snapshot with the plugin's tags"
	actDrill         = "drill: restore drill of the backup"
)

// The cluster's identity and names.
const (
	// clusterUID is the UID of the cluster's kube-system namespace; theirClusterUID another cluster's.
	clusterUID      = "kube-system-uid-ours"
	theirClusterUID = "kube-system-uid-theirs"
	// recoveryLocation is the cluster's location in the copy region; vaultRecoveryLocation its
	// location restoring from the vault, with the vault credentials.
	recoveryLocation      = "recovery"
	vaultRecoveryLocation = "vault-recovery"
	storageLocation       = "default"
	// oldStorageLocation is a bucket Velero moved from, added back read-only (as the orphan
	// rule advises): in some audits it holds the earlier backup's files.
	oldStorageLocation = "old-bucket"
	// upstreamLocation is the upstream plugin's location, which the cluster does not list.
	upstreamLocation = "aws"
	// otherBackupName is a backup name only other installs use.
	otherBackupName = "weekly"
)

// The install identities: this cluster's Velero, another cluster's.
var (
	ourInstall   = location.InstallIdentity(clusterUID, veleroNamespace)
	theirInstall = location.InstallIdentity(theirClusterUID, veleroNamespace)
)

// auditRole is the role of the audit's requests; auditRequests the only actions it may send.
const auditRole = "audit"

var auditRequests = map[string]bool{
	"DescribeSnapshots": true, "DescribeLockedSnapshots": true, "DescribeVolumes": true, "DeleteSnapshot": true, "DeleteVolume": true,
	s3ListAction: true,
}

// The promises the orphan deletion breaks.
const (
	catOrphanDeletion category = "audit --delete-orphans deleted, changed or shared what a backup needs, another or an unknown install's snapshot, a locked or retained copy, or a volume no interrupted drill of this install left"
	// catAuditDeletedLocked is the orphan deletion asking EC2 to delete a locked snapshot (which
	// EC2 refuses, failing the run).
	catAuditDeletedLocked category = "audit --delete-orphans asked EC2 to delete a locked snapshot"
)

// orphanGraces are the --orphan-grace a drawn audit runs with.
var orphanGraces = []time.Duration{0, audit.DefaultOrphanGrace}

// maxOrphanDeletions bounds the orphan deletions of a run, which keeps the explorer's time.
const maxOrphanDeletions = 3

// drillAndAuditActors lists the actors of this file and drill.go that may take the next step.
func (w *world) drillAndAuditActors() []string {
	var out []string
	if countOf(w.kinds, actDeleteOrphans) < maxOrphanDeletions {
		out = append(out, actDeleteOrphans)
	}
	if len(w.foreign) < maxForeign {
		out = append(out, actTaggedForeign)
	}
	if len(w.restorable()) > 0 {
		out = append(out, actDrill)
	}
	if w.setup.vaultBucket && w.itemPhaseDone() && w.inCluster() && countOf(w.kinds, actVaultAudit) < maxVaultAudits {
		out = append(out, actVaultAudit)
	}
	return out
}

// countOf counts the steps of actor among kinds.
func countOf(kinds []string, actor string) int {
	n := 0
	for _, k := range kinds {
		if k == actor {
			n++
		}
	}
	return n
}

// stepDrillOrAudit draws and takes one step of an actor of drillAndAuditActors.
func (w *world) stepDrillOrAudit(t *rapid.T, actor string) {
	switch actor {
	case actDeleteOrphans:
		only := rapid.SampledFrom(append([]string{""}, w.auditLocations()...)).Draw(t, "audit --location (\"\": every one)")
		grace := rapid.SampledFrom(orphanGraces).Draw(t, "orphan grace")
		available := rapid.IntRange(0, 3).Draw(t, "storage location unavailable (0)") > 0
		w.listingMisread = rapid.IntRange(0, 5).Draw(t, "storage location pointing at another cluster's bucket (0)") == 0
		w.recordUnread = rapid.IntRange(0, 5).Draw(t, "the backup's record unreadable in the bucket (0)") == 0
		if w.earlierSnapshot != "" {
			w.earlierMoved = rapid.IntRange(0, 2).Draw(t, "the earlier backup's files in a storage location of the old bucket (0)") == 0
			w.oldBucketUnlisted = w.earlierMoved && rapid.IntRange(0, 2).Draw(t, "the old bucket answers its listing with SlowDown (0)") == 0
		}
		if age := rapid.SampledFrom(leftBehindAges).Draw(t, "age of a snapshot a deleted backup left (0: none)"); age > 0 {
			w.leftBehind(age)
		}
		w.drawVaultBucketFault(t)
		w.deleteOrphans(only, grace, available)
		w.listingMisread, w.recordUnread, w.vaultBucketFault = false, false, ""
		w.earlierMoved, w.oldBucketUnlisted = false, false
	case actTaggedForeign:
		w.taggedForeignSnapshot(rapid.SampledFrom([]string{theirInstall, ""}).Draw(t, "install tag (\"\": an earlier release)"),
			rapid.SampledFrom([]string{backupName, otherBackupName}).Draw(t, "backup name"))
	case actVaultAudit:
		w.advance(rapid.SampledFrom(vaultAuditDelays).Draw(t, "the audit's time after the last step"))
		w.drawVaultBucketFault(t)
		w.deleteOrphans("", rapid.SampledFrom(orphanGraces).Draw(t, "orphan grace"), true)
		w.vaultBucketFault = ""
	case actDrill:
		w.drill(rapid.SampledFrom(w.drillWays()).Draw(t, "drill --location, --from"), rapid.IntRange(0, maxPVs).Draw(t, "--max-volumes (0: all)"))
	}
}

// deleteOrphans is audit --delete-orphans --confirm with grace, the storage location Available
// or not, of every location ("") or (--location) only the one named, checked as it returns;
// its report.
func (w *world) deleteOrphans(only string, grace time.Duration, bslAvailable bool) audit.Report {
	before := w.holdings()
	c := w.cluster(bslAvailable)
	clients := clusterClients{w: w, role: auditRole}
	a := &audit.Auditor{Kube: c.kube, Stores: bucket{w: w}, Resolver: c.resolver, Clients: clients, Buckets: vaultBuckets{w: w},
		Clock: w.clk, Namespace: veleroNamespace, Provider: model.VolumeSnapshotterName}
	opts := audit.DefaultOptions()
	opts.OrphanGrace = grace
	var rep audit.Report
	var err error
	w.vaultListing = vaultListing{}
	if !w.onClock(func(ctx context.Context) {
		var read audit.World
		if read, err = a.Read(ctx, only); err == nil {
			rep = audit.Decide(read, opts)
			audit.DeleteOrphans(ctx, clients, read, &rep)
		}
	}) {
		w.violate(catHung, "audit --delete-orphans did not return")
	}
	var deleted, refused []string
	for _, d := range rep.Deletions {
		if d.Deleted {
			deleted = append(deleted, d.ID)
		} else {
			refused = append(refused, d.ID+": "+d.Why)
		}
	}
	w.logf("audit: --delete-orphans --location %q (grace %s, storage location Available %v) -> deleted %v, refused %v, problems %q, %v", only, grace, bslAvailable, deleted, refused, rep.Problems, err)
	w.checkSince(before, orphanDeletionBounds(w, grace))
	w.checkVerdicts(rep, before.requests)
	w.checkAccountLoss(rep)
	return rep
}

// orphanDeletionBounds are what the orphan deletion with --orphan-grace grace may do: only
// Describe requests and deletions; no snapshot deleted that a kept backup records (or whose
// source it records), of a backup the bucket holds that the cluster has not synced or is
// deleting, of another or an unknown install, locked or retained, or younger than the
// grace even now, once the audit has ended (its age then is at least what the audit saw); no
// volume deleted but one an interrupted drill of this install left.
func orphanDeletionBounds(w *world, grace time.Duration) bounds {
	ended := w.clk.Now()
	keep := func(s ec2sim.Snapshot) string {
		if why := w.neededBy(s); why != "" {
			return why
		}
		if age := ended.Sub(s.StartTime); age < grace {
			return fmt.Sprintf("%s old, younger than --orphan-grace %s", age, grace)
		}
		return ""
	}
	return bounds{cat: catOrphanDeletion, role: auditRole, requests: auditRequests, keepSnapshot: keep,
		keepVolume: func(v ec2sim.Volume) string {
			if v.Tags[audit.TagDrill] != ourInstall {
				return "no drill volume of this install"
			}
			return ""
		}}
}

// holdings are the world's snapshots and volumes, and the count of requests sent, before an
// actor of the audit or the drill steps: what its step is judged against.
type holdings struct {
	snaps    map[string]ec2sim.Snapshot
	vols     map[string]ec2sim.Volume
	requests int
}

// holdings are the world's holdings now.
func (w *world) holdings() holdings {
	return holdings{snaps: w.everything(), vols: w.allVolumes(), requests: len(w.requests)}
}

// bounds are what an actor of the audit or the drill may do, under the promise cat.
type bounds struct {
	cat category
	// role is its requests' role; requests the only actions it may send.
	role     string
	requests map[string]bool
	// keepSnapshot and keepVolume say why it must not delete a snapshot or a volume; "" when it
	// may.
	keepSnapshot func(ec2sim.Snapshot) string
	keepVolume   func(ec2sim.Volume) string
}

// checkSince checks what the actor did since before, within b: only the requests it may send;
// no snapshot made, changed or shared; none deleted that it must keep; no volume deleted that it
// must keep. It returns the volumes made since.
func (w *world) checkSince(before holdings, b bounds) map[string]ec2sim.Volume {
	for _, q := range w.requests[before.requests:] {
		if q.role == b.role && !b.requests[q.action] {
			w.violate(b.cat, "it sent %s in %s of %s", q.action, q.region, q.signer)
		}
	}
	after := w.everything()
	for _, s := range sortedSnaps(before.snaps) {
		a, kept := after[s.ID]
		switch {
		case s.DeletePending:
		case kept && !a.DeletePending:
			if !sameTags(a.Tags, s.Tags) || !slices.Equal(a.SharedWith, s.SharedWith) {
				w.violate(b.cat, "snapshot %s was retagged or shared: tags %v shared with %v, were %v and %v", s.ID, a.Tags, a.SharedWith, s.Tags, s.SharedWith)
			}
		default:
			if why := b.keepSnapshot(s); why != "" {
				w.violate(b.cat, "it deleted snapshot %s (%s in %s of %s): %s", s.ID, kindOf(s), s.Region, s.Account, why)
				w.reportedDeleted[s.ID] = true // not again as a kept or recorded snapshot deleted
				delete(w.locked, s.ID)
				delete(w.retained, s.ID)
			}
		}
	}
	for id := range after {
		if _, existed := before.snaps[id]; !existed {
			w.violate(b.cat, "snapshot %s was made during its step", id)
		}
	}
	afterVols, made := w.allVolumes(), map[string]ec2sim.Volume{}
	for id, v := range before.vols {
		if _, kept := afterVols[id]; kept {
			continue
		}
		if why := b.keepVolume(v); why != "" {
			w.violate(b.cat, "it deleted volume %s in %s of %s, %s (tags %v)", id, v.Region, v.Account, why, v.Tags)
		}
	}
	for id, v := range afterVols {
		if _, existed := before.vols[id]; !existed {
			made[id] = v
		}
	}
	return made
}

// neededBy says why the orphan deletion must not delete s; "" when it may.
func (w *world) neededBy(s ec2sim.Snapshot) string {
	_, foreign := w.foreign[s.ID]
	switch install := s.Tags[model.TagInstall]; {
	case foreign:
		return "another install's or tool's"
	case install != ourInstall:
		return "install " + cmp.Or(install, noInstall) + "'s, not this one's"
	case lockedNow(s):
		return "locked (" + s.LockState + ")"
	case w.retained[s.ID] || w.retainedVaultCopy(s):
		return "kept by vaultRetainOnDelete (its tag, or the location's config now)"
	case s.Tags[model.TagBackup] == backupName && w.inBucket() && !w.inCluster():
		return "its backup is in the storage location and not synced into the cluster yet"
	case s.Tags[model.TagBackup] == backupName && w.inBucket() && w.deleted:
		return "its backup is being deleted and its files are still in the storage location"
	}
	return w.namedByRecord(s)
}

// namedByRecord says how Velero's record of the backup, in its storage location, names s (or
// its source); "" when it does not.
func (w *world) namedByRecord(s ec2sim.Snapshot) string {
	switch {
	case s.ID == w.earlierSnapshot && s.ID != "":
		return "Velero's record of backup " + earlierBackupName + ", in a storage location, names it"
	case !w.inBucket():
		return ""
	case w.recorded(s.ID) != nil:
		return "Velero's record of the backup, in its storage location, names it"
	case s.SourceSnapshotID != "" && w.recorded(s.SourceSnapshotID) != nil:
		return "a copy of " + s.SourceSnapshotID + ", which Velero's record of the backup, in its storage location, names"
	}
	return ""
}

// retainedVaultCopy reports whether s is a vault copy vaultRetainOnDelete keeps when its
// backup is deleted: by the tag written with it, or by the location's config as it is now.
func (w *world) retainedVaultCopy(s ec2sim.Snapshot) bool {
	vaultCopy := s.SourceSnapshotID != "" && (s.Tags[model.TagSourceAccount] != "" || s.Account == w.cfg.Vault.AccountID)
	return vaultCopy && w.retainAsked(s)
}

// retainAsked reports whether vaultRetainOnDelete asks to keep s, a vault copy: the location's
// config now, or the tag its source was taken with (the config then).
func (w *world) retainAsked(s ec2sim.Snapshot) bool {
	return w.setup.retain || s.Tags[model.TagVaultRetainOnDelete] == "true"
}

// noInstall stands for the install tag an earlier release did not write.
const noInstall = "(none: an earlier release)"

// taggedForeignSnapshot is another install (install "": an earlier release, which did not tag
// its install) snapshotting its own volume for its backup named backup, with this plugin's tags.
func (w *world) taggedForeignSnapshot(install, backup string) {
	tags := map[string]string{model.TagBackup: backup, model.TagPV: "pvc-theirs", model.TagBackupUID: otherUID, model.TagVolumeType: "gp3"}
	if install != "" {
		tags[model.TagInstall] = install
	}
	if id := w.otherSnapshot(tags); id != "" {
		w.logf("other install: snapshot %s, backup %s, install %s", id, backup, cmp.Or(install, noInstall))
	}
}

// allVolumes lists the volumes of every account and region, by ID.
func (w *world) allVolumes() map[string]ec2sim.Volume {
	out := map[string]ec2sim.Volume{}
	for _, a := range allAccounts {
		for _, r := range allRegions {
			for _, v := range w.sim.VolumesIn(a, r) {
				out[v.ID] = v
			}
		}
	}
	return out
}

// cluster is the Kubernetes API and Velero's records as the audit and the drill read them.
type cluster struct {
	w        *world
	kube     client.Client
	resolver *location.Resolver
}

// clusterScheme holds the kinds the cluster serves, made once.
var clusterScheme = sync.OnceValue(kubeapi.Scheme)

// cluster is the cluster as it stands: its identity, the locations, the storage location
// (Available when bslAvailable), the credentials Secret, and the backup unless deleted.
func (w *world) cluster(bslAvailable bool) cluster {
	secret := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secretName}, Key: secretKey}
	vsl := func(name string, config map[string]string) *velerov1.VolumeSnapshotLocation {
		return &velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNamespace, Name: name},
			Spec: velerov1.VolumeSnapshotLocationSpec{Provider: model.VolumeSnapshotterName, Config: config, Credential: secret}}
	}
	bsl := &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNamespace, Name: storageLocation}}
	if bslAvailable {
		bsl.Status.Phase = velerov1.BackupStorageLocationPhaseAvailable
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: k8stypes.UID(clusterUID)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNamespace, Name: secretName}, Data: map[string][]byte{secretKey: w.credentialsFile()}},
		vsl(locationName, w.setup.config()), bsl,
	}
	if w.cfg.CopyToRegion != "" {
		objects = append(objects, vsl(recoveryLocation, map[string]string{model.ConfigRegion: copyRegion}))
	}
	if w.cfg.Vault.Enabled() {
		objects = append(objects, vsl(vaultRecoveryLocation, map[string]string{model.ConfigRegion: w.setup.vaultRegion, location.ConfigProfile: vaultProfile}))
	}
	if w.earlierMoved {
		old := &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNamespace, Name: oldStorageLocation},
			Spec: velerov1.BackupStorageLocationSpec{AccessMode: velerov1.BackupStorageLocationAccessModeReadOnly}}
		old.Status.Phase = bsl.Status.Phase
		objects = append(objects, old)
	}
	if b := w.backupObject(); b != nil {
		objects = append(objects, b)
	}
	kube := fake.NewClientBuilder().WithScheme(clusterScheme()).WithObjects(objects...).Build()
	return cluster{w: w, kube: kube, resolver: location.New(location.WithReader(kube), location.WithNamespace(veleroNamespace),
		location.WithProvider(model.VolumeSnapshotterName), location.WithClock(w.clk), location.WithLogger(w.log), location.WithTempDir(credentialsDir))}
}

// backupObject is the Backup as the cluster holds it, in the phase the world's operations put
// it in; nil while the cluster does not hold it (deleted, or not synced back yet).
func (w *world) backupObject() *velerov1.Backup {
	if !w.inCluster() {
		return nil
	}
	b := w.backup()
	b.Labels = map[string]string{velerov1.StorageLocationLabel: storageLocation}
	if w.setup.vaultBucket {
		// A schedule's backup, so that the audit names its recovery points (vault_bucket.go).
		b.Labels[velerov1.ScheduleNameLabel] = backupName
	}
	b.Spec.StorageLocation = storageLocation
	b.Status.StartTimestamp = &metav1.Time{Time: t0}
	switch {
	case w.deleted:
		b.Status.Phase = velerov1.BackupPhaseDeleting // a failed deletion's
	case !w.itemPhaseDone():
		b.Status.Phase = velerov1.BackupPhaseInProgress
	case w.waiting():
	case slices.ContainsFunc(w.ops, func(op *operation) bool { return op.state == opFailed || op.createErr != "" }):
		b.Status.Phase = velerov1.BackupPhasePartiallyFailed
	default:
		b.Status.Phase = velerov1.BackupPhaseCompleted
	}
	return b
}

// VolumeSnapshots is Velero's record of the backup's snapshots, as a DownloadRequest answers.
func (c cluster) VolumeSnapshots(_ context.Context, b *velerov1.Backup) ([]audit.RecordedSnapshot, error) {
	return c.w.record(b.Name), nil
}

// record is Velero's record of backup name's snapshots: every snapshot a CreateSnapshot
// returned, through this plugin's location or the upstream plugin's.
func (w *world) record(name string) []audit.RecordedSnapshot {
	var out []audit.RecordedSnapshot
	for _, op := range w.ops {
		if op.snapshotID == "" || name != backupName {
			continue
		}
		loc := locationName
		if op.upstream {
			loc = upstreamLocation
		}
		out = append(out, audit.RecordedSnapshot{ID: op.snapshotID, Location: loc, PV: op.pv, VolumeType: "gp3", VolumeAZ: sourceRegion + "a"})
	}
	return out
}

// bucket is the storage locations' object storage as their plugin reads it: the backup's files
// once its item phase is over, until a deletion succeeds, and, when the setup says so, those
// of an earlier backup of this install's that the cluster has not synced, in the storage
// location or, in some audits, in the old bucket's (which may answer its listing with
// SlowDown). While the storage location points at another cluster's bucket (listingMisread: a
// mistyped prefix), it lists that cluster's backup, and holds no record of this install's.
type bucket struct{ w *world }

// earlierBackupName is a backup of this install's the bucket may hold besides the world's.
const earlierBackupName = "nightly-earlier"

// Backups lists the backups the bucket holds.
func (b bucket) Backups(_ context.Context, bsl *velerov1.BackupStorageLocation) ([]string, error) {
	switch {
	case bsl.Name == oldStorageLocation && b.w.oldBucketUnlisted:
		return nil, errSlowDown
	case bsl.Name != storageLocation && bsl.Name != oldStorageLocation:
		return []string{}, nil
	case bsl.Name == storageLocation && b.w.listingMisread:
		return []string{otherBackupName}, nil
	}
	names := []string{}
	if b.holdsEarlier(bsl) {
		names = append(names, earlierBackupName)
	}
	if bsl.Name == storageLocation && b.w.inBucket() {
		names = append(names, backupName)
	}
	return names, nil
}

// holdsEarlier reports whether bsl holds the earlier backup's files: the old bucket's storage
// location once they were moved there, else the storage location, unless it points at
// another cluster's bucket.
func (b bucket) holdsEarlier(bsl *velerov1.BackupStorageLocation) bool {
	switch {
	case b.w.earlierSnapshot == "":
		return false
	case bsl.Name == oldStorageLocation:
		return b.w.earlierMoved
	}
	return bsl.Name == storageLocation && !b.w.listingMisread && !b.w.earlierMoved
}

// errSlowDown is S3 refusing a read for its request rate, as it answers with a 503.
var errSlowDown = errors.New("SlowDown: Please reduce your request rate")

// VolumeSnapshots is Velero's record of a backup's snapshots in the bucket.
func (b bucket) VolumeSnapshots(_ context.Context, bsl *velerov1.BackupStorageLocation, name string) ([]audit.RecordedSnapshot, error) {
	switch {
	case name == earlierBackupName && b.holdsEarlier(bsl):
		return []audit.RecordedSnapshot{{ID: b.w.earlierSnapshot, Location: locationName, PV: "pvc-earlier", VolumeType: "gp3", VolumeAZ: sourceRegion + "a"}}, nil
	case bsl.Name != storageLocation || b.w.listingMisread:
	case name == backupName && b.w.recordUnread:
		return nil, errSlowDown
	case name == backupName && b.w.inBucket():
		return b.w.record(name), nil
	}
	return nil, objectstore.ErrNoRecord
}

// clusterClients are the EC2 clients of the audit or the drill (role), signing as the account
// of the credentials the location's Secret holds, under the world's faults.
type clusterClients struct {
	w    *world
	role string
}

// Client is a client of region signing with creds.
func (c clusterClients) Client(_ context.Context, region string, creds ec2api.Credentials) (ec2api.EC2, error) {
	account, err := c.w.accountOfCredentials(creds)
	if err != nil {
		return nil, err
	}
	return c.w.client(c.role, account, region, true), nil
}

// Account is the account of the credentials, as STS would name it.
func (c clusterClients) Account(_ context.Context, _ string, creds ec2api.Credentials) (ec2api.Identity, error) {
	account, err := c.w.accountOfCredentials(creds)
	return ec2api.Identity{Account: account}, err
}

// auditLocations are the locations an audit's --location may name: the backup's, and the
// recovery location and the one restoring from the vault where the config has them.
func (w *world) auditLocations() []string {
	out := []string{locationName}
	if w.cfg.CopyToRegion != "" {
		out = append(out, recoveryLocation)
	}
	if w.cfg.Vault.Enabled() {
		out = append(out, vaultRecoveryLocation)
	}
	return out
}

// leftBehindAges are the ages a snapshot a deleted backup of this install left may have when
// an audit begins: younger than the default --orphan-grace, or older.
var leftBehindAges = []time.Duration{0, 10 * time.Minute, 2 * time.Hour}

// leftBehindBackup names the deleted backup whose snapshot leftBehind plants: in no storage
// location and not in the cluster.
const leftBehindBackup = "nightly-deleted"

// leftBehind plants, as made age ago, a completed snapshot of this install's a deleted backup
// left (a failed CreateSnapshot's, or one a failed deletion left): an orphan once it is older
// than --orphan-grace, and kept before.
func (w *world) leftBehind(age time.Duration) {
	ids := w.sim.AddSnapshotsTo(sourceAccount, sourceRegion, ec2sim.SnapshotSpec{VolumeID: w.volumes[0], Started: w.clk.Now().Add(-age),
		Tags: map[string]string{model.TagBackup: leftBehindBackup, model.TagPV: "pvc-deleted", model.TagInstall: ourInstall,
			model.TagVolumeType: "gp3", model.TagRecorded: recordedReturnedMark, velerov1.StorageLocationLabel: storageLocation}})
	w.logf("a snapshot %v of deleted backup %s, made %s ago", ids, leftBehindBackup, age)
}
