// Package audittest is the world the audit's and the drill's tests run in: an EC2 simulator
// with a source and a vault account, one account backed up into by two clusters, and a
// cluster's Velero objects and records.
package audittest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
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

// The audit's world in tests: one AWS account backed up into by two clusters (installs A and
// B), a vault account, and the cluster the audit runs in (install A unless a test says).
const (
	SourceRegion  = "us-east-1"
	CopyRegion    = "us-west-2"
	SourceAccount = "111111111111"
	VaultAccount  = "222222222222"
	SourceProfile = "source"
	VaultProfile  = "vault"
	VeleroNS      = "velero"
	VSLName       = "ebs"
	BSLName       = "default"
	VolumeGiB     = 8
	SnapshotTime  = 10 * time.Second
	CopyTime      = 20 * time.Second
	ClusterAUID   = "aaaaaaaa-0000-0000-0000-00000000000a"
	ClusterBUID   = "bbbbbbbb-0000-0000-0000-00000000000b"
	RecoveryUID   = "cccccccc-0000-0000-0000-00000000000c"
	VaultLockDays = 7
	ScheduleName  = "nightly"
	// ErrorCopyVolume is the volume whose copies end in error.
	ErrorCopyVolume = "vol-0123456789abcdef0"
	SchedulePeriod  = 24 * time.Hour
)

var (
	InstallA = location.InstallIdentity(ClusterAUID, VeleroNS)
	InstallB = location.InstallIdentity(ClusterBUID, VeleroNS)
	keys     = map[string]ec2sim.AccessKey{
		SourceProfile: {AccessKeyID: "AKIASOURCE", SecretAccessKey: "source-secret"},
		VaultProfile:  {AccessKeyID: "AKIAVAULT", SecretAccessKey: "vault-secret"},
	}
	// LocationConfig is a location with copies in CopyRegion and locked vault copies.
	LocationConfig = map[string]string{
		model.ConfigRegion: SourceRegion, model.ConfigProfile: SourceProfile, model.ConfigCopyToRegion: CopyRegion,
		model.ConfigVaultAccountID: VaultAccount, model.ConfigVaultProfile: VaultProfile, model.ConfigVaultRegion: CopyRegion,
		model.ConfigVaultLockMode: "governance", model.ConfigVaultLockDurationDays: "7",
	}
)

// SimClients reaches the simulator with the access key of a credentials' profile, but in the
// regions down.
type SimClients struct {
	url  string
	down map[string]bool
}

// Client is a client of region signing with creds' profile's access key.
func (c SimClients) Client(_ context.Context, region string, creds ec2api.Credentials) (ec2api.EC2, error) {
	if c.down[region] || c.down[creds.Profile+"/"+region] {
		return nil, fmt.Errorf("dial tcp: connection refused (region %s is down)", region)
	}
	return NewEC2(c.url, region, creds.Profile), nil
}

// NewEC2 is a client of the simulator at url signing with profile's access key.
func NewEC2(url, region, profile string) *ec2.Client {
	k := keys[profile]
	return ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider(k.AccessKeyID, k.SecretAccessKey, "")})
}

// SimBuckets loads configs of S3 clients of the simulator at url, signing with the access key
// of a credentials' profile.
type SimBuckets struct{ url string }

// Config is the config of an S3 client of region signing with creds' profile's access key.
func (b SimBuckets) Config(_ context.Context, region string, creds ec2api.Credentials) (aws.Config, error) {
	k := keys[creds.Profile]
	return aws.Config{Region: region, BaseEndpoint: aws.String(b.url),
		Credentials: credentials.NewStaticCredentialsProvider(k.AccessKeyID, k.SecretAccessKey, "")}, nil
}

// Records is Velero's record of each backup, as object storage would answer: the backups the
// storage location BSLName holds.
type Records map[string][]audit.RecordedSnapshot

// VolumeSnapshots returns the backup's record, as a DownloadRequest would.
func (r Records) VolumeSnapshots(_ context.Context, b *velerov1.Backup) ([]audit.RecordedSnapshot, error) {
	return r[b.Name], nil
}

// Bucket is the storage location BSLName's object storage, as its plugin reads it: the world's
// Records.
type Bucket struct{ w *World }

// Backups lists the backups the storage location holds: those of the world's Records.
func (b Bucket) Backups(_ context.Context, bsl *velerov1.BackupStorageLocation) ([]string, error) {
	if b.w.StoreErr != nil {
		return nil, b.w.StoreErr
	}
	if bsl.Name != BSLName {
		return []string{}, nil
	}
	names := make([]string, 0, len(b.w.Records))
	for name := range b.w.Records {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// VolumeSnapshots returns a backup's record in the storage location.
func (b Bucket) VolumeSnapshots(_ context.Context, bsl *velerov1.BackupStorageLocation, name string) ([]audit.RecordedSnapshot, error) {
	rec, ok := b.w.Records[name]
	if !ok || rec == nil || bsl.Name != BSLName {
		return nil, objectstore.ErrNoRecord
	}
	return rec, nil
}

// World is the simulator, a cluster's Kubernetes objects and Velero's records.
type World struct {
	T     *testing.T
	Ctx   context.Context
	Srv   *ec2sim.Server
	Clock *clocktesting.FakeClock
	// Records are Velero's records of the backups; Vols three volumes in SourceRegion, the
	// last one's copies ending in error.
	Records Records
	Vols    []string
	// earlierVol is EarlierBackup's volume.
	earlierVol string
	// StoreErr, when set, is what listing a storage location answers.
	StoreErr error
	// Down are the regions ("us-east-1"), or a profile's regions ("vault/us-east-1"), that do
	// not answer the audit.
	Down    map[string]bool
	objects []client.Object
	kube    client.Client
}

// Option adjusts the simulator's config.
type Option func(*ec2sim.Config)

// WithAllowed lets the source and the vault account call only these EC2 actions (their IAM
// policies).
func WithAllowed(source, vault []string) Option {
	return func(c *ec2sim.Config) {
		c.Accounts[0].AllowedActions, c.Accounts[1].AllowedActions = source, vault
	}
}

// New starts a World on a fake clock.
func New(t *testing.T, opts ...Option) *World {
	t.Helper()
	clock := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	cfg := ec2sim.Config{
		SnapshotDuration: ec2sim.Fixed(SnapshotTime), CopyDuration: ec2sim.Fixed(CopyTime), Unthrottled: true,
		Faults: ec2sim.Faults{ErrorCopyVolumes: []string{ErrorCopyVolume}},
		Accounts: []ec2sim.Account{
			{ID: SourceAccount, AccessKeys: []ec2sim.AccessKey{keys[SourceProfile]}},
			{ID: VaultAccount, AccessKeys: []ec2sim.AccessKey{keys[VaultProfile]}},
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := ec2sim.Start(cfg, ec2sim.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	w := &World{T: t, Ctx: context.Background(), Srv: srv, Clock: clock, Records: Records{}, Down: map[string]bool{}}
	vols := srv.Sim.AddVolumesTo(SourceAccount, SourceRegion,
		ec2sim.VolumeSpec{SizeGiB: VolumeGiB}, ec2sim.VolumeSpec{SizeGiB: VolumeGiB}, ec2sim.VolumeSpec{ID: ErrorCopyVolume, SizeGiB: VolumeGiB},
		ec2sim.VolumeSpec{SizeGiB: VolumeGiB})
	w.Vols, w.earlierVol = vols[:3], vols[3]
	return w
}

// EarlierBackup is a backup of the cluster's install that its storage location holds and the
// cluster has not synced, with a snapshot of a volume of its own: a storage location that lists
// no backup this install's snapshots name proves nothing absent.
const EarlierBackup = "earlier"

// Cluster puts the objects of a cluster whose kube-system has uid: the location (config), the
// storage location, Available, and EarlierBackup in the storage location.
func (w *World) Cluster(uid string, config map[string]string) {
	w.T.Helper()
	w.Put(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: k8stypes.UID(uid)}},
		&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: VeleroNS, Name: VSLName},
			Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider, Config: config}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: VeleroNS, Name: BSLName},
			Status: velerov1.BackupStorageLocationStatus{Phase: velerov1.BackupStorageLocationPhaseAvailable}})
	w.Stored(EarlierBackup, w.Take(EarlierBackup, w.earlierVol, Outcome{Install: location.InstallIdentity(uid, VeleroNS), Copy: "missing", Vault: "missing"}))
}

// Outcome is how one volume's snapshot and copies end.
type Outcome struct {
	// install is the TagInstall written; "-" writes none (an earlier release).
	Install string
	// copy and vault: "completed" (default), "pending", "missing".
	Copy, Vault string
	// unlocked leaves the vault copy without its lock; retained marks it vaultRetainOnDelete.
	Unlocked, Retained bool
	// recorded is TagRecorded (default "returned").
	Recorded string
	// StorageLocation is the storage location its backup names (default BSLName).
	StorageLocation string
}

// Taken is one volume's snapshots in a backup.
type Taken struct{ Volume, Source, Copy, Vault string }

// Take takes backup's snapshot of vol as the plugin does, with its copies as o says, and
// returns their IDs; the clock moves past every completion.
func (w *World) Take(backup, vol string, o Outcome) Taken {
	w.T.Helper()
	src := NewEC2(w.Srv.URL, SourceRegion, SourceProfile)
	tags := map[string]string{
		model.TagBackup: backup, model.TagPV: "pv-" + vol, velerov1.StorageLocationLabel: cmp.Or(o.StorageLocation, BSLName),
		model.TagVolumeType: "gp3", model.TagRecorded: cmp.Or(o.Recorded, "returned"),
		model.TagCopyToRegion: CopyRegion, model.TagVaultAccount: VaultAccount, model.TagVaultRegion: CopyRegion,
		model.TagVaultLock: "governance:7",
	}
	switch o.Install {
	case "":
		tags[model.TagInstall] = InstallA
	case "-":
	default:
		tags[model.TagInstall] = o.Install
	}
	if o.Retained {
		tags[model.TagVaultRetainOnDelete] = "true"
	}
	out, err := src.CreateSnapshot(w.Ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(tags)}}})
	if err != nil {
		w.T.Fatal(err)
	}
	t := Taken{Volume: vol}
	t.Source = aws.ToString(out.SnapshotId)
	w.Clock.Step(SnapshotTime)
	copyTags := map[string]string{model.TagSourceSnapshotID: t.Source, model.TagSourceRegion: SourceRegion}
	for k, v := range tags {
		if k == model.TagBackup || k == model.TagPV || k == model.TagInstall || k == model.TagVolumeType || k == model.TagVaultRetainOnDelete || k == velerov1.StorageLocationLabel {
			copyTags[k] = v
		}
	}
	if o.Copy != "missing" {
		cp := NewEC2(w.Srv.URL, CopyRegion, SourceProfile)
		out, err := cp.CopySnapshot(w.Ctx, &ec2.CopySnapshotInput{SourceSnapshotId: aws.String(t.Source), SourceRegion: aws.String(SourceRegion),
			TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(copyTags)}}})
		if err != nil {
			w.T.Fatal(err)
		}
		t.Copy = aws.ToString(out.SnapshotId)
	}
	if o.Vault != "missing" {
		if _, err := src.ModifySnapshotAttribute(w.Ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(t.Source),
			Attribute: types.SnapshotAttributeNameCreateVolumePermission, OperationType: types.OperationTypeAdd, UserIds: []string{VaultAccount}}); err != nil {
			w.T.Fatal(err)
		}
		v := NewEC2(w.Srv.URL, CopyRegion, VaultProfile)
		vaultTags := maps.Clone(copyTags) // as the plugin tags a vault copy
		vaultTags[model.TagSourceAccount], vaultTags[model.TagVaultLock] = SourceAccount, tags[model.TagVaultLock]
		out, err := v.CopySnapshot(w.Ctx, &ec2.CopySnapshotInput{SourceSnapshotId: aws.String(t.Source), SourceRegion: aws.String(SourceRegion),
			TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(vaultTags)}}})
		if err != nil {
			w.T.Fatal(err)
		}
		t.Vault = aws.ToString(out.SnapshotId)
		if !o.Unlocked {
			if _, err := v.LockSnapshot(w.Ctx, &ec2.LockSnapshotInput{SnapshotId: out.SnapshotId, LockMode: types.LockModeGovernance,
				LockDuration: aws.Int32(VaultLockDays)}); err != nil {
				w.T.Fatal(err)
			}
		}
	}
	if o.Copy != "pending" && o.Vault != "pending" {
		w.Clock.Step(CopyTime)
	}
	return t
}

// Backup puts a finished backup of the schedule (or none) started at started, whose record
// holds the sources of snaps.
func (w *World) Backup(name, schedule string, started time.Time, phase velerov1.BackupPhase, snaps ...Taken) {
	labels := map[string]string{velerov1.StorageLocationLabel: BSLName}
	if schedule != "" {
		labels[velerov1.ScheduleNameLabel] = schedule
	}
	done := started.Add(time.Minute)
	w.Put(&velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: VeleroNS, Name: name, Labels: labels},
		Spec:       velerov1.BackupSpec{StorageLocation: BSLName, VolumeSnapshotLocations: []string{VSLName}},
		Status: velerov1.BackupStatus{Phase: phase, StartTimestamp: &metav1.Time{Time: started},
			CompletionTimestamp: &metav1.Time{Time: done}, VolumeSnapshotsAttempted: len(snaps), VolumeSnapshotsCompleted: len(snaps)},
	})
	w.Stored(name, snaps...)
}

// Stored puts a backup's record in the storage location BSLName, naming the sources of snaps,
// without its Backup in the cluster (a backup Velero's sync has not brought in).
func (w *World) Stored(name string, snaps ...Taken) {
	rec := []audit.RecordedSnapshot{}
	for _, s := range snaps {
		rec = append(rec, audit.RecordedSnapshot{ID: s.Source, Location: VSLName, PV: "pv-" + s.Volume,
			VolumeType: "gp3", VolumeAZ: SourceRegion + "a"})
	}
	w.Records[name] = append(w.Records[name], rec...)
}

// Put puts objects in the cluster.
func (w *World) Put(objects ...client.Object) {
	w.T.Helper()
	if w.kube == nil {
		w.objects = append(w.objects, objects...)
		return
	}
	for _, o := range objects {
		if err := w.kube.Create(w.Ctx, o); err != nil {
			w.T.Fatal(err)
		}
	}
}

// Kube is the cluster's Kubernetes API, holding every object put.
func (w *World) Kube() client.Client {
	if w.kube == nil {
		w.kube = fake.NewClientBuilder().WithScheme(kubeapi.Scheme()).WithObjects(w.objects...).Build()
	}
	return w.kube
}

// Clients reach the simulator with the access key of a credentials' profile.
func (w *World) Clients() SimClients { return SimClients{url: w.Srv.URL, down: w.Down} }

// Resolver finds the locations' credentials in the cluster.
func (w *World) Resolver() *location.Resolver {
	return location.New(location.WithReader(w.Kube()), location.WithNamespace(VeleroNS), location.WithTempDir(w.T.TempDir()))
}

// Auditor is an Auditor of the cluster.
func (w *World) Auditor() *audit.Auditor {
	return &audit.Auditor{
		Kube: w.Kube(), Stores: Bucket{w: w}, Resolver: w.Resolver(), Clients: w.Clients(), Buckets: SimBuckets{url: w.Srv.URL}, Clock: w.Clock,
		Namespace: VeleroNS, Provider: location.DefaultProvider,
	}
}

// Audit runs the audit of every location, deleting orphans when del.
func (w *World) Audit(del bool) audit.Report {
	w.T.Helper()
	return w.AuditOf("", del)
}

// AuditOf runs the audit of the location only ("" every one), deleting orphans when del.
func (w *World) AuditOf(only string, del bool) audit.Report {
	w.T.Helper()
	rep, err := w.Auditor().Run(w.Ctx, only, audit.DefaultOptions(), del)
	if err != nil {
		w.T.Fatal(err)
	}
	return rep
}

// VaultRecoveryLocation is the location restoring from the vault that the README's recovery
// setup makes: the vault's region, with the vault account's credentials.
const VaultRecoveryLocation = "vault-recovery"

// RestoreFromVault puts the location VaultRecoveryLocation.
func (w *World) RestoreFromVault() {
	w.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: VeleroNS, Name: VaultRecoveryLocation},
		Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider,
			Config: map[string]string{model.ConfigRegion: CopyRegion, model.ConfigProfile: VaultProfile}}})
}

func tagList(m map[string]string) []types.Tag {
	var out []types.Tag
	for k, v := range m {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return out
}

// OrphanIDs are the IDs of the report's orphans.
func OrphanIDs(rep audit.Report) []string {
	var ids []string
	for _, g := range rep.Orphans {
		for _, o := range g.Orphans {
			ids = append(ids, o.ID)
		}
	}
	return ids
}

// Text is the report as audit prints it.
func Text(t *testing.T, rep audit.Report) string {
	t.Helper()
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
