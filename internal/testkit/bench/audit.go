package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// Audit is the audit-at-scale scenario: a schedule's backups of the same volumes, each with a
// copy in the copy region and a locked vault copy in a vault account, all made before the
// audit (seeded into the simulator as the plugin tags them, not taken through EC2), with the
// cluster's Velero objects and the storage location's backups and records; some backups gone
// from the bucket and the cluster, leaving their snapshots behind.
type Audit struct {
	// Backups is the schedule's backup count; VolumesPerBackup how many volumes each has.
	Backups          int `json:"backups"`
	VolumesPerBackup int `json:"volumesPerBackup"`
	// Every is the time between two of the schedule's backups; the newest started Every ago.
	Every ec2sim.Duration `json:"every"`
	// GoneEvery: of each run of GoneEvery backups, the one in the middle is gone from the
	// storage location and the cluster (a deletion that left its snapshots): orphans, but for
	// the vault copies whose lock still holds (kept).
	GoneEvery int `json:"goneEvery"`
	// MetadataEvery: one backup of a second schedule, with no volume snapshot, per this many of
	// the first (in the cluster and the storage location, as a schedule of cluster resources
	// would make them).
	MetadataEvery int `json:"metadataEvery"`
	// VaultLockDays is the vault copies' governance lock, from their completion.
	VaultLockDays int32 `json:"vaultLockDays"`
	// MemoryAt are smaller backup counts measured too, to show how memory grows.
	MemoryAt []int `json:"memoryAt"`
	// ThrottleScale multiplies AWS's request rates (1: AWS's documented rates).
	ThrottleScale float64 `json:"throttleScale"`
	// Latency delays each of the simulator's answers, as an endpoint a network away would: a
	// simulator answering within a millisecond races the SDK still finishing its request
	// (net/http's write loop against smithy-go closing the request body once the answer is in),
	// a failure the SDK retries, and the retry would count against the audit.
	Latency ec2sim.DurationRange `json:"ec2Latency"`
}

// StandardAudit is 1,000 hourly backups of 20 volumes (60,000 snapshots: 20,000 each in the
// source region, the copy region and the vault), one in 200 gone, a metadata backup a day,
// 7-day vault locks, measured at 250, 500 and 1,000 backups at AWS's rates, EC2 answering
// 20 ms late (a round trip to a regional endpoint; EC2's own time is more).
func StandardAudit() Audit {
	return Audit{
		Backups: 1000, VolumesPerBackup: 20, Every: ec2sim.Duration{Duration: time.Hour},
		GoneEvery: 200, MetadataEvery: 24, VaultLockDays: 7, MemoryAt: []int{250, 500}, ThrottleScale: 1,
		Latency: ec2sim.Fixed(20 * time.Millisecond),
	}
}

// sizes are the backup counts measured, smallest first, the scenario's own last.
func (a Audit) sizes() []int {
	out := slices.DeleteFunc(slices.Clone(a.MemoryAt), func(n int) bool { return n <= 0 || n >= a.Backups })
	slices.Sort(out)
	return append(slices.Compact(out), a.Backups)
}

// The audit's world: one cluster, one VolumeSnapshotLocation with copies and a locked vault,
// one storage location.
const (
	auditNamespace     = "velero"
	auditLocation      = "ebs"
	auditStorage       = "default"
	auditSchedule      = "hourly"
	auditMetadata      = "cluster-config"
	auditSourceAccount = "111111111111"
	auditVaultAccount  = "222222222222"
	auditClusterUID    = "3f0c6a2e-8d1b-4c55-9a7e-0b1d2c3e4f50"
	auditSecret        = "cloud-credentials"
	auditVaultSecret   = "vault-credentials"
	auditSecretKey     = "cloud"
	// auditVolumeGiB is every volume's size.
	auditVolumeGiB = 100
	// A backup's snapshots complete auditSnapshotTime after it starts; its copies start then and
	// complete auditCopyTime after it starts, its vault copies auditVaultTime after.
	auditSnapshotTime = 5 * time.Minute
	auditCopyTime     = 20 * time.Minute
	auditVaultTime    = 25 * time.Minute
	// describeMaxResults is the largest page of DescribeSnapshots, DescribeLockedSnapshots and
	// DescribeVolumes.
	describeMaxResults = 1000
)

var auditKeys = map[string]ec2sim.AccessKey{
	auditSourceAccount: {AccessKeyID: "AKIAAUDITSOURCE00001", SecretAccessKey: "audit-source-secret"},
	auditVaultAccount:  {AccessKeyID: "AKIAAUDITVAULT000001", SecretAccessKey: "audit-vault-secret"},
}

// auditPlace is one place the audit lists: an account's region, with what the world holds
// there.
type auditPlace struct {
	Name            string `json:"name"`
	Account, Region string `json:"-"`
	// Vault marks the vault account's region, where the audit lists the locks and no drill
	// volumes.
	Vault bool `json:"-"`
	// Snapshots carry Velero's backup tag; Locked have a lock, expired or not.
	Snapshots int `json:"snapshots"`
	Locked    int `json:"locked"`
}

// auditWorld is one audit's world at a backup count: the snapshots to seed, the cluster's
// objects, the storage location's listing and records, and the verdicts the audit must reach.
type auditWorld struct {
	places  []auditPlace
	seeds   map[int][]ec2sim.SnapshotSpec // by place index; copies name their source by index, resolved as seeded
	objects []client.Object
	listing []string
	records map[string][]audit.RecordedSnapshot
	want    AuditVerdicts
}

// The places, by index in auditWorld.places.
const (
	placeSources = iota
	placeCopies
	placeVault
)

// AuditVerdicts are what an audit report says, counted.
type AuditVerdicts struct {
	// Backups are the report's backup lines; DRReady those DR-ready.
	Backups int `json:"backups"`
	DRReady int `json:"drReady"`
	// Orphans, Kept, Unjudged and Unknown count snapshots; OtherInstalls too.
	Orphans       int `json:"orphans"`
	Kept          int `json:"kept"`
	Unjudged      int `json:"unjudged"`
	Unknown       int `json:"unknownInstall"`
	OtherInstalls int `json:"otherInstalls"`
	// Problems are what the audit could not read.
	Problems int `json:"problems"`
}

// verdictsOf counts a report's verdicts.
func verdictsOf(rep audit.Report) AuditVerdicts {
	v := AuditVerdicts{Backups: len(rep.Backups), Kept: len(rep.Kept), Unjudged: len(rep.Unjudged), Unknown: len(rep.Unknown),
		OtherInstalls: rep.OtherInstalls, Problems: len(rep.Problems)}
	for _, b := range rep.Backups {
		if b.DRReady {
			v.DRReady++
		}
	}
	for _, g := range rep.Orphans {
		v.Orphans += len(g.Orphans)
	}
	return v
}

// differences lists where got differs from want, for people.
func (want AuditVerdicts) differences(got AuditVerdicts) []string {
	var out []string
	for _, f := range []struct {
		name      string
		got, want int
	}{
		{"backups", got.Backups, want.Backups}, {"DR-ready", got.DRReady, want.DRReady}, {"orphans", got.Orphans, want.Orphans},
		{"kept", got.Kept, want.Kept}, {"not judged", got.Unjudged, want.Unjudged}, {"unknown install", got.Unknown, want.Unknown},
		{"other installs", got.OtherInstalls, want.OtherInstalls}, {"problems", got.Problems, want.Problems},
	} {
		if f.got != f.want {
			out = append(out, fmt.Sprintf("%s: %d, planted %d", f.name, f.got, f.want))
		}
	}
	return out
}

// world builds the scenario's world of n backups at now.
func (a Audit) world(n int, now time.Time) *auditWorld {
	install := location.InstallIdentity(auditClusterUID, auditNamespace)
	w := &auditWorld{seeds: map[int][]ec2sim.SnapshotSpec{}, records: map[string][]audit.RecordedSnapshot{},
		places: []auditPlace{
			{Name: "sources in " + auditRegions.source, Account: auditSourceAccount, Region: auditRegions.source},
			{Name: "copies in " + auditRegions.copy, Account: auditSourceAccount, Region: auditRegions.copy},
			{Name: "vault " + auditVaultAccount + " " + auditRegions.copy, Account: auditVaultAccount, Region: auditRegions.copy, Vault: true},
		}}
	w.objects = a.cluster()
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	for i := range n {
		started := now.Add(-time.Duration(n-i) * a.Every.Duration)
		name := auditSchedule + "-" + started.UTC().Format("20060102150405")
		gone := a.GoneEvery > 0 && i%a.GoneEvery == a.GoneEvery/2
		uid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xfff, rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff)
		vaultLockEnds := started.Add(auditVaultTime).AddDate(0, 0, int(a.VaultLockDays))
		var record []audit.RecordedSnapshot
		for v := range a.VolumesPerBackup {
			src := a.source(name, uid, install, v, started, rng)
			w.add(placeSources, src, gone, false)
			w.add(placeCopies, a.copyOf(src, len(w.seeds[placeSources])-1, started, false), gone, false)
			w.add(placeVault, a.copyOf(src, len(w.seeds[placeSources])-1, started, true), gone, vaultLockEnds.After(now))
			record = append(record, audit.RecordedSnapshot{Location: auditLocation, PV: src.Tags[model.TagPV],
				VolumeType: "gp3", VolumeAZ: src.Tags[model.TagVolumeAZ], VolumeIOPS: aws.Int64(3000)})
		}
		if gone {
			continue
		}
		w.want.Backups++
		w.want.DRReady++
		w.listing = append(w.listing, name)
		w.records[name] = record // IDs filled as the sources are seeded
		w.objects = append(w.objects, a.backup(name, auditSchedule, uid, started, a.VolumesPerBackup))
		if a.MetadataEvery > 0 && i%a.MetadataEvery == 0 {
			meta := auditMetadata + "-" + started.UTC().Format("20060102150405")
			w.listing = append(w.listing, meta)
			w.objects = append(w.objects, a.backup(meta, auditMetadata, fmt.Sprintf("%s-meta", uid), started, 0))
		}
	}
	slices.Sort(w.listing)
	return w
}

// auditRegions are the source and copy regions (the vault is in the copy region, in the vault
// account).
var auditRegions = struct{ source, copy string }{"us-east-1", "us-west-2"}

// add adds a snapshot to seed in place p: of a gone backup it is an orphan, or kept while its
// lock holds.
func (w *auditWorld) add(p int, s ec2sim.SnapshotSpec, gone, lockHeld bool) {
	w.seeds[p] = append(w.seeds[p], s)
	w.places[p].Snapshots++
	if s.Lock != nil {
		w.places[p].Locked++
	}
	switch {
	case gone && lockHeld:
		w.want.Kept++
	case gone:
		w.want.Orphans++
	}
}

// source is volume v's snapshot in backup name, tagged as the plugin's CreateSnapshot tags it
// (Velero's tags, the backup's labels, the plugin's own and the volume's, which the EBS CSI
// driver wrote), as it stands once copied.
func (a Audit) source(name, uid, install string, v int, started time.Time, rng *rand.Rand) ec2sim.SnapshotSpec {
	pv := fmt.Sprintf("pvc-%08x-7c1e-4f3a-9b2d-%012x", v, v)
	copied := started.Add(auditSnapshotTime).UTC().Format(time.RFC3339)
	tags := map[string]string{
		model.TagBackup: name, model.TagPV: pv,
		velerov1.StorageLocationLabel: auditStorage, velerov1.ScheduleNameLabel: auditSchedule,
		model.TagVolumeType: "gp3", model.TagVolumeAZ: auditRegions.source + "a", model.TagVolumeIOPS: "3000", model.TagVolumeThroughput: "125",
		model.TagCopyToRegion: auditRegions.copy, model.TagInstall: install, model.TagBackupUID: uid,
		model.TagCreateToken: fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()), model.TagRecorded: "returned",
		model.TagVaultAccount: auditVaultAccount, model.TagVaultRegion: auditRegions.copy,
		model.TagVaultLock:       fmt.Sprintf("governance:%d", a.VaultLockDays),
		model.TagCopyRequestedAt: copied, model.TagVaultRequestedAt: copied,
		"CSIVolumeName": pv, "ebs.csi.aws.com/cluster": "true", "kubernetes.io/created-for/pv/name": pv,
		"kubernetes.io/created-for/pvc/name": fmt.Sprintf("data-app-%d", v), "kubernetes.io/created-for/pvc/namespace": "apps",
	}
	return ec2sim.SnapshotSpec{VolumeID: fmt.Sprintf("vol-0%016x", v+1), SizeGiB: auditVolumeGiB, Tags: tags,
		Description: fmt.Sprintf("Velero backup %s, persistent volume %s", name, pv),
		Started:     started.Add(time.Duration(v) * 200 * time.Millisecond), Completed: started.Add(auditSnapshotTime)}
}

// copyOf is the regional or vault copy of src, the source seeded at index i of its place,
// tagged as the plugin's CopySnapshot tags it (model.CopyTags, and for a vault copy the source
// account and the lock asked for); a vault copy is locked from its completion.
func (a Audit) copyOf(src ec2sim.SnapshotSpec, i int, started time.Time, vault bool) ec2sim.SnapshotSpec {
	var tags []types.Tag
	for k, v := range src.Tags {
		tags = append(tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out := ec2sim.SnapshotSpec{VolumeID: src.VolumeID, SizeGiB: src.SizeGiB, SourceRegion: auditRegions.source,
		SourceID: sourceIndex(i), Started: started.Add(auditSnapshotTime), Completed: started.Add(auditCopyTime)}
	copyTags := model.TagMap(model.CopyTags(types.Snapshot{SnapshotId: aws.String(out.SourceID), Tags: tags}, auditRegions.source))
	if vault {
		copyTags[model.TagSourceAccount], copyTags[model.TagVaultLock] = auditSourceAccount, src.Tags[model.TagVaultLock]
		out.Completed = started.Add(auditVaultTime)
		out.Lock = &ec2sim.LockSpec{Mode: "governance", Days: a.VaultLockDays}
	}
	out.Tags = copyTags
	return out
}

// sourceIndex stands for the ID of the source seeded at index i until it is seeded.
func sourceIndex(i int) string { return fmt.Sprintf("source#%d", i) }

// seed seeds the world's snapshots into sim, the sources first, and names each copy's source
// and each record's snapshot by its ID.
func (w *auditWorld) seed(sim *ec2sim.Simulator) {
	ids := sim.AddSnapshotsTo(auditSourceAccount, auditRegions.source, w.seeds[placeSources]...)
	byIndex := map[string]string{}
	for i, id := range ids {
		byIndex[sourceIndex(i)] = id
	}
	for _, p := range []int{placeCopies, placeVault} {
		for i := range w.seeds[p] {
			s := &w.seeds[p][i]
			s.SourceID = byIndex[s.SourceID]
			s.Tags[model.TagSourceSnapshotID] = s.SourceID
		}
		sim.AddSnapshotsTo(w.places[p].Account, w.places[p].Region, w.seeds[p]...)
	}
	bySource := map[string]string{}
	for i, s := range w.seeds[placeSources] {
		bySource[s.Tags[model.TagBackup]+"/"+s.Tags[model.TagPV]] = ids[i]
	}
	for name, rec := range w.records {
		for i := range rec {
			rec[i].ID = bySource[name+"/"+rec[i].PV]
		}
	}
	w.seeds = nil
}

// cluster is the cluster's objects but its backups: its identity, the location and its
// credentials, the storage location and the schedules.
func (a Audit) cluster() []client.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: auditNamespace, Name: name} }
	secret := func(name, account string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: meta(name), Data: map[string][]byte{auditSecretKey: auditKeys[account].CredentialsFile()}}
	}
	schedule := func(name, cron string) *velerov1.Schedule {
		return &velerov1.Schedule{ObjectMeta: meta(name), Spec: velerov1.ScheduleSpec{Schedule: cron,
			Template: velerov1.BackupSpec{StorageLocation: auditStorage, VolumeSnapshotLocations: []string{auditLocation}}},
			Status: velerov1.ScheduleStatus{Phase: velerov1.SchedulePhaseEnabled}}
	}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: k8stypes.UID(auditClusterUID)}},
		secret(auditSecret, auditSourceAccount), secret(auditVaultSecret, auditVaultAccount),
		&velerov1.VolumeSnapshotLocation{ObjectMeta: meta(auditLocation), Spec: velerov1.VolumeSnapshotLocationSpec{
			Provider:   location.DefaultProvider,
			Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: auditSecret}, Key: auditSecretKey},
			Config: map[string]string{
				model.ConfigRegion: auditRegions.source, model.ConfigCopyToRegion: auditRegions.copy,
				model.ConfigVaultAccountID: auditVaultAccount, model.ConfigVaultRegion: auditRegions.copy,
				model.ConfigVaultCredentialSecret: auditVaultSecret, model.ConfigVaultLockMode: "governance",
				model.ConfigVaultLockDurationDays: fmt.Sprint(a.VaultLockDays),
			}}},
		&velerov1.BackupStorageLocation{ObjectMeta: meta(auditStorage), Spec: velerov1.BackupStorageLocationSpec{Provider: "aws", Default: true,
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "velero-backups", Prefix: "cluster-a"}},
			Config:      map[string]string{"region": auditRegions.source}},
			Status: velerov1.BackupStorageLocationStatus{Phase: velerov1.BackupStorageLocationPhaseAvailable}},
		schedule(auditSchedule, "@every 1h"), schedule(auditMetadata, "@every 24h"),
	}
}

// auditTTL is the backups' time to live: longer than the oldest backup is old.
const auditTTL = 45 * 24 * time.Hour

// backup is a Completed backup of schedule as Velero's server leaves it, with volumes native
// snapshots.
func (a Audit) backup(name, schedule, uid string, started time.Time, volumes int) *velerov1.Backup {
	ttl := auditTTL
	return &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: auditNamespace, Name: name, UID: k8stypes.UID(uid),
			Labels: map[string]string{velerov1.StorageLocationLabel: auditStorage, velerov1.ScheduleNameLabel: schedule}},
		Spec: velerov1.BackupSpec{StorageLocation: auditStorage, VolumeSnapshotLocations: []string{auditLocation},
			IncludedNamespaces: []string{"*"}, TTL: metav1.Duration{Duration: ttl}},
		Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted, Version: 1, FormatVersion: "1.1.0",
			StartTimestamp: &metav1.Time{Time: started}, CompletionTimestamp: &metav1.Time{Time: started.Add(auditVaultTime)},
			Expiration:               &metav1.Time{Time: started.Add(ttl)},
			VolumeSnapshotsAttempted: volumes, VolumeSnapshotsCompleted: volumes,
			Progress: &velerov1.BackupProgress{TotalItems: 412, ItemsBackedUp: 412}},
	}
}

// pagingBound is the fewest requests an audit of the world's places can make, by action: per
// place ceil(snapshots / 1,000) DescribeSnapshots; where a vault copy is listed, ceil(locked
// snapshots / 1,000) DescribeLockedSnapshots; in the locations' own accounts one
// DescribeVolumes (the world has no drill volume). A listing of nothing takes one request.
func pagingBound(places []auditPlace) map[string]int {
	pages := func(n int) int { return max(1, (n+describeMaxResults-1)/describeMaxResults) }
	out := map[string]int{}
	for _, p := range places {
		out["DescribeSnapshots"] += pages(p.Snapshots)
		if p.Vault {
			out["DescribeLockedSnapshots"] += pages(p.Locked)
		} else {
			out["DescribeVolumes"] += pages(0)
		}
	}
	return out
}
