package audit

import (
	"context"
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
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The audit's world in tests: one AWS account backed up into by two clusters (installs A and
// B), a vault account, and the cluster the audit runs in (install A unless a test says).
const (
	sourceRegion  = "us-east-1"
	copyRegion    = "us-west-2"
	sourceAccount = "111111111111"
	vaultAccount  = "222222222222"
	sourceProfile = "source"
	vaultProfile  = "vault"
	veleroNS      = "velero"
	vslName       = "ebs"
	bslName       = "default"
	volumeGiB     = 8
	snapshotTime  = 10 * time.Second
	copyTime      = 20 * time.Second
	clusterAUID   = "aaaaaaaa-0000-0000-0000-00000000000a"
	clusterBUID   = "bbbbbbbb-0000-0000-0000-00000000000b"
	recoveryUID   = "cccccccc-0000-0000-0000-00000000000c"
	vaultLockDays = 7
	scheduleName  = "nightly"
	// errorCopyVolume is the volume whose copies end in error.
	errorCopyVolume = "vol-0123456789abcdef0"
	schedulePeriod  = 24 * time.Hour
)

var (
	installA = InstallIdentity(clusterAUID, veleroNS)
	installB = InstallIdentity(clusterBUID, veleroNS)
	keys     = map[string]ec2sim.AccessKey{
		sourceProfile: {AccessKeyID: "AKIASOURCE", SecretAccessKey: "source-secret"},
		vaultProfile:  {AccessKeyID: "AKIAVAULT", SecretAccessKey: "vault-secret"},
	}
	// locationConfig is a location with copies in copyRegion and locked vault copies.
	locationConfig = map[string]string{
		ebs.ConfigRegion: sourceRegion, ebs.ConfigProfile: sourceProfile, ebs.ConfigCopyToRegion: copyRegion,
		ebs.ConfigVaultAccountID: vaultAccount, ebs.ConfigVaultProfile: vaultProfile, ebs.ConfigVaultRegion: copyRegion,
		ebs.ConfigVaultLockMode: "governance", ebs.ConfigVaultLockDurationDays: "7",
	}
)

// simClients reaches the simulator with the access key of a credentials' profile.
type simClients struct{ url string }

func (c simClients) Client(_ context.Context, region string, creds ec2api.Credentials) (ec2api.EC2, error) {
	return newEC2(c.url, region, creds.Profile), nil
}

func newEC2(url, region, profile string) *ec2.Client {
	k := keys[profile]
	return ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider(k.AccessKeyID, k.SecretAccessKey, "")})
}

// fakeRecords is Velero's record of each backup, as object storage would answer.
type fakeRecords map[string][]RecordedSnapshot

func (r fakeRecords) VolumeSnapshots(_ context.Context, b *velerov1.Backup) ([]RecordedSnapshot, error) {
	return r[b.Name], nil
}

// world is the simulator, a cluster's Kubernetes objects and Velero's records.
type world struct {
	t       *testing.T
	ctx     context.Context
	srv     *ec2sim.Server
	clock   *clocktesting.FakeClock
	objects []client.Object
	records fakeRecords
	vols    []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	clock := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	srv, err := ec2sim.Start(ec2sim.Config{
		SnapshotDuration: ec2sim.Fixed(snapshotTime), CopyDuration: ec2sim.Fixed(copyTime), Unthrottled: true,
		Faults: ec2sim.Faults{ErrorCopyVolumes: []string{errorCopyVolume}},
		Accounts: []ec2sim.Account{
			{ID: sourceAccount, AccessKeys: []ec2sim.AccessKey{keys[sourceProfile]}},
			{ID: vaultAccount, AccessKeys: []ec2sim.AccessKey{keys[vaultProfile]}},
		},
	}, ec2sim.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	w := &world{t: t, ctx: context.Background(), srv: srv, clock: clock, records: fakeRecords{}}
	w.vols = srv.Sim.AddVolumesTo(sourceAccount, sourceRegion,
		ec2sim.VolumeSpec{SizeGiB: volumeGiB}, ec2sim.VolumeSpec{SizeGiB: volumeGiB}, ec2sim.VolumeSpec{ID: errorCopyVolume, SizeGiB: volumeGiB})
	return w
}

// cluster puts the objects of a cluster whose kube-system has uid: the location (config), the
// storage location, Available.
func (w *world) cluster(uid string, config map[string]string) {
	w.objects = append(w.objects,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: k8stypes.UID(uid)}},
		&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNS, Name: vslName},
			Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider, Config: config}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNS, Name: bslName},
			Status: velerov1.BackupStorageLocationStatus{Phase: velerov1.BackupStorageLocationPhaseAvailable}})
}

// outcome is how one volume's snapshot and copies end.
type outcome struct {
	// install is the TagInstall written; "-" writes none (an earlier release).
	install string
	// copy and vault: "completed" (default), "pending", "missing".
	copy, vault string
	// unlocked leaves the vault copy without its lock; retained marks it vaultRetainOnDelete.
	unlocked, retained bool
	// recorded is TagRecorded (default "returned").
	recorded string
}

// taken is one volume's snapshots in a backup.
type taken struct{ source, copy, vault string }

// take takes backup's snapshot of vol as the plugin does, with its copies as o says, and
// returns their IDs; the clock moves past every completion.
func (w *world) take(backup, vol string, o outcome) taken {
	w.t.Helper()
	src := newEC2(w.srv.URL, sourceRegion, sourceProfile)
	tags := map[string]string{
		ebs.TagBackup: backup, ebs.TagPV: "pv-" + vol, storageLocationTag: bslName,
		ebs.TagVolumeType: "gp3", ebs.TagRecorded: cmpOr(o.recorded, "returned"),
		ebs.TagCopyToRegion: copyRegion, ebs.TagVaultAccount: vaultAccount, ebs.TagVaultRegion: copyRegion,
		ebs.TagVaultLock: "governance:7",
	}
	switch o.install {
	case "":
		tags[ebs.TagInstall] = installA
	case "-":
	default:
		tags[ebs.TagInstall] = o.install
	}
	if o.retained {
		tags[ebs.TagVaultRetainOnDelete] = "true"
	}
	out, err := src.CreateSnapshot(w.ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(tags)}}})
	if err != nil {
		w.t.Fatal(err)
	}
	var t taken
	t.source = aws.ToString(out.SnapshotId)
	w.clock.Step(snapshotTime)
	copyTags := map[string]string{ebs.TagSourceSnapshotID: t.source, ebs.TagSourceRegion: sourceRegion}
	for k, v := range tags {
		if k == ebs.TagBackup || k == ebs.TagPV || k == ebs.TagInstall || k == ebs.TagVolumeType || k == ebs.TagVaultRetainOnDelete || k == storageLocationTag {
			copyTags[k] = v
		}
	}
	if o.copy != "missing" {
		cp := newEC2(w.srv.URL, copyRegion, sourceProfile)
		out, err := cp.CopySnapshot(w.ctx, &ec2.CopySnapshotInput{SourceSnapshotId: aws.String(t.source), SourceRegion: aws.String(sourceRegion),
			TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(copyTags)}}})
		if err != nil {
			w.t.Fatal(err)
		}
		t.copy = aws.ToString(out.SnapshotId)
	}
	if o.vault != "missing" {
		if _, err := src.ModifySnapshotAttribute(w.ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(t.source),
			Attribute: types.SnapshotAttributeNameCreateVolumePermission, OperationType: types.OperationTypeAdd, UserIds: []string{vaultAccount}}); err != nil {
			w.t.Fatal(err)
		}
		v := newEC2(w.srv.URL, copyRegion, vaultProfile)
		out, err := v.CopySnapshot(w.ctx, &ec2.CopySnapshotInput{SourceSnapshotId: aws.String(t.source), SourceRegion: aws.String(sourceRegion),
			TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(copyTags)}}})
		if err != nil {
			w.t.Fatal(err)
		}
		t.vault = aws.ToString(out.SnapshotId)
		if !o.unlocked {
			if _, err := v.LockSnapshot(w.ctx, &ec2.LockSnapshotInput{SnapshotId: out.SnapshotId, LockMode: types.LockModeGovernance,
				LockDuration: aws.Int32(vaultLockDays)}); err != nil {
				w.t.Fatal(err)
			}
		}
	}
	if o.copy != "pending" && o.vault != "pending" {
		w.clock.Step(copyTime)
	}
	return t
}

// backup puts a finished backup of the schedule (or none) started at started, whose record
// holds the sources of snaps.
func (w *world) backup(name, schedule string, started time.Time, phase velerov1.BackupPhase, snaps ...taken) {
	labels := map[string]string{velerov1.StorageLocationLabel: bslName}
	if schedule != "" {
		labels[velerov1.ScheduleNameLabel] = schedule
	}
	done := started.Add(time.Minute)
	w.objects = append(w.objects, &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: veleroNS, Name: name, Labels: labels},
		Spec:       velerov1.BackupSpec{StorageLocation: bslName, VolumeSnapshotLocations: []string{vslName}},
		Status: velerov1.BackupStatus{Phase: phase, StartTimestamp: &metav1.Time{Time: started},
			CompletionTimestamp: &metav1.Time{Time: done}, VolumeSnapshotsAttempted: len(snaps), VolumeSnapshotsCompleted: len(snaps)},
	})
	for _, s := range snaps {
		w.records[name] = append(w.records[name], RecordedSnapshot{ID: s.source, Location: vslName, PV: "pv"})
	}
}

// auditor is an Auditor of the cluster's objects in namespace.
func (w *world) auditor() *Auditor {
	kube := fake.NewClientBuilder().WithScheme(scheme(w.t)).WithObjects(w.objects...).Build()
	return &Auditor{
		Kube: kube, Records: w.records,
		Resolver: location.New(location.WithReader(kube), location.WithNamespace(veleroNS), location.WithTempDir(w.t.TempDir())),
		Clients:  simClients{url: w.srv.URL}, Clock: w.clock,
		Namespace: veleroNS, Provider: location.DefaultProvider,
	}
}

// audit runs the audit, deleting orphans when del.
func (w *world) audit(del bool) Report {
	w.t.Helper()
	rep, err := w.auditor().Run(w.ctx, "", DefaultOptions(), del)
	if err != nil {
		w.t.Fatal(err)
	}
	return rep
}

// exists reports whether the snapshot is still in the account and region.
func (w *world) exists(account, region, id string) bool {
	for _, s := range w.srv.Sim.SnapshotsIn(account, region) {
		if s.ID == id {
			return true
		}
	}
	return false
}

func tagList(m map[string]string) []types.Tag {
	var out []types.Tag
	for k, v := range m {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return out
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orphanIDs(rep Report) []string {
	var ids []string
	for _, g := range rep.Orphans {
		for _, o := range g.Orphans {
			ids = append(ids, o.ID)
		}
	}
	return ids
}

func text(t *testing.T, rep Report) string {
	t.Helper()
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := velerov1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
