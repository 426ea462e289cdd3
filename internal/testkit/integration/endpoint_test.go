package integration

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// progressSlack is what a Progress call may take beyond its bound: gRPC, the plugin process.
const progressSlack = 3 * time.Second

// progressClock times each Progress call core makes: from the hook before it to the next hook
// (the one after it, when the operation stays open, or the one before the next call).
type progressClock struct {
	mu      sync.Mutex
	started time.Time
	longest time.Duration
	calls   int
}

func (c *progressClock) mark(starts bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if !c.started.IsZero() {
		c.calls++
		c.longest = max(c.longest, now.Sub(c.started))
	}
	c.started = time.Time{}
	if starts {
		c.started = now
	}
}

// An EC2 endpoint that stops answering mid-backup (it accepts connections and never answers)
// holds no Progress call beyond its bound: each returns within ec2api.ItemActionCallTimeout,
// saying it waits for EC2 and naming the endpoint that does not answer, and the backup
// completes with every snapshot and copy once the endpoint answers again.
func TestSilentEndpointMidBackupHoldsNoProgressCall(t *testing.T) {
	r := newRig(t, rig.FastConfig(2), 4)
	var (
		clock  progressClock
		mu     sync.Mutex
		silent time.Time
	)
	// Silent long enough for two reconciles to meet it.
	const outage = ec2api.ItemActionCallTimeout + 10*time.Second
	r.Core.Hooks = harness.Hooks{
		BeforeReconcile: func(n int) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case n == 2:
				if err := r.Sim.TakeDown(sourceRegion, ec2sim.Outage{Mode: ec2sim.OutageSilent}); err != nil {
					t.Error(err)
				}
				silent = time.Now()
			case !silent.IsZero() && time.Since(silent) > outage:
				r.Sim.BringUp(sourceRegion)
			}
		},
		BeforeProgress: func(n, i int) { clock.mark(true) },
		Expire: func(n int, op *harness.Operation) bool {
			clock.mark(false)
			return false
		},
	}
	res := r.backup(location(copyRegion), 0)
	requireCompleted(t, res, len(r.PVs))
	requireOneEach(t, r, res, copyRegion)
	if bound := ec2api.ItemActionCallTimeout + progressSlack; clock.longest > bound {
		t.Errorf("the longest of %d Progress calls took %v, want at most %v", clock.calls, clock.longest.Round(time.Millisecond), bound)
	}
	t.Logf("%d Progress calls timed, the longest %v", clock.calls, clock.longest.Round(time.Millisecond))
	said := ""
	for _, op := range res.Operations {
		for _, p := range op.History {
			if strings.Contains(p.Description, "waiting for EC2") && strings.Contains(p.Description, "no answer from "+r.Server.URL) {
				said = p.Description
			}
		}
	}
	if said == "" {
		t.Errorf("no Progress description said it waits for EC2 at %s, which did not answer", r.Server.URL)
	} else {
		t.Logf("Progress said: %s", said)
	}
}
