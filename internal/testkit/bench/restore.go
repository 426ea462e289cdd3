package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1api "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

const (
	// initializationPoll is how often the bench asks DescribeVolumeStatus whether every restored
	// volume is fully initialized.
	initializationPoll = 200 * time.Millisecond
	// initializationPatience is how many times its bound the bench waits for a restore's
	// volumes to be fully initialized before it gives up.
	initializationPatience = 3
	// fullyInitialized is DescribeVolumeStatus's progress of a fully initialized volume.
	fullyInitialized = 100
)

// Restore is the large-restore scenario: after a disaster, a recovery cluster in the copy
// region restores every volume of a backup at once from the copies there, twice: at EBS's
// default initialization rate, then at a provisioned rate.
type Restore struct {
	// Volumes is the number of PVs restored.
	Volumes int `json:"volumes"`
	// SizesGiB are the volumes' sizes: volume i has SizesGiB[i mod len(SizesGiB)] GiB.
	SizesGiB []int32 `json:"sizesGiB"`
	// Available is how long a new volume stays creating before it is available.
	Available ec2sim.DurationRange `json:"volumeAvailableAfter"`
	// InitializationRate is the location's volumeInitializationRate (MiB/s) of the second
	// restore; the first sets none, so EBS initializes its volumes at its default rate (in the
	// simulator ec2sim.DefaultInitializationRate).
	InitializationRate int `json:"volumeInitializationRate"`
	// InitializationTimeScale divides the time volumes take to initialize in the run, and in
	// the bounds (ec2sim.Config.InitializationTimeScale); nothing else is scaled.
	InitializationTimeScale float64 `json:"initializationTimeScale"`
	// SyncPeriod is Velero's --item-operation-sync-frequency.
	SyncPeriod ec2sim.Duration `json:"syncPeriod"`
	// ThrottleScale multiplies AWS's request rates (1: AWS's documented rates).
	ThrottleScale float64 `json:"throttleScale"`
	// Snapshots and Copies are the lifecycles of the backup made first, whose time is not
	// measured.
	Snapshots ec2sim.DurationRange `json:"backupSnapshotDuration"`
	Copies    ec2sim.DurationRange `json:"backupCopyDuration"`
}

// StandardRestore restores 500 volumes of 10 to 200 GiB (every multiple of 10 GiB, 25 volumes
// of each), available 10 s after CreateVolume, with the standard scenario's 1 s sync period at
// AWS's rates, from a backup with second-long lifecycles; at the default rate, then at
// 300 MiB/s, EC2's highest; initialization 60 times faster than on EBS (an EBS minute a
// second: 200 GiB at 300 MiB/s takes 11.4 s, at the default rate 68 s).
func StandardRestore() Restore {
	fast := rig.FastConfig(0)
	sizes := make([]int32, 20)
	for i := range sizes {
		sizes[i] = int32(10 * (i + 1))
	}
	return Restore{
		Volumes:                 500,
		SizesGiB:                sizes,
		Available:               ec2sim.Fixed(10 * time.Second),
		InitializationRate:      300,
		InitializationTimeScale: 60,
		SyncPeriod:              ec2sim.Duration{Duration: time.Second},
		ThrottleScale:           1,
		Snapshots:               fast.SnapshotDuration,
		Copies:                  fast.CopyDuration,
	}
}

// LowerBound is the shortest time any restore takes until its volumes are available: the time
// to issue every CreateVolume at EC2's CreateVolume rate (a burst of 100, then 5 per second),
// plus the longest time a volume takes to become available.
func (s Restore) LowerBound() time.Duration {
	return s.createVolumes().issueTime(s.Volumes) + longest(s.Available)
}

// InitializedBound is the shortest time any restore at rate (MiB/s; 0: EBS's default rate)
// takes until its volumes are fully initialized: LowerBound, plus the largest volume's size ÷
// the rate, divided by the scenario's InitializationTimeScale as in the run.
func (s Restore) InitializedBound(rate int) time.Duration {
	return s.LowerBound() + time.Duration(float64(s.initializationTime(slices.Max(s.SizesGiB), rate))/s.timeScale())
}

// ebsInitializedBound is InitializedBound at EBS's own initialization time.
func (s Restore) ebsInitializedBound(rate int) time.Duration {
	return s.LowerBound() + s.initializationTime(slices.Max(s.SizesGiB), rate)
}

// initializationTime is how long EBS takes to initialize a volume of size GiB at rate MiB/s
// (0: the simulator's default rate).
func (s Restore) initializationTime(size int32, rate int) time.Duration {
	if rate == 0 {
		rate = ec2sim.DefaultInitializationRate
	}
	return time.Duration(size) * 1024 * time.Second / time.Duration(rate)
}

func (s Restore) timeScale() float64 {
	if s.InitializationTimeScale <= 0 {
		return 1
	}
	return s.InitializationTimeScale
}

// createVolumes is EC2's CreateVolume bucket in the scenario.
func (s Restore) createVolumes() bucket {
	return newBucket(createVolumeBurst, createVolumeRate, s.ThrottleScale)
}

// rates are the initialization rates of the scenario's restores, in the order they run: the
// default rate, then the provisioned one if any.
func (s Restore) rates() []int {
	if s.InitializationRate == 0 {
		return []int{0}
	}
	return []int{0, s.InitializationRate}
}

func (s Restore) simConfig() ec2sim.Config {
	return ec2sim.Config{SnapshotDuration: s.Snapshots, CopyDuration: s.Copies, VolumeCreateDuration: s.Available,
		InitializationTimeScale: s.InitializationTimeScale, ThrottleScale: s.ThrottleScale, Unthrottled: s.ThrottleScale <= 0,
		CopyLimit: copySlots, Seed: 42}
}

// seed adds the scenario's volumes to the source region, gp3 of the scenario's sizes in its
// zones in turn, and returns their PVs, in-tree and CSI in turn.
func (s Restore) seed(sim *ec2sim.Simulator) []*corev1api.PersistentVolume {
	zones := []string{rig.SourceRegion + "a", rig.SourceRegion + "b", rig.SourceRegion + "c"}
	specs := make([]ec2sim.VolumeSpec, s.Volumes)
	for i := range specs {
		specs[i] = ec2sim.VolumeSpec{AvailabilityZone: zones[i%len(zones)], Type: "gp3", SizeGiB: s.SizesGiB[i%len(s.SizesGiB)]}
	}
	ids := sim.AddVolumes(rig.SourceRegion, specs...)
	pvs := make([]*corev1api.PersistentVolume, len(specs))
	for i, spec := range specs {
		pvs[i] = fixture.Volume{PV: fmt.Sprintf("pv-%04d", i), VolumeID: ids[i], Zone: spec.AvailabilityZone, SizeGiB: spec.SizeGiB,
			CSI: i%2 == 1}.PersistentVolume()
	}
	return pvs
}

// RestoreResult is one restore of the scenario: Result's makespan is the time until the
// restore completes (every volume available), and Initialized the time until every volume is
// fully initialized.
type RestoreResult struct {
	Result
	// InitializationRate is the restore's volumeInitializationRate in MiB/s; 0: none, EBS's
	// default rate.
	InitializationRate int `json:"volumeInitializationRate"`
	// Initialized is the time from the restore's start until DescribeVolumeStatus reports every
	// restored volume 100% initialized; InitializedBound is its lower bound and
	// InitializedRatio Initialized / InitializedBound. Initialization runs the scenario's
	// InitializationTimeScale times faster than on EBS, in the bound too.
	Initialized      Seconds `json:"initializedSeconds"`
	InitializedBound Seconds `json:"initializedBoundSeconds"`
	InitializedRatio float64 `json:"initializedRatio"`
}

// RestoreRuns are the scenario's restores, in the order they ran.
type RestoreRuns []RestoreResult

func (rs RestoreRuns) summary() string {
	lines := make([]string, len(rs))
	for i, r := range rs {
		lines[i] = fmt.Sprintf("%s: available after %.1fs (bound %.1fs, ratio %.2f), fully initialized after %.1fs (bound %.1fs, ratio %.2f), %d EC2 calls, %d failed",
			rateLabel(r.InitializationRate), r.Makespan, r.Bound, r.Ratio, r.Initialized, r.InitializedBound, r.InitializedRatio, r.TotalCalls, r.FailedOps)
	}
	return strings.Join(lines, "; ")
}

// rateLabel names an initialization rate as the tables do.
func rateLabel(rate int) string {
	if rate == 0 {
		return fmt.Sprintf("default (%d MiB/s)", ec2sim.DefaultInitializationRate)
	}
	return fmt.Sprintf("%d MiB/s", rate)
}

// RunRestore backs up the scenario's volumes with copies (not measured), then restores them
// all in the copy region with this plugin, through Velero's plugin client, once for each of
// the scenario's initialization rates, and measures each restore: its time until it completes
// and until every volume it made is fully initialized, the EC2 calls it made until it
// completed, its failed operations and volumes not restored.
func (r Runner) RunRestore(ctx context.Context, s Restore) (RestoreRuns, error) {
	if len(s.SizesGiB) == 0 || slices.Min(s.SizesGiB) <= 0 {
		return nil, fmt.Errorf("restore scenario: volume sizes %v: want at least one, each of 1 GiB or more", s.SizesGiB)
	}
	rg, err := r.newRig(fmt.Sprintf("bench-restore-%d", s.Volumes), s.simConfig(), s.SyncPeriod.Duration)
	if err != nil {
		return nil, err
	}
	defer rg.Close()
	backup, err := rg.Core.Backup(ctx, harness.BackupRequest{Name: "bench-restore", Location: rig.Location(rig.SourceRegion, rig.CopyRegion), PVs: s.seed(rg.Sim)})
	if err != nil {
		return nil, fmt.Errorf("the backup to restore: %w", err)
	}
	if !backup.Succeeded() {
		return nil, fmt.Errorf("the backup to restore is %s: %v %v", backup.Backup.Status.Phase, backup.ItemErrors, backup.OperationErrors)
	}
	var runs RestoreRuns
	var lastEnd time.Time
	for _, rate := range s.rates() {
		// each restore starts with CreateVolume's bucket full, as the bound assumes
		if err := sleep(ctx, time.Until(lastEnd.Add(s.createVolumes().refillTime()))); err != nil {
			return nil, err
		}
		res, err := r.restoreAt(ctx, rg, s, backup, rate)
		if err != nil {
			return nil, fmt.Errorf("the restore at %s: %w", rateLabel(rate), err)
		}
		runs, lastEnd = append(runs, res), time.Now()
	}
	return runs, nil
}

// restoreAt restores the backup in the copy region at an initialization rate (0: none set) and
// waits until its volumes are fully initialized.
func (r Runner) restoreAt(ctx context.Context, rg *rig.Rig, s Restore, backup *harness.BackupResult, rate int) (RestoreResult, error) {
	config := map[string]string{model.ConfigRegion: rig.CopyRegion}
	name := "bench-restore-dr-default"
	if rate > 0 {
		config[model.ConfigVolumeInitializationRate] = strconv.Itoa(rate)
		name = fmt.Sprintf("bench-restore-dr-%d", rate)
	}
	before := rg.Sim.Stats()
	start := time.Now()
	var restore *harness.RestoreResult
	peak, err := r.sampled(func() (err error) {
		restore, err = rg.Core.Restore(ctx, harness.RestoreRequest{Name: name, Backup: backup, Location: harness.NewLocation("default", config)})
		return err
	})
	if err != nil {
		return RestoreResult{}, err
	}
	calls := callsSince(before, rg.Sim.Stats())
	ids := make([]string, len(restore.Volumes))
	for i, v := range restore.Volumes {
		ids[i] = v.VolumeID
	}
	bound := s.InitializedBound(rate)
	initialized, err := awaitInitialized(ctx, rig.NewEC2(rg.Server.URL, rig.CopyRegion), ids, start.Add(initializationPatience*bound))
	if err != nil {
		return RestoreResult{}, err
	}
	res := RestoreResult{
		Result: Result{Strategy: "plugin", Volumes: s.Volumes, Measured: s.Volumes, Reconciles: restore.Reconciles,
			ThrottleScale: s.ThrottleScale, PeakMemoryBytes: peak},
		InitializationRate: rate,
		Initialized:        seconds(initialized.Sub(start)),
		InitializedBound:   seconds(bound),
	}
	res.fill(s.LowerBound(), "", calls, restore.Total)
	res.FailedOps = restore.Restore.Status.RestoreItemOperationsFailed + s.Volumes - len(restore.Volumes)
	res.InitializedRatio = float64(res.Initialized) / float64(res.InitializedBound)
	return res, nil
}

// awaitInitialized asks DescribeVolumeStatus every initializationPoll until it reports every
// volume of ids 100% initialized, and returns when it first did; past deadline it fails naming
// how many volumes are not.
func awaitInitialized(ctx context.Context, c *ec2.Client, ids []string, deadline time.Time) (time.Time, error) {
	for {
		now := time.Now()
		left, err := notInitialized(ctx, c, ids)
		if err != nil {
			return time.Time{}, err
		}
		if len(left) == 0 {
			return now, nil
		}
		if now.After(deadline) {
			return time.Time{}, fmt.Errorf("%d of %d restored volumes not fully initialized by %s (%s first)", len(left), len(ids), deadline.Format(time.TimeOnly), left[0])
		}
		if err := sleep(ctx, initializationPoll); err != nil {
			return time.Time{}, err
		}
	}
}

// notInitialized is the volumes of ids that DescribeVolumeStatus does not report 100%
// initialized (with no initialization details, or not listed, they are not).
func notInitialized(ctx context.Context, c *ec2.Client, ids []string) ([]string, error) {
	done := map[string]bool{}
	pages := ec2.NewDescribeVolumeStatusPaginator(c, &ec2.DescribeVolumeStatusInput{VolumeIds: ids})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeVolumeStatus of the restored volumes: %w", err)
		}
		for _, st := range page.VolumeStatuses {
			done[aws.ToString(st.VolumeId)] = initializedFully(st.InitializationStatusDetails)
		}
	}
	var left []string
	for _, id := range ids {
		if !done[id] {
			left = append(left, id)
		}
	}
	return left, nil
}

func initializedFully(d *types.InitializationStatusDetails) bool {
	return d != nil && aws.ToInt64(d.Progress) >= fullyInitialized
}

// sleep waits for d (nothing when d ≤ 0) or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
