package drill_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/audit/audittest"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// recoveryLocation is the cluster's location in the copy region, as a recovery cluster has.
const recoveryLocation = "recovery"

// pollInterval is the drills' poll interval in these tests, on the world's fake clock.
const pollInterval = 5 * time.Second

// drillWorld is a world with a DR-ready backup b1 of two volumes (the first one without a copy
// when uncopied) and the recovery location.
func drillWorld(t *testing.T, uncopied bool) *audittest.World {
	w := audittest.New(t)
	w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
	w.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: recoveryLocation},
		Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider,
			Config: map[string]string{model.ConfigRegion: audittest.CopyRegion, model.ConfigProfile: audittest.SourceProfile}}})
	first := audittest.Outcome{}
	if uncopied {
		first.Copy = "missing"
	}
	start := w.Clock.Now()
	w.Backup("b1", "", start, velerov1.BackupPhaseCompleted, w.Take("b1", w.Vols[0], first), w.Take("b1", w.Vols[1], audittest.Outcome{}))
	return w
}

// run runs a drill on the world's fake clock, moving the clock whenever the drill waits.
func run(t *testing.T, w *audittest.World, o drill.Options) drill.Report {
	t.Helper()
	o.PollInterval = pollInterval
	d := &drill.Driller{Kube: w.Kube(), Records: w.Records, Resolver: w.Resolver(), Clients: w.Clients(), Clock: w.Clock,
		Log: logrus.New(), Namespace: audittest.VeleroNS, Provider: location.DefaultProvider}
	type result struct {
		rep drill.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := d.Run(context.Background(), o)
		done <- result{rep, err}
	}()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.rep
		case <-time.After(time.Millisecond):
			if w.Clock.HasWaiters() {
				w.Clock.Step(pollInterval)
			}
		}
	}
}

// liveVolumes counts the volumes of the source account in region, deleted ones aside.
func liveVolumes(w *audittest.World, region string) int {
	return len(w.Srv.Sim.VolumesIn(audittest.SourceAccount, region))
}

func TestDrill(t *testing.T) {
	for _, tc := range []struct {
		name     string
		uncopied bool
		opts     drill.Options
		restored int
		passed   bool
		says     string
	}{
		{name: "a drill restores every volume in the recovery region, measures them, and deletes them all", restored: 2, passed: true,
			opts: drill.Options{WaitInitialized: true}, says: "passed"},
		{name: "--max-volumes restores a bounded sample", restored: 1, passed: true,
			opts: drill.Options{Limits: drill.Limits{MaxVolumes: 1}}, says: "not in the sample: beyond --max-volumes 1"},
		{name: "a volume whose copy never reached the recovery region fails the drill", uncopied: true, restored: 1,
			says: "not restorable: neither the snapshot nor a completed copy of it is in the location's region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := drillWorld(t, tc.uncopied)
			before := w.Srv.Sim.Stats()
			tc.opts.Backup, tc.opts.Location = "b1", recoveryLocation
			rep := run(t, w, tc.opts)
			var out strings.Builder
			if err := rep.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			if len(rep.Volumes) != tc.restored || rep.Passed() != tc.passed || !strings.Contains(out.String(), tc.says) {
				t.Errorf("%d volumes, passed %v; want %d, %v, and %q in\n%s", len(rep.Volumes), rep.Passed(), tc.restored, tc.passed, tc.says, out.String())
			}
			for _, v := range rep.Volumes {
				if v.VolumeID == "" || v.ToAvailable == 0 || !v.Deleted || tc.opts.WaitInitialized && v.ToInitialized < v.ToAvailable {
					t.Errorf("volume %+v: want it made, available, deleted (and initialized when waited for)", v)
				}
			}
			if n := liveVolumes(w, audittest.CopyRegion); n != 0 {
				t.Errorf("%d volumes left in %s", n, audittest.CopyRegion)
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
			w := drillWorld(t, false)
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

// killedAfterCreate are the world's clients, whose every CreateVolume is followed by the end of
// the drill's process: kill cancels the drill's context as soon as EC2 answered.
type killedAfterCreate struct {
	audittest.SimClients
	kill context.CancelFunc
}

func (k killedAfterCreate) Client(ctx context.Context, region string, creds ec2api.Credentials) (ec2api.EC2, error) {
	c, err := k.SimClients.Client(ctx, region, creds)
	if err != nil {
		return nil, err
	}
	return killingClient{Client: c.(*ec2.Client), kill: k.kill}, nil
}

// killingClient is an EC2 client whose CreateVolume ends the drill once answered.
type killingClient struct {
	*ec2.Client
	kill context.CancelFunc
}

func (c killingClient) CreateVolume(ctx context.Context, in *ec2.CreateVolumeInput, optFns ...func(*ec2.Options)) (*ec2.CreateVolumeOutput, error) {
	out, err := c.Client.CreateVolume(ctx, in, optFns...)
	c.kill()
	return out, err
}

// A drill killed as soon as EC2 made its volume leaves a volume that is already the drill's:
// audit --delete-orphans finds it and deletes it.
func TestDrillKilledAfterCreateVolumeLeavesItsVolumeFound(t *testing.T) {
	w := drillWorld(t, false)
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	d := &drill.Driller{Kube: w.Kube(), Records: w.Records, Resolver: w.Resolver(), Clients: killedAfterCreate{SimClients: w.Clients(), kill: kill},
		Clock: w.Clock, Log: logrus.New(), Namespace: audittest.VeleroNS, Provider: location.DefaultProvider}
	rep, err := d.Run(ctx, drill.Options{Backup: "b1", Location: recoveryLocation, PollInterval: pollInterval})
	if err != nil {
		t.Fatal(err)
	}
	if liveVolumes(w, audittest.CopyRegion) == 0 {
		t.Fatalf("the killed drill left no volume (report %+v): nothing to find", rep)
	}
	w.Clock.Step(audit.DrillMaxDuration + time.Minute)
	audited := w.Audit(true)
	if n := liveVolumes(w, audittest.CopyRegion); n != 0 {
		t.Errorf("%d volumes left after audit --delete-orphans, want the killed drill's found and deleted\n%s", n, audittest.Text(t, audited))
	}
}

// --record writes the drill's result on the Backup, and audit shows it.
func TestDrillRecordShownByAudit(t *testing.T) {
	w := drillWorld(t, false)
	rep := run(t, w, drill.Options{Backup: "b1", Location: recoveryLocation, Record: true})
	if !rep.Passed() {
		t.Fatalf("drill failed: %v", rep.Problems)
	}
	audited := w.Audit(false)
	if len(audited.Backups) != 1 || audited.Backups[0].LastDrill != rep.Summary() {
		t.Errorf("audit shows %+v, want the last drill %q", audited.Backups, rep.Summary())
	}
}
