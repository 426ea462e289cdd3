package tracking

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestSettings(t *testing.T) {
	clk := clocktesting.NewFakeClock(mockec2.T0)
	defaults := ebs.NewSettings(nil)
	tests := []struct {
		name string
		opt  ebs.Option
		get  func(ebs.Settings) any
		def  any // the documented default
		set  any
	}{
		{"cache TTL", ebs.WithCacheTTL(time.Second), func(s ebs.Settings) any { return s.CacheTTL }, 5 * time.Second, time.Second},
		{"copy limit", ebs.WithCopyLimit(3), func(s ebs.Settings) any { return s.CopyLimit }, 20, 3},
		{"not-found grace", ebs.WithNotFoundGrace(time.Hour), func(s ebs.Settings) any { return s.NotFoundGrace }, 15 * time.Minute, time.Hour},
		{"create patience", ebs.WithCreatePatience(time.Hour), func(s ebs.Settings) any { return s.CreatePatience }, 10 * time.Minute, time.Hour},
		{"listing lag", ebs.WithListingLag(time.Minute), func(s ebs.Settings) any { return s.ListingLag }, 30 * time.Second, time.Minute},
		{"clock", ebs.WithClock(clk), func(s ebs.Settings) any { return s.Clock.Now() }, nil, mockec2.T0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.def != nil && tt.get(defaults) != tt.def {
				t.Errorf("default %v, want %v", tt.get(defaults), tt.def)
			}
			if got := tt.get(ebs.NewSettings([]ebs.Option{tt.opt})); got != tt.set {
				t.Errorf("set to %v, want %v", got, tt.set)
			}
		})
	}
}

// Shorter settings take effect: a 1 s cache, a 1 min not-found grace, a copy limit of 2.
func TestTrackerSettings(t *testing.T) {
	f := mockec2.NewFixture(t)
	for i := 0; i < 3; i++ {
		f.Src().Add(mockec2.Snapshot(fmt.Sprintf("snap-%08x", i), volN(i), types.SnapshotStateCompleted, mockec2.ToDest(), mockec2.StartedAt(time.Duration(i)*time.Minute)))
	}
	m := serveTracker(f, nil)
	tr := newTracker(f, ebs.WithCacheTTL(time.Second), ebs.WithNotFoundGrace(time.Minute), ebs.WithCopyLimit(2))
	p, err := reconcile(tr, 3, inProgress)
	checkProgress(t, p, err, want{n: 100, total: 200, desc: "waiting for a copy slot in us-west-2 (2 copies of this backup in flight, EC2's limit)"})
	if n := m.count("CopySnapshot"); n != 2 {
		t.Errorf("%d copies with a limit of 2", n)
	}
	f.Clk.Step(61 * time.Second)
	p, err = tr.Progress(context.Background(), opID(mockec2.VolA), inProgress)
	checkProgress(t, p, err, want{completed: true, desc: "no native snapshot"})
	// Two descriptions of the backup with a 1 s cache, and one re-read of the sources marked for copies.
	if n := f.Src().DescribeCount(); n != 3 {
		t.Errorf("%d DescribeSnapshots, want 3 with a 1s cache", n)
	}
}

func TestPercent(t *testing.T) {
	for in, want := range map[string]int64{"45%": 45, "0%": 0, "100%": 100, "": 0, "abc": 0, "-5%": 0, "150%": 100, "7": 7} {
		if got := percent(aws.String(in)); got != want {
			t.Errorf("percent(%q) = %d, want %d", in, got, want)
		}
	}
	if percent(nil) != 0 || progressText(aws.String("45%")) != "45%" || progressText(nil) != "0%" {
		t.Errorf("percent(nil) = %d, progressText = %q", percent(nil), progressText(nil))
	}
	if got := truncate(strings.Repeat("x", 300), 255); len(got) != 255 {
		t.Errorf("truncated to %d", len(got))
	}
}
