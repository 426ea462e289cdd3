package drill_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/audittest"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// recoveryLocation is the cluster's location in the copy region, as a recovery cluster has;
// recoveryInVault one in the vault account, as a recovery cluster with the vault's identity alone.
const (
	recoveryLocation = "recovery"
	recoveryInVault  = "vault-recovery"
)

// pollInterval is the drills' poll interval in these tests, on the world's fake clock.
const pollInterval = 5 * time.Second

// drillWorld is a world with a DR-ready backup b1 of two volumes (the first one without a copy
// when uncopied, without a vault copy when unvaulted) and the recovery location.
func drillWorld(t *testing.T, uncopied, unvaulted bool) (*audittest.World, []audittest.Taken) {
	w := audittest.New(t)
	w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
	w.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: recoveryLocation},
		Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider,
			Config: map[string]string{model.ConfigRegion: audittest.CopyRegion, model.ConfigProfile: audittest.SourceProfile}}})
	first := audittest.Outcome{}
	if uncopied {
		first.Copy = "missing"
	}
	if unvaulted {
		first.Vault = "missing"
	}
	start := w.Clock.Now()
	taken := []audittest.Taken{w.Take("b1", w.Vols[0], first), w.Take("b1", w.Vols[1], audittest.Outcome{})}
	w.Backup("b1", "", start, velerov1.BackupPhaseCompleted, taken...)
	for _, tk := range taken {
		if tk.Vault != "" {
			// As the plugin tags every vault copy: with its source's account.
			if _, err := audittest.NewEC2(w.Srv.URL, audittest.CopyRegion, audittest.VaultProfile).CreateTags(w.Ctx, &ec2.CreateTagsInput{Resources: []string{tk.Vault},
				Tags: []types.Tag{{Key: aws.String(model.TagSourceAccount), Value: aws.String(audittest.SourceAccount)}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w, taken
}

// accounts are the accounts of the world's profiles, as STS names them.
var accounts = map[string]string{audittest.SourceProfile: audittest.SourceAccount, audittest.VaultProfile: audittest.VaultAccount}

// clients are the world's clients, with STS's answer of whose credentials they are.
type clients struct{ audittest.SimClients }

func (clients) Account(_ context.Context, _ string, creds ec2api.Credentials) (ec2api.Identity, error) {
	if a, ok := accounts[creds.Profile]; ok {
		return ec2api.Identity{Account: a}, nil
	}
	return ec2api.Identity{}, fmt.Errorf("no account for %s", creds)
}

// driller is a Driller of the world's cluster, reaching EC2 through c.
func driller(w *audittest.World, c drill.Clients) *drill.Driller {
	return &drill.Driller{Kube: w.Kube(), Records: w.Records, Resolver: w.Resolver(), Clients: c, Clock: w.Clock,
		Log: logrus.New(), Namespace: audittest.VeleroNS, Provider: location.DefaultProvider}
}

// run runs a drill on the world's fake clock, moving the clock whenever the drill waits.
func run(t *testing.T, w *audittest.World, o drill.Options) drill.Report {
	t.Helper()
	rep, err := runOn(context.Background(), w, clients{w.Clients()}, o, func() { w.Clock.Step(pollInterval) })
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// runOn runs a drill with ctx through c, calling waiting whenever the drill waits on the
// world's clock.
func runOn(ctx context.Context, w *audittest.World, c drill.Clients, o drill.Options, waiting func()) (drill.Report, error) {
	o.PollInterval = pollInterval
	type result struct {
		rep drill.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := driller(w, c).Run(ctx, o)
		done <- result{rep, err}
	}()
	for {
		select {
		case r := <-done:
			return r.rep, r.err
		case <-time.After(time.Millisecond):
			if w.Clock.HasWaiters() {
				waiting()
			}
		}
	}
}

// liveVolumes counts the drills' volumes of account in region, deleted ones aside.
func liveVolumes(w *audittest.World, account, region string) int {
	n := 0
	for _, v := range w.Srv.Sim.VolumesIn(account, region) {
		if v.Tags[audit.TagDrill] != "" {
			n++
		}
	}
	return n
}

// plant makes a completed snapshot of account in the copy region with tags, as another install,
// backup or source account would have, and returns its ID.
func plant(t *testing.T, w *audittest.World, account, profile string, tags map[string]string) string {
	t.Helper()
	vol := w.Srv.Sim.AddVolumesTo(account, audittest.CopyRegion, ec2sim.VolumeSpec{SizeGiB: audittest.VolumeGiB})[0]
	var list []types.Tag
	for k, v := range tags {
		list = append(list, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out, err := audittest.NewEC2(w.Srv.URL, audittest.CopyRegion, profile).CreateSnapshot(w.Ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: list}}})
	if err != nil {
		t.Fatal(err)
	}
	w.Clock.Step(audittest.SnapshotTime)
	return aws.ToString(out.SnapshotId)
}

func TestDrill(t *testing.T) {
	type world struct {
		w     *audittest.World
		taken []audittest.Taken
		// decoys are snapshots that look like what the drill looks for; none may be restored.
		decoys []string
	}
	copies := func(tk audittest.Taken) string { return tk.Copy }
	vaults := func(tk audittest.Taken) string { return tk.Vault }
	sources := func(tk audittest.Taken) string { return tk.Source }
	for _, tc := range []struct {
		name string
		// uncopied and unvaulted leave the first volume without its copy or its vault copy.
		uncopied, unvaulted bool
		// decoy plants snapshots that look like the first volume's copy.
		decoy func(t *testing.T, w *audittest.World, first audittest.Taken) []string
		// recovery adds a location of this config, named recoveryInVault.
		recovery map[string]string
		opts     drill.Options
		// the drill restores, from, in region of account, restored volumes made from what
		// made returns of each volume's snapshots.
		restored        int
		from            drill.From
		region, account string
		made            func(audittest.Taken) string
		passed          bool
		says            string
	}{
		{name: "by default a drill restores every volume from its copy in copyToRegion, measures them, and deletes them all",
			opts: drill.Options{WaitInitialized: true}, restored: 2, from: drill.FromCopy, region: audittest.CopyRegion, account: audittest.SourceAccount,
			made: copies, passed: true, says: "passed"},
		{name: "--from vault restores from the vault copies, in the vault account, with the vault's credentials",
			opts: drill.Options{From: drill.FromVault}, restored: 2, from: drill.FromVault, region: audittest.CopyRegion, account: audittest.VaultAccount,
			made: vaults, passed: true, says: "from the vault copies in us-west-2 (account 222222222222, location ebs)"},
		{name: "--from vault in a recovery cluster holding only the vault's identity restores from the vault copies, saying so",
			recovery: map[string]string{model.ConfigRegion: audittest.CopyRegion, model.ConfigProfile: audittest.VaultProfile,
				model.ConfigVaultAccountID: audittest.VaultAccount, model.ConfigVaultProfile: audittest.VaultProfile},
			opts: drill.Options{From: drill.FromVault, Location: recoveryInVault}, restored: 2, from: drill.FromVault, region: audittest.CopyRegion, account: audittest.VaultAccount,
			made: vaults, passed: true, says: "location vault-recovery is the vault account's own (a recovery cluster's)"},
		{name: "--from source restores from the snapshots in the location's region",
			opts: drill.Options{From: drill.FromSource}, restored: 2, from: drill.FromSource, region: audittest.SourceRegion, account: audittest.SourceAccount,
			made: sources, passed: true, says: "from the snapshots in us-east-1"},
		{name: "--location restores with a recovery cluster's location: without copyToRegion, in its region, saying so",
			opts: drill.Options{Location: recoveryLocation}, restored: 2, from: drill.FromSource, region: audittest.CopyRegion, account: audittest.SourceAccount,
			made: copies, passed: true, says: "location recovery has no copyToRegion: restoring in its region us-west-2"},
		{name: "--max-volumes restores a bounded sample",
			opts: drill.Options{Limits: drill.Limits{MaxVolumes: 1}}, restored: 1, from: drill.FromCopy, region: audittest.CopyRegion, account: audittest.SourceAccount,
			made: copies, passed: true, says: "not in the sample: beyond --max-volumes 1"},
		{name: "a volume whose copy never reached copyToRegion fails the drill, though its vault copy is there", uncopied: true,
			restored: 1, from: drill.FromCopy, region: audittest.CopyRegion, account: audittest.SourceAccount, made: copies,
			says: "not restorable: no completed copy of it in us-west-2 of account 111111111111"},
		{name: "a copy of another install's backup of the same name, and of the same PV, is not the volume's copy", uncopied: true,
			decoy: func(t *testing.T, w *audittest.World, first audittest.Taken) []string {
				other := plant(t, w, audittest.SourceAccount, audittest.SourceProfile, map[string]string{model.TagBackup: "b1", model.TagPV: "pv-" + first.Volume})
				return []string{plant(t, w, audittest.SourceAccount, audittest.SourceProfile, map[string]string{
					model.TagBackup: "b1", model.TagPV: "pv-" + first.Volume, model.TagInstall: audittest.InstallB,
					model.TagSourceSnapshotID: other, model.TagSourceRegion: audittest.SourceRegion})}
			},
			restored: 1, from: drill.FromCopy, region: audittest.CopyRegion, account: audittest.SourceAccount, made: copies,
			says: "not restorable: no completed copy of it"},
		{name: "a vault copy of another source account's snapshot of the same ID is not the volume's vault copy", unvaulted: true,
			opts: drill.Options{From: drill.FromVault},
			decoy: func(t *testing.T, w *audittest.World, first audittest.Taken) []string {
				return []string{plant(t, w, audittest.VaultAccount, audittest.VaultProfile, map[string]string{
					model.TagBackup: "b1", model.TagSourceSnapshotID: first.Source, model.TagSourceAccount: "333333333333"})}
			},
			restored: 1, from: drill.FromVault, region: audittest.CopyRegion, account: audittest.VaultAccount, made: vaults,
			says: "not restorable: no completed vault copy of it (of account 111111111111's snapshot) in us-west-2 of account 222222222222"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, taken := drillWorld(t, tc.uncopied, tc.unvaulted)
			if tc.recovery != nil {
				w.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: recoveryInVault},
					Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider, Config: tc.recovery}})
			}
			var decoys []string
			if tc.decoy != nil {
				decoys = tc.decoy(t, w, taken[0])
			}
			before := w.Srv.Sim.Stats()
			tc.opts.Backup = "b1"
			rep := run(t, w, tc.opts)
			var out strings.Builder
			if err := rep.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			if len(rep.Volumes) != tc.restored || rep.Passed() != tc.passed || !strings.Contains(out.String(), tc.says) {
				t.Errorf("%d volumes, passed %v; want %d, %v, and %q in\n%s", len(rep.Volumes), rep.Passed(), tc.restored, tc.passed, tc.says, out.String())
			}
			if rep.From != tc.from || rep.Region != tc.region || rep.Account != tc.account {
				t.Errorf("restored from %s in %s of account %s, want %s in %s of %s", rep.From, rep.Region, rep.Account, tc.from, tc.region, tc.account)
			}
			want := map[string]string{}
			for _, tk := range taken {
				want[tk.Source] = tc.made(tk)
			}
			for _, v := range rep.Volumes {
				if v.VolumeID == "" || v.ToAvailable == 0 || !v.Deleted || tc.opts.WaitInitialized && v.ToInitialized < v.ToAvailable {
					t.Errorf("volume %+v: want it made, available, deleted (and initialized when waited for)", v)
				}
				if v.RestoredFrom != want[v.SnapshotID] || slices.Contains(decoys, v.RestoredFrom) {
					t.Errorf("volume of %s made from %s, want %s", v.SnapshotID, v.RestoredFrom, want[v.SnapshotID])
				}
			}
			if n := liveVolumes(w, tc.account, tc.region); n != 0 {
				t.Errorf("%d volumes left in %s of %s", n, tc.region, tc.account)
			}
			after := w.Srv.Sim.Stats()
			for _, action := range []string{"CreateSnapshot", "CopySnapshot", "DeleteSnapshot", "ModifySnapshotAttribute", "LockSnapshot"} {
				if after.Total(action, "") != before.Total(action, "") {
					t.Errorf("the drill sent %s: it must never touch a snapshot", action)
				}
			}
		})
	}
}

// What a drill refuses to start with, before it makes anything.
func TestDrillRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		config  map[string]string
		opts    drill.Options
		wantErr string
	}{
		{name: "--from vault of a location without a vault names the key", config: map[string]string{
			model.ConfigRegion: audittest.SourceRegion, model.ConfigProfile: audittest.SourceProfile, model.ConfigCopyToRegion: audittest.CopyRegion},
			opts: drill.Options{From: drill.FromVault}, wantErr: "location ebs has no vault (no vaultAccountId)"},
		{name: "vault credentials of another account than vaultAccountId are named, with the keys to fix", config: withConfig(audittest.LocationConfig, model.ConfigVaultProfile, audittest.SourceProfile),
			opts: drill.Options{From: drill.FromVault}, wantErr: "are account 111111111111's, not vaultAccountId 222222222222's: fix vaultCredentialSecret or vaultProfile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := audittest.New(t)
			w.Cluster(audittest.ClusterAUID, tc.config)
			w.Backup("b1", "", w.Clock.Now(), velerov1.BackupPhaseCompleted, w.Take("b1", w.Vols[0], audittest.Outcome{}))
			tc.opts.Backup = "b1"
			if _, err := runOn(context.Background(), w, clients{w.Clients()}, tc.opts, func() { w.Clock.Step(pollInterval) }); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
			for _, r := range []string{audittest.SourceRegion, audittest.CopyRegion} {
				if n := liveVolumes(w, audittest.SourceAccount, r) + liveVolumes(w, audittest.VaultAccount, r); n != 0 {
					t.Errorf("%d volumes made in %s", n, r)
				}
			}
		})
	}
}

// withConfig is config with key set to value.
func withConfig(config map[string]string, key, value string) map[string]string {
	out := maps.Clone(config)
	out[key] = value
	return out
}

// A drill stopped (Ctrl-C, SIGTERM) while it waits for its volumes still deletes every one,
// and says it was interrupted.
func TestInterruptedDrillDeletesItsVolumes(t *testing.T) {
	w, _ := drillWorld(t, false, false)
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	rep, err := runOn(ctx, w, clients{w.Clients()}, drill.Options{Backup: "b1"}, func() { stop(errors.New("interrupt signal received")) })
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Volumes) != 2 || rep.Passed() {
		t.Errorf("report %+v: want both volumes made and the drill failed", rep)
	}
	for _, v := range rep.Volumes {
		if v.VolumeID == "" || !v.Deleted {
			t.Errorf("volume %+v not deleted", v)
		}
	}
	if !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.Contains(p, "interrupted (interrupt signal received)") }) {
		t.Errorf("problems %q do not say the drill was interrupted", rep.Problems)
	}
	if n := liveVolumes(w, audittest.SourceAccount, audittest.CopyRegion); n != 0 {
		t.Errorf("%d volumes left in %s after the interrupted drill", n, audittest.CopyRegion)
	}
}

// An interrupted drill's volume is deleted by the next drill, and by audit --delete-orphans;
// another install's drill volume by neither.
func TestInterruptedDrillCleanedUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cleanUp func(t *testing.T, w *audittest.World)
	}{
		{name: "the next drill deletes it", cleanUp: func(t *testing.T, w *audittest.World) {
			if rep := run(t, w, drill.Options{Backup: "b1", Location: recoveryLocation}); len(rep.Leftovers) != 1 {
				t.Errorf("leftovers deleted %v, want one", rep.Leftovers)
			}
		}},
		{name: "audit --delete-orphans deletes it", cleanUp: func(t *testing.T, w *audittest.World) {
			rep := w.Audit(true)
			if len(rep.DrillLeftovers) != 1 {
				t.Errorf("leftovers %+v, want one\n%s", rep.DrillLeftovers, audittest.Text(t, rep))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := drillWorld(t, false, false)
			c := audittest.NewEC2(w.Srv.URL, audittest.CopyRegion, audittest.SourceProfile)
			var ids []string
			for _, install := range []string{audittest.InstallA, audittest.InstallB} {
				out, err := c.CreateVolume(w.Ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String(audittest.CopyRegion + "a"), Size: aws.Int32(1),
					TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeVolume,
						Tags: []types.Tag{{Key: aws.String(audit.TagDrill), Value: aws.String(install)}}}}})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, aws.ToString(out.VolumeId))
			}
			w.Clock.Step(audit.DrillMaxDuration + time.Minute)
			tc.cleanUp(t, w)
			left := map[string]bool{}
			for _, v := range w.Srv.Sim.VolumesIn(audittest.SourceAccount, audittest.CopyRegion) {
				left[v.ID] = true
			}
			if left[ids[0]] || !left[ids[1]] {
				t.Errorf("volumes left %v: want this install's drill volume %s deleted, the other install's %s kept", left, ids[0], ids[1])
			}
		})
	}
}

// killedAfterCreate are the world's clients of a drill whose process is killed (SIGKILL, OOM) as
// soon as EC2 made its first volume: no request after reaches EC2, its deletions least of all.
type killedAfterCreate struct {
	clients
	killed *atomic.Bool
}

func (k killedAfterCreate) Client(ctx context.Context, region string, creds ec2api.Credentials) (ec2api.EC2, error) {
	c, err := k.clients.Client(ctx, region, creds)
	if err != nil {
		return nil, err
	}
	return killingClient{Client: c.(*ec2.Client), killed: k.killed}, nil
}

// killingClient is an EC2 client whose first CreateVolume kills the drill once answered.
type killingClient struct {
	*ec2.Client
	killed *atomic.Bool
}

// errKilled is what a request of the killed drill gets: it never leaves the process.
var errKilled = errors.New("the drill's process was killed")

func (c killingClient) CreateVolume(ctx context.Context, in *ec2.CreateVolumeInput, optFns ...func(*ec2.Options)) (*ec2.CreateVolumeOutput, error) {
	if c.killed.Load() {
		return nil, errKilled
	}
	out, err := c.Client.CreateVolume(ctx, in, optFns...)
	c.killed.Store(true)
	return out, err
}

func (c killingClient) DeleteVolume(ctx context.Context, in *ec2.DeleteVolumeInput, optFns ...func(*ec2.Options)) (*ec2.DeleteVolumeOutput, error) {
	if c.killed.Load() {
		return nil, errKilled
	}
	return c.Client.DeleteVolume(ctx, in, optFns...)
}

// A drill killed as soon as EC2 made its volume leaves a volume that is already the drill's:
// audit --delete-orphans finds it and deletes it.
func TestDrillKilledAfterCreateVolumeLeavesItsVolumeFound(t *testing.T) {
	w, _ := drillWorld(t, false, false)
	killed := killedAfterCreate{clients: clients{w.Clients()}, killed: new(atomic.Bool)}
	rep, err := runOn(context.Background(), w, killed, drill.Options{Backup: "b1"}, func() { w.Clock.Step(pollInterval) })
	if err != nil {
		t.Fatal(err)
	}
	if liveVolumes(w, audittest.SourceAccount, audittest.CopyRegion) == 0 {
		t.Fatalf("the killed drill left no volume (report %+v): nothing to find", rep)
	}
	w.Clock.Step(audit.DrillMaxDuration + time.Minute)
	audited := w.Audit(true)
	if n := liveVolumes(w, audittest.SourceAccount, audittest.CopyRegion); n != 0 {
		t.Errorf("%d volumes left after audit --delete-orphans, want the killed drill's found and deleted\n%s", n, audittest.Text(t, audited))
	}
}

// --record writes the drill's result on the Backup, and audit shows it.
func TestDrillRecordShownByAudit(t *testing.T) {
	w, _ := drillWorld(t, false, false)
	rep := run(t, w, drill.Options{Backup: "b1", Record: true})
	if !rep.Passed() {
		t.Fatalf("drill failed: %v", rep.Problems)
	}
	audited := w.Audit(false)
	if len(audited.Backups) != 1 || audited.Backups[0].LastDrill != rep.Summary() {
		t.Errorf("audit shows %+v, want the last drill %q", audited.Backups, rep.Summary())
	}
}

// interruptedInCreate are the world's clients of a drill interrupted (stop) while EC2 makes
// its first volume: the request reaches EC2, and its answer comes back only to a context still
// alive.
type interruptedInCreate struct {
	clients
	stop func(error)
}

func (k interruptedInCreate) Client(ctx context.Context, region string, creds ec2api.Credentials) (ec2api.EC2, error) {
	c, err := k.clients.Client(ctx, region, creds)
	if err != nil {
		return nil, err
	}
	return interruptingClient{Client: c.(*ec2.Client), stop: k.stop}, nil
}

// interruptingClient is an EC2 client whose CreateVolume interrupts the drill while in flight.
type interruptingClient struct {
	*ec2.Client
	stop func(error)
}

func (c interruptingClient) CreateVolume(ctx context.Context, in *ec2.CreateVolumeInput, optFns ...func(*ec2.Options)) (*ec2.CreateVolumeOutput, error) {
	out, err := c.Client.CreateVolume(context.WithoutCancel(ctx), in, optFns...)
	c.stop(errors.New("interrupt signal received"))
	if ctx.Err() != nil {
		return nil, ctx.Err() // the answer is lost with the request's context
	}
	return out, err
}

// A drill interrupted while EC2 makes a volume lets that restore end, deletes the volume, and
// starts no other.
func TestDrillInterruptedInCreateVolumeDeletesThatVolume(t *testing.T) {
	w, _ := drillWorld(t, false, false)
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	rep, err := runOn(ctx, w, interruptedInCreate{clients: clients{w.Clients()}, stop: stop}, drill.Options{Backup: "b1"}, func() { w.Clock.Step(pollInterval) })
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Volumes) != 1 || rep.Volumes[0].VolumeID == "" || !rep.Volumes[0].Deleted {
		t.Errorf("volumes %+v: want the one under way made and deleted, no other started", rep.Volumes)
	}
	if !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.Contains(p, "before restoring 1 of the 2 volumes") }) {
		t.Errorf("problems %q do not say a volume was not restored", rep.Problems)
	}
	if n := liveVolumes(w, audittest.SourceAccount, audittest.CopyRegion); n != 0 {
		t.Errorf("%d volumes left in %s after the interrupted drill", n, audittest.CopyRegion)
	}
}

// --schedule drills the newest backup of the schedule that can be restored.
func TestDrillOfSchedule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		phases  []velerov1.BackupPhase // of nightly-1, -2, -3, started in that order
		want    string
		wantErr string
	}{
		{name: "the newest finished backup, not one still running", want: "nightly-2",
			phases: []velerov1.BackupPhase{velerov1.BackupPhaseCompleted, velerov1.BackupPhasePartiallyFailed, velerov1.BackupPhaseWaitingForPluginOperations}},
		{name: "a schedule without a finished backup is named", wantErr: "schedule nightly has no Completed or PartiallyFailed backup (of 1)",
			phases: []velerov1.BackupPhase{velerov1.BackupPhaseFailed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := audittest.New(t)
			w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
			for i, phase := range tc.phases {
				name := fmt.Sprintf("nightly-%d", i+1)
				w.Backup(name, audittest.ScheduleName, w.Clock.Now(), phase, w.Take(name, w.Vols[0], audittest.Outcome{}))
				w.Clock.Step(time.Hour)
			}
			rep, err := runOn(context.Background(), w, clients{w.Clients()}, drill.Options{Schedule: audittest.ScheduleName}, func() { w.Clock.Step(pollInterval) })
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err %v, want %q", err, tc.wantErr)
				}
			case err != nil || rep.Backup != tc.want || !rep.Passed():
				t.Errorf("drilled %s (passed %v, problems %v, err %v), want %s", rep.Backup, rep.Passed(), rep.Problems, err, tc.want)
			}
		})
	}
}

// --backup refuses a backup that cannot be restored yet, naming it and its phase, or saying that
// Velero has not processed it when it has none.
func TestDrillOfAnUnfinishedBackup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		phase   velerov1.BackupPhase
		wantErr string
	}{
		{name: "a backup still waiting for its operations is named with its phase", phase: velerov1.BackupPhaseWaitingForPluginOperations,
			wantErr: "backup nightly-1 is WaitingForPluginOperations: only a Completed or PartiallyFailed backup can be restored"},
		{name: "a backup with no phase has not been processed yet", phase: "",
			wantErr: "backup nightly-1 has not been processed by Velero yet (no status.phase: is Velero's server running in namespace velero?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := audittest.New(t)
			w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
			w.Backup("nightly-1", audittest.ScheduleName, w.Clock.Now(), tc.phase, w.Take("nightly-1", w.Vols[0], audittest.Outcome{}))
			_, err := runOn(context.Background(), w, clients{w.Clients()}, drill.Options{Backup: "nightly-1"}, func() { w.Clock.Step(pollInterval) })
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}
