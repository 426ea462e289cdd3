package explore

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/restoring"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/tracking"
)

// The accounts, regions and names of an exploration.
const (
	sourceAccount = "111111111111"
	vaultAccount  = "222222222222"
	// strangerAccount is an account nobody holds credentials for: a mistyped vaultAccountId.
	strangerAccount = "333333333333"
	sourceRegion    = "us-east-1"
	copyRegion      = "us-west-2"
	farRegion       = "eu-west-1"
	backupName      = "nightly"
	backupUID       = "uid-ours"
	// otherUID is the UID of the other install's backup of the same name.
	otherUID     = "uid-theirs"
	locationName = "aws-async"
	volumeSize   = 8
)

// The times of an exploration.
const (
	// syncPeriod is Velero's operation sync period: how often a waiting backup is reconciled.
	syncPeriod = 10 * time.Second
	// clockStep is how far the fake clock moves while a plugin call waits on it.
	clockStep = time.Second
	// callRealLimit bounds the real time one plugin call may take before it counts as hung.
	callRealLimit = 20 * time.Second
	// callFakeLimit bounds the fake time one plugin call may wait.
	callFakeLimit = 45 * time.Minute
	// hddSnapshotMin and hddSnapshotMax bound how long a snapshot of an st1 volume stays
	// pending (setup.hddVolumes): minutes, within CreateSnapshot's patience.
	hddSnapshotMin = 2 * time.Minute
	hddSnapshotMax = 9 * time.Minute
)

var t0 = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// accessKey is an account's key pair in the simulator.
type accessKey struct{ id, secret string }

var keys = map[string]accessKey{
	sourceAccount: {"AKIAEXPLORESOURCE000", "source-secret"},
	vaultAccount:  {"AKIAEXPLOREVAULT0000", "vault-secret"},
}

// setup is what a run's users configured: the backup's PVs and the location's config.
type setup struct {
	// pvs are the backup's PVs; upstream[i] says PV i is snapshotted through the upstream plugin's location.
	pvs      []string
	upstream []bool
	copyTo   bool
	vault    bool
	// vaultRegion is where vault copies go; vaultRegion == copyRegion shares a region with the copy.
	vaultRegion string
	lock        bool
	retain      bool
	// copyMoved says the location's copyToRegion was moved to farRegion after the backup's
	// snapshots were taken (sync.go).
	copyMoved bool
	// earlierBackup says the storage location's bucket holds an earlier backup besides the
	// world's: without one, a bucket that lists no backup proves nothing absent.
	earlierBackup bool
	// vaultCredsOf is the account the vault credentials really belong to (the vault's, or by
	// mistake the source account's); vaultAccountID is what the config names.
	vaultCredsOf, vaultAccountID string
	// listingLag is how long EC2 takes to list what it has just made.
	listingLag time.Duration
	// timeout is Velero's item-operation timeout.
	timeout time.Duration
	seed    int64
	// upgrade, when set, is the earlier release that ran the item phase (upgrade.go).
	upgrade *oldRelease
	// requestTime is how long EC2 takes to answer a mutating request (cancel.go).
	requestTime time.Duration
	// restoredVolumes says the backup's volumes are ones this plugin restored (after a
	// disaster): they carry its restore token, which the upstream plugin copies onto its snapshots.
	restoredVolumes bool
	// slowCopies says copies take longer than the item-operation timeout (large first copies).
	slowCopies bool
	// refusedCopy, when set, is the copy an account's policy refuses for the whole run: the
	// regional one (a copyKmsKeyId the source account may not use) or the vault one (the vault
	// account's IAM without CopySnapshot).
	refusedCopy string
	// refusalLate says the refusal begins mid-run, when actRefusalBegins takes a step (the
	// account's policy changed while copies were under way), not from the start.
	refusalLate bool
	// regionalQueued says EC2 queues every regional copy (the copy region's limit of concurrent
	// copies reached) until a late refusal begins, which it does as soon as a source is shared
	// with the vault account (refuseOnceShared): the vault copy of a source starts and runs while
	// its regional copy waits, and that is then refused.
	regionalQueued bool
	// vaultQueued says EC2 queues the vault copies too until then (the vault account's limit):
	// a source is shared with the vault account, its copy not started, when the refusal comes.
	vaultQueued bool
	// markRefused says EC2 refuses the copy-failed marks of the first plugin process that writes
	// one (of a refused regional copy, or of vault credentials of the wrong account), so that
	// only that process knows why the source's operation fails.
	markRefused bool
	// stsUnavailable says STS answers no GetCallerIdentity until the operations are settled (a
	// private cluster without an STS endpoint): the vault credentials' account is known only
	// from what EC2 lists with them.
	stsUnavailable bool
	// hddVolumes says the backup's volumes are throughput-optimized HDD (st1): EC2 holds one
	// pending snapshot of each, and snapshots take minutes, so a CreateSnapshot behind another
	// tool's snapshot of its volume (one at the run's start, and actToolSnapshot's) rides out
	// EC2's limit for minutes.
	hddVolumes bool
	// slotsHeldPast, when set, says another tool's copies hold every copy slot of the account
	// (EC2 queues the plugin's copies) until that long after the first item-operation timeout
	// of an open operation: a source whose copy never started is cancelled, then copyable.
	slotsHeldPast time.Duration
	// volumeKinds are the kinds of the PVs' volumes, when drawn (volumes.go).
	volumeKinds []volumeKind
	// vaultBucket says the location names a vault bucket, which S3 Replication feeds with the
	// storage location's records recordLag after Velero writes them (recordsNeverArrive: the
	// replication is broken) (vault_bucket.go).
	vaultBucket bool
	recordLag   time.Duration
}

// The copies an account's policy may refuse.
const (
	regionalCopyRefused = "regional copy"
	vaultCopyRefused    = "vault copy"
)

// refuses reports whether the run's account policy refuses q.
func (s setup) refuses(q request) bool {
	if q.action != "CopySnapshot" {
		return false
	}
	switch s.refusedCopy {
	case regionalCopyRefused:
		return regionalCopy(q)
	case vaultCopyRefused:
		return q.role == "vault"
	}
	return false
}

// regionalCopy reports whether q is the plugin's CopySnapshot into the copy region.
func regionalCopy(q request) bool {
	return q.action == "CopySnapshot" && q.role != "vault" && q.region == copyRegion
}

// config is the location's config as a VolumeSnapshotLocation holds it.
func (s setup) config() map[string]string {
	m := map[string]string{model.ConfigRegion: sourceRegion}
	if s.copyTo {
		m[model.ConfigCopyToRegion] = copyRegion
		if s.copyMoved {
			m[model.ConfigCopyToRegion] = farRegion
		}
	}
	if s.vault {
		m[model.ConfigVaultAccountID] = s.vaultAccountID
		m[model.ConfigVaultProfile] = "vault"
		m[model.ConfigVaultRegion] = s.vaultRegion
		if s.lock {
			m[model.ConfigVaultLockMode] = model.LockModeGovernance
			m[model.ConfigVaultLockDurationDays] = "1"
		}
		if s.retain {
			m[model.ConfigVaultRetainOnDelete] = "true"
		}
		if s.vaultBucket {
			m[model.ConfigVaultBucket] = vaultBucketName
		}
	}
	return m
}

func (s setup) String() string {
	var parts []string
	for i, pv := range s.pvs {
		by := ""
		if s.upstream[i] {
			by = " (upstream plugin)"
		}
		parts = append(parts, pv+by)
	}
	cfg := s.config()
	names := make([]string, 0, len(cfg))
	for k := range cfg {
		names = append(names, k)
	}
	sort.Strings(names)
	var kv []string
	for _, k := range names {
		kv = append(kv, k+"="+cfg[k])
	}
	upgrade := ""
	if s.upgrade != nil {
		upgrade = fmt.Sprintf("; static PVs on one volume, item phase on the earlier release (UID tag %v, recorded mark %v, a CreateSnapshot retried after a lost answer %v)", s.upgrade.withUID, s.upgrade.marked, s.upgrade.retried)
	}
	if s.restoredVolumes {
		upgrade += "; volumes this plugin restored"
	}
	if s.slowCopies {
		upgrade += "; copies outlasting the item-operation timeout"
	}
	if s.refusedCopy != "" {
		upgrade += "; every " + s.refusedCopy + " refused by its account's policy"
		if s.refusalLate {
			upgrade += " once it changes mid-run"
		}
		if s.regionalQueued {
			upgrade += ", every regional copy queued by EC2 until then"
		}
		if s.vaultQueued {
			upgrade += ", and every vault copy"
		}
	}
	if s.markRefused {
		upgrade += "; copy-failed marks refused to the first process writing one"
	}
	if s.stsUnavailable {
		upgrade += "; STS unavailable until the operations are settled"
	}
	if s.hddVolumes {
		upgrade += "; st1 volumes, each snapshotted by a backup tool at the start"
	}
	if s.earlierBackup {
		upgrade += "; the bucket holds an earlier backup of this install, not synced into the cluster"
	}
	if len(s.volumeKinds) > 0 {
		upgrade += fmt.Sprintf("; volumes %v", s.volumeKinds)
	}
	if s.slotsHeldPast > 0 {
		upgrade += fmt.Sprintf("; copy slots held by another tool until %s past the first item-operation timeout", s.slotsHeldPast)
	}
	if s.vaultBucket {
		upgrade += "; " + replicationText(s.recordLag)
	}
	return fmt.Sprintf("PVs %s; location %s; vault credentials of %s; listing lag %s; item-operation timeout %s; %s a mutating request%s",
		strings.Join(parts, ", "), strings.Join(kv, " "), s.vaultCredsOf, s.listingLag, s.timeout, s.requestTime, upgrade)
}

// opState is where Velero has an operation.
type opState int

const (
	opOpen opState = iota
	opCompleted
	opFailed
)

// operation is one PV's operation as Velero core keeps it.
type operation struct {
	pv, volumeID string
	upstream     bool
	executed     bool
	id           string // the operation ID Execute returned
	issued       time.Time
	attempted    bool
	snapshotID   string // what CreateSnapshot returned; "" until then or when it failed
	uidTagged    bool   // whether that snapshot was made with the backup's UID
	createErr    string
	state        opState
	polled       bool  // whether Velero has asked for the operation's progress
	total        int64 // the progress units the last Progress reported
	// done and of are the figures the checks hold an open operation's progress to.
	done, of int64
	// endedAt is when Velero saw the operation end; cancelErr what its Cancel returned.
	endedAt   time.Time
	cancelErr error
	// unsharedAfterEnd says its source was seen unshared once the operation had ended.
	unsharedAfterEnd bool
	// evidenceAt is when its own evidence was first seen complete (evidenceComplete); zero
	// while it is not.
	evidenceAt time.Time

	result      string
	cancelledAt time.Time
	// copiesAtCancel are the copies of its snapshot EC2 held when Velero cancelled it: any
	// other is one started after, however soon on the clock.
	copiesAtCancel map[string]bool
	// deletedWhileOpen is true when the backup was deleted while the operation was open.
	deletedWhileOpen bool
	// volumeType and iops are what GetVolumeInfo returned, which Velero passes to a restore.
	volumeType string
	iops       *int64
}

// foreignSnapshot is another install's or tool's snapshot as it was made.
type foreignSnapshot struct {
	account, region string
	tags            map[string]string
	// volumeID and started are set for a snapshot of one of this backup's volumes.
	volumeID string
	started  time.Time
}

// world is one exploration: the simulator, the clock, Velero core's view of one backup, the
// plugin processes, and what the checks remember.
type world struct {
	setup setup
	cfg   model.Config
	clk   *clocktesting.FakeClock
	sim   *ec2sim.Simulator
	log   logrus.FieldLogger

	clients  map[string]*ec2.Client // by role, signer and region
	requests []request
	answered int // requests answered (or failed) so far
	checked  int // requests already checked
	down     map[string]bool
	// downForCall are regions a lost answer took down until the current call ends.
	downForCall []string
	faults      faults
	// hook runs once when the request count passes hookAt: another actor's step inside a call.
	hook   func()
	hookAt int
	// callCtx is the context of the plugin call under way, nil between calls; callCancel cuts
	// the call short (race.go), callStart is when it began, and elsewhere is the fake time
	// another plugin process's requests took inside it.
	callCtx    context.Context
	callCancel context.CancelFunc
	callStart  time.Time
	elsewhere  time.Duration
	// race is the deletion racing the reconcile under way (race.go); marks are when EC2 took
	// the sources' deletion and copy-requested marks (marks.go).
	race  *race
	marks markLog
	// kube is the Kubernetes API's fault during the step; kubeRefused says the API refused a
	// read of the current plugin process (Forbidden).
	kube        *kubeFault
	kubeRefused bool
	// cancels is what the checks remember of the reconcile's Cancels.
	cancels cancelState
	// process is what the checks remember of the plugin process under way.
	process processState
	// refusalBegun says the account's policy refuses the setup's refusedCopy from now on.
	refusalBegun bool
	// markRefusedOnce says EC2 has refused a process its copy-failed marks (setup.markRefused).
	markRefusedOnce bool
	// slowAnswered says an answer came slowly (faultSlow) in the run.
	slowAnswered bool
	// cancelLost says the plugin process exits as the reconcile's next Cancel begins.
	cancelLost bool

	handoff     *ebs.Handoff
	snapshotter *tracking.Snapshotter // the item phase's plugin process
	ops         []*operation
	restarted   bool
	deletions   int // full deletions that succeeded
	deleted     bool
	// deletionFailed says the last deletion failed: Velero keeps the backup's files and the
	// Backup, in phase Deleting.
	deletionFailed bool
	// reinstalled says Velero was reinstalled in the cluster; notInCluster that the Backup is
	// missing from the cluster (a reinstall or a kubectl delete) until Velero's sync brings it
	// back; abandoned that the reinstall came while the backup waited for its operations, which
	// nobody reconciles since (sync.go).
	reinstalled, notInCluster, abandoned bool
	// reportedDeleted are the snapshots an actor's deletion was reported for already.
	reportedDeleted map[string]bool
	// earlierSnapshot is the snapshot of the earlier backup the bucket holds (orphans.go);
	// listingMisread says the storage location lists another cluster's bucket during the step.
	earlierSnapshot string
	listingMisread  bool
	// recordUnread says the bucket answers the backup's record with an error during the step.
	recordUnread bool
	// earlierMoved says the earlier backup's files are in the old bucket's storage location
	// during the step; oldBucketUnlisted that it answers its listing with SlowDown.
	earlierMoved, oldBucketUnlisted bool
	// recordWritten says Velero has written the backup's record into the storage location's
	// bucket; vaultBucketFault is the vault bucket's answer to the audit during the step ("":
	// it answers); vaultListing is what the audit's last listing of the vault bucket saw
	// (vault_bucket.go).
	recordWritten    bool
	vaultBucketFault string
	vaultListing     vaultListing

	foreign   map[string]foreignSnapshot
	locked    map[string]bool
	retained  map[string]bool
	volumes   []string
	otherVols []string
	// restorers are the restores' VolumeSnapshotters by region; restores their calls.
	restorers map[string]*restoring.Restorer
	restores  []restoreCall
	// restoredFor is the PV each volume made from a snapshot was restored for, judged when
	// first seen ("" when it was made from something else).
	restoredFor map[string]string

	trace      []string
	kinds      []string
	violations []violation
}

// newWorld builds the simulator and the backup of s.
func newWorld(s setup) (*world, error) {
	cfg, err := model.ParseConfig(s.config())
	if err != nil {
		return nil, fmt.Errorf("the location's config: %w", err)
	}
	clk := clocktesting.NewFakeClock(t0)
	simCfg := ec2sim.Config{
		Unthrottled:      true,
		SnapshotDuration: ec2sim.Range(20*time.Second, 3*time.Minute),
		CopyDuration:     ec2sim.Range(30*time.Second, 5*time.Minute),
		Seed:             s.seed,
		Faults:           ec2sim.Faults{InvisibleFor: ec2sim.Fixed(s.listingLag)},
	}
	for _, id := range []string{sourceAccount, vaultAccount} {
		simCfg.Accounts = append(simCfg.Accounts, ec2sim.Account{ID: id, AccessKeys: []ec2sim.AccessKey{{AccessKeyID: keys[id].id, SecretAccessKey: keys[id].secret}}})
	}
	if s.slowCopies {
		simCfg.CopyDuration = ec2sim.Range(s.timeout+time.Hour, 2*s.timeout+time.Hour)
	}
	volumeType := "gp3"
	if s.hddVolumes {
		volumeType, simCfg.SnapshotDuration = "st1", ec2sim.Range(hddSnapshotMin, hddSnapshotMax)
	}
	if err := simCfg.Validate(); err != nil {
		return nil, err
	}
	log := logrus.New()
	log.Out = io.Discard
	log.Level = logrus.PanicLevel
	w := &world{
		setup: s, cfg: cfg, clk: clk, sim: ec2sim.New(simCfg, ec2sim.WithClock(clk)), log: log,
		clients: map[string]*ec2.Client{}, down: map[string]bool{}, hookAt: -1,
		foreign: map[string]foreignSnapshot{}, locked: map[string]bool{}, retained: map[string]bool{},
		restorers: map[string]*restoring.Restorer{}, restoredFor: map[string]string{}, reportedDeleted: map[string]bool{},
	}
	w.handoff = ebs.NewHandoff(clk)
	w.snapshotter = w.itemSnapshotter()
	specs := make([]ec2sim.VolumeSpec, len(s.pvs)+1)
	for i := range specs {
		specs[i] = s.volumeSpec(i, volumeType)
		if s.restoredVolumes && i < len(s.pvs) {
			specs[i].Tags = restoredVolumeTags(i)
		}
	}
	ids := w.sim.AddVolumesTo(sourceAccount, sourceRegion, specs...)
	w.volumes, w.otherVols = ids[:len(s.pvs)], ids[len(s.pvs):]
	for i, pv := range s.pvs {
		vol := w.volumes[i]
		if s.upgrade != nil {
			vol = w.volumes[0] // static PVs on one EBS volume
		}
		w.ops = append(w.ops, &operation{pv: pv, volumeID: vol, upstream: s.upstream[i]})
	}
	w.logf("setup: %s", s)
	if s.vaultBucket {
		if err := w.makeBuckets(); err != nil {
			return nil, err
		}
	}
	if s.earlierBackup {
		// An earlier backup of this install, in the bucket and not synced into the cluster.
		w.earlierSnapshot = w.otherSnapshot(map[string]string{model.TagBackup: earlierBackupName, model.TagPV: "pvc-earlier",
			model.TagInstall: ourInstall, model.TagVolumeType: "gp3", model.TagRecorded: recordedReturnedMark, velerov1.StorageLocationLabel: storageLocation})
	}
	if s.hddVolumes {
		// A backup tool's policy runs at the backup's hour: each volume's one pending snapshot is
		// its, and the backup's CreateSnapshot calls wait behind it.
		for i := range w.ops {
			w.toolSnapshot(i)
		}
	}
	return w, nil
}

// options are the plugin's options in every process of the world.
func (w *world) options() []ebs.Option {
	return []ebs.Option{ebs.WithClock(w.clk), ebs.WithLogger(w.log), ebs.WithListingLag(w.lag())}
}

// regional returns EC2 clients for role, signing as signer.
func (w *world) regional(role, signer string, faulty bool) ec2api.Regional {
	return func(_ context.Context, region string) (ec2api.EC2, error) {
		return w.client(role, signer, region, faulty), nil
	}
}

func (w *world) client(role, signer, region string, faulty bool) *ec2.Client {
	key := role + "/" + signer + "/" + region
	c, ok := w.clients[key]
	if !ok {
		c = newClient(&transport{w: w, role: role, signer: signer, faulty: faulty}, keys[signer], region)
		w.clients[key] = c
	}
	return c
}

// vaultClients are the clients of the location's vault credentials.
func (w *world) vaultClients() ec2api.Regional {
	return w.regional("vault", w.setup.vaultCredsOf, true)
}

// itemSnapshotter is the VolumeSnapshotter of a new item-phase plugin process: the source
// location's, tagging its snapshots with this install, as register does once per process.
func (w *world) itemSnapshotter() *tracking.Snapshotter {
	s := tracking.NewSnapshotter(w.cfg, w.regional("source", sourceAccount, true), w.locationOptions(w.cfg, true)...)
	s.SetInstall(ourInstall)
	return s
}

// locationOptions are a plugin process's options for a location of config cfg.
func (w *world) locationOptions(cfg model.Config, withHandoff bool) []ebs.Option {
	opts := w.options()
	if withHandoff {
		opts = append(opts, ebs.WithHandoff(w.handoff))
	}
	if cfg.Vault.Enabled() {
		opts = append(opts, ebs.WithVaultClients(w.vaultClients()))
	}
	return opts
}

// newTracker is a fresh plugin process's Tracker: nothing in memory.
func (w *world) newTracker() *tracking.Tracker {
	w.startProcess()
	// The places the plugin's locator makes of the location, read from the Kubernetes API.
	return tracking.NewTracker(w.regional(defaultChainRole, sourceAccount, true), append(w.options(), ebs.WithLocator(w.newKubeLocator()), ebs.WithInstall(func() string { return ourInstall }))...)
}

// backup is the Backup as Velero core shows it to Progress and Cancel.
func (w *world) backup() *velerov1.Backup {
	b := &velerov1.Backup{}
	b.Name, b.UID, b.Namespace = backupName, backupUID, "velero"
	b.Spec.VolumeSnapshotLocations = []string{locationName}
	b.Spec.ItemOperationTimeout = metav1.Duration{Duration: w.setup.timeout}
	b.Status.Phase = velerov1.BackupPhaseWaitingForPluginOperations
	for _, op := range w.ops {
		if op.attempted {
			b.Status.VolumeSnapshotsAttempted++
		}
		if op.snapshotID != "" {
			b.Status.VolumeSnapshotsCompleted++
		}
	}
	return b
}

// logf adds a line to the trace.
func (w *world) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%8s ", w.clk.Since(t0).Truncate(time.Second))+fmt.Sprintf(format, args...))
}

// itemPhaseDone reports whether every PV has been through Execute and CreateSnapshot.
func (w *world) itemPhaseDone() bool {
	for _, op := range w.ops {
		if !op.attempted {
			return false
		}
	}
	return true
}

// waiting reports whether the backup still waits for operations.
func (w *world) waiting() bool {
	for _, op := range w.ops {
		if op.executed && op.state == opOpen {
			return true
		}
	}
	return !w.itemPhaseDone()
}

// onClock runs fn while stepping the fake clock whenever fn waits on it. It reports false when
// fn did not return within the real or fake limits (the call hangs). A call made by a hook
// inside another call runs in that call's goroutine, on the clock the outer call steps.
func (w *world) onClock(fn func(ctx context.Context)) bool {
	if w.callCtx != nil {
		fn(w.callCtx)
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.callCtx, w.callCancel, w.callStart, w.elsewhere = ctx, cancel, w.clk.Now(), 0
	defer func() {
		cancel()
		w.callCtx = nil
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	realEnd, fakeEnd := time.Now().Add(callRealLimit), w.clk.Now().Add(callFakeLimit)
	defer w.endCall()
	for {
		select {
		case <-done:
			return true
		default:
		}
		if time.Now().After(realEnd) || w.clk.Now().After(fakeEnd) {
			cancel()
			<-done
			return false
		}
		if w.clk.HasWaiters() {
			w.clk.Step(clockStep)
			continue
		}
		select {
		case <-done:
			return true
		case <-time.After(20 * time.Microsecond):
		}
	}
}

// endCall brings back what a lost answer took down for the call.
func (w *world) endCall() {
	for _, r := range w.downForCall {
		delete(w.down, r)
	}
	w.downForCall = nil
}

// interleave runs the hook once the request count has passed hookAt.
func (w *world) interleave() {
	if w.hook != nil && len(w.requests) > w.hookAt {
		h := w.hook
		w.hook, w.hookAt = nil, -1
		h()
	}
}

// other is a plain client of another install or tool in the source account, on a healthy EC2.
func (w *world) other(region string) *ec2.Client {
	return w.client("other", sourceAccount, region, false)
}

// tagList turns a map into EC2 tags.
func tagList(m map[string]string) []types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]types.Tag, 0, len(m))
	for _, k := range keys {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}
