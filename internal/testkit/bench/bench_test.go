package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

func TestLowerBound(t *testing.T) {
	tests := []struct {
		name string
		sc   func(*Scenario)
		want time.Duration
	}{
		// 100 creates over the burst at 5/s, 10s longest snapshot, 10 waves of 10s copies
		{"standard", func(*Scenario) {}, 130 * time.Second},
		{"within the burst", func(s *Scenario) { s.Volumes = 100 }, 10*time.Second + 5*10*time.Second},
		{"one wave", func(s *Scenario) { s.Volumes = 7 }, 20 * time.Second},
		{"no throttling", func(s *Scenario) { s.ThrottleScale = 0 }, 110 * time.Second},
		// 10 s snapshots, then 1,000 copies of 1 s: 995 over CopySnapshot's burst of 50 at 5/s
		// outlast 50 waves of 20
		{"the CopySnapshot rate binds", func(s *Scenario) {
			s.Volumes, s.Copies = 1000, ec2sim.Fixed(time.Second)
		}, 180*time.Second + 190*time.Second + time.Second},
		// the storm: 290 creates over a burst of 10 at 0.5/s, then 295 copies over a burst of 5
		// at 0.5/s and a mean copy of 1 s
		{"the storm", func(s *Scenario) { *s = Storm() }, 580*time.Second + 590*time.Second + time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := Standard()
			tc.sc(&sc)
			if got := sc.LowerBound(); got != tc.want {
				t.Errorf("lower bound %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSchedulesLowerBound(t *testing.T) {
	tests := []struct {
		name string
		s    func(*Schedules)
		want time.Duration
	}{
		// scaled: 3 s apart, snapshots 5–10 s, copies 8–12 s; the first backup's creates fit the
		// burst, and its copies start a 25-wave copy phase for all 500 volumes
		{"standard", func(*Schedules) {}, 10*time.Second + 25*10*time.Second},
		{"one backup is the standard scenario's", func(s *Schedules) { s.Backups, s.Volumes = 1, 200 }, Standard().LowerBound()},
		// three item phases at once: 0, 20 and 40 s; the first backup's copy phase is 15 waves
		{"all at the same moment", func(s *Schedules) { s.Backups, s.Every.Duration = 3, 0 }, 10*time.Second + 15*10*time.Second},
		// the second schedule fires at 60 s (scaled), long after the first backup could be done
		{"the last schedule binds", func(s *Schedules) {
			s.Backups, s.Volumes, s.Every.Duration = 2, 10, 600*time.Second
		}, 60*time.Second + 10*time.Second + 10*time.Second},
		// 1 s copies: the rate binds all 500 copies from the first item phase's end (91 s), but
		// the last backup's item phase ends at 80 s and its 100 copies take 5 waves after a
		// 10 s snapshot
		{"copies of a second", func(s *Schedules) {
			s.Copies = ec2sim.Fixed(10 * time.Second)
		}, 80*time.Second + 10*time.Second + 5*time.Second},
		{"no throttling", func(s *Schedules) {
			s.Backups, s.Volumes, s.ThrottleScale = 2, 10, 0
		}, 3*time.Second + 10*time.Second + 10*time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := StandardSchedules()
			tc.s(&s)
			if got := s.LowerBound(); got != tc.want {
				t.Errorf("lower bound %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRestoreLowerBound(t *testing.T) {
	tests := []struct {
		name string
		s    func(*Restore)
		want time.Duration
	}{
		// 400 CreateVolume over the burst of 100 at 5/s, then the last volume's 10 s
		{"standard", func(*Restore) {}, 90 * time.Second},
		{"within the burst", func(s *Restore) { s.Volumes = 50 }, 10 * time.Second},
		{"slowest volume", func(s *Restore) { s.Available = ec2sim.Range(5*time.Second, 20*time.Second) }, 100 * time.Second},
		{"no throttling", func(s *Restore) { s.ThrottleScale = 0 }, 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := StandardRestore()
			tc.s(&s)
			if got := s.LowerBound(); got != tc.want {
				t.Errorf("lower bound %s, want %s", got, tc.want)
			}
		})
	}
}

func TestTargetMiss(t *testing.T) {
	tests := []struct {
		name   string
		target Target
		want   string
	}{
		{"met", ceiling("x", 1.1, 1.15), ""},
		{"ceiling missed", ceiling("x", 1.38, 1.15), "missed by 0.23 (20.0% of the target)"},
		{"zero ceiling missed", ceiling("x", 3, 0), "missed by 3.00"},
		{"floor missed", floor("x", 15, 20), "missed by 5.00 (25.0% of the target)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.target.Miss(); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

func TestMedianAndReconcileFigures(t *testing.T) {
	var r Result
	r.fillReconciles([]harness.ReconcileTime{
		{Open: 100, Took: 100 * time.Millisecond}, // 1 ms per operation, the busiest
		{Open: 10, Took: 30 * time.Millisecond},   // 3 ms
		{Open: 0, Took: 0},                        // nothing open: not counted
		{Open: 4, Took: 8 * time.Millisecond},     // 2 ms
	})
	if r.ProgressPerOp != 2 || r.ProgressPerOpBusiest != 1 || r.LongestReconcile != 0.1 {
		t.Errorf("median %v ms, busiest %v ms, longest %vs; want 2, 1, 0.1", r.ProgressPerOp, r.ProgressPerOpBusiest, r.LongestReconcile)
	}
	if got := median([]time.Duration{4, 1, 3, 2}); got != 2 {
		t.Errorf("median of an even count %d, want 2", got)
	}
}

func TestBaselinesComplete(t *testing.T) {
	sc := Standard()
	sc.Volumes = 25
	sc.Snapshots = ec2sim.Range(200*time.Millisecond, 500*time.Millisecond)
	sc.Copies = ec2sim.Range(300*time.Millisecond, 600*time.Millisecond)
	sc.SyncPeriod.Duration = 200 * time.Millisecond
	r := Runner{LogDir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	naive, err := r.RunNaive(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	if naive.FailedOps != 0 || naive.Calls["CopySnapshot"] < sc.Volumes || naive.Reconciles == 0 {
		t.Errorf("naive: %+v", naive)
	}
	blocking, err := RunBlocking(ctx, sc, 2)
	if err != nil {
		t.Fatal(err)
	}
	if blocking.FailedOps != 0 || blocking.Measured != 2 || blocking.PeakCopies != 1 {
		t.Errorf("blocking: %+v", blocking)
	}
	// serial: scaling to N multiplies the measured time by N/2
	if blocking.Makespan.Duration() < time.Duration(sc.Volumes/2)*(sc.Snapshots.Min.Duration+sc.Copies.Min.Duration) {
		t.Errorf("blocking makespan %.1fs too short for %d serial volumes", blocking.Makespan, sc.Volumes)
	}
}

// The call model allows each volume its recorded mark once, in the item phase, and counts only
// the CreateTags of the reconciles as copy batches.
func TestCallModel(t *testing.T) {
	tests := []struct {
		name                      string
		itemPhaseTags, reconTags  int
		wantBatches, wantModelMax int
	}{
		// 200 volumes × 4, 40 reconciles × 3, 12 batches × 2
		{name: "one mark per volume and 12 batches", itemPhaseTags: 200, reconTags: 12, wantBatches: 12, wantModelMax: 800 + 120 + 24},
		// marking each snapshot twice is 200 calls beyond the model, not 200 batches
		{name: "a second mark per volume is not a batch", itemPhaseTags: 400, reconTags: 12, wantBatches: 12, wantModelMax: 944},
		{name: "no copy started", itemPhaseTags: 200, wantModelMax: 920},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Result{Volumes: 200, Reconciles: 40, Calls: map[string]int{"CreateTags": tc.itemPhaseTags + tc.reconTags},
				ItemPhaseCalls: map[string]int{"CreateTags": tc.itemPhaseTags}}
			if got := copyBatches(r); got != tc.wantBatches {
				t.Errorf("copy batches %d, want %d", got, tc.wantBatches)
			}
			if got := callModel(r); got != tc.wantModelMax {
				t.Errorf("call model %d, want %d", got, tc.wantModelMax)
			}
		})
	}
}

func TestRestoreInitializedBound(t *testing.T) {
	tests := []struct {
		name string
		s    func(*Restore)
		rate int
		want time.Duration
	}{
		// 90 s to available, then 200 GiB at 300 MiB/s (682.67 s) ÷ 60
		{name: "provisioned rate", rate: 300, want: 90*time.Second + 200*1024*time.Second/300/60},
		// 200 GiB at the simulator's default 50 MiB/s: 4,096 s ÷ 60
		{name: "default rate", want: 90*time.Second + 200*1024*time.Second/50/60},
		{name: "EBS's time", s: func(s *Restore) { s.InitializationTimeScale = 1 }, rate: 300, want: 90*time.Second + 200*1024*time.Second/300},
		{name: "the largest volume binds", s: func(s *Restore) { s.SizesGiB = []int32{300, 30} }, rate: 300, want: 90*time.Second + 300*1024*time.Second/300/60},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := StandardRestore()
			if tc.s != nil {
				tc.s(&s)
			}
			if got := s.InitializedBound(tc.rate); got != tc.want {
				t.Errorf("bound %s, want %s", got, tc.want)
			}
		})
	}
}

// The bench sees a restored volume fully initialized only once DescribeVolumeStatus says 100%,
// and gives up, naming how many are not, past its deadline.
func TestAwaitInitialized(t *testing.T) {
	srv, err := ec2sim.Start(ec2sim.Config{SnapshotDuration: ec2sim.Fixed(10 * time.Millisecond), VolumeCreateDuration: ec2sim.Fixed(10 * time.Millisecond),
		InitializationTimeScale: 100, Unthrottled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	ctx := context.Background()
	c := rig.NewEC2(srv.URL, "us-east-1")
	src := srv.Sim.AddVolumes("us-east-1", ec2sim.VolumeSpec{AvailabilityZone: "us-east-1a", SizeGiB: 3})
	snap, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(src[0])})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	tests := []struct {
		name string
		rate *int32
		// within is how long the bench may wait; initializes how long the volume takes
		within, initializes time.Duration
		wantErr             string
	}{
		{name: "at 300 MiB/s", rate: aws.Int32(300), within: time.Second, initializes: 10*time.Millisecond + 3*1024*time.Second/300/100},
		{name: "past the deadline", within: 50 * time.Millisecond, wantErr: "1 of 1 restored volumes not fully initialized"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), SnapshotId: snap.SnapshotId,
				VolumeInitializationRate: tc.rate})
			if err != nil {
				t.Fatal(err)
			}
			at, err := awaitInitialized(ctx, c, []string{aws.ToString(out.VolumeId)}, start.Add(tc.within))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if took := at.Sub(start); took < tc.initializes {
				t.Errorf("fully initialized after %s, before the %s it takes", took, tc.initializes)
			}
		})
	}
}
