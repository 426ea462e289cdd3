package harness

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Pass is one pass of the operations controller: at a tick of the sync period it takes every
// backup (or restore) then waiting for plugin operations and reconciles them one after another.
type Pass struct {
	// Start is when the pass began: a tick, or the end of the pass before when that one
	// outlasted a tick (the tick enqueued the waiting backups again meanwhile).
	Start time.Time
	// Took is how long its reconciles took, one after another.
	Took time.Duration
	// Names are the backups or restores it reconciled, in order.
	Names []string
}

// operationsController plays Velero's backup (and restore) operations controller: a periodical
// source enqueues every backup waiting for plugin operations each sync period, and the
// controller's one worker reconciles them one after another
// (pkg/controller/backup_operations_controller.go, kube.PeriodicalEnqueueSource and
// controller-runtime's single worker). A pass that outlasts a tick is followed at once by the
// next, as the tick has enqueued the waiting backups again. Velero enqueues them in the order
// its informer cache lists them, which iterates a Go map: a different order every period, so
// the harness shuffles each pass.
type operationsController struct {
	core *Core
	// origin is when the ticks start: they fall at origin + k × the sync period.
	origin time.Time

	// mu guards the fields below; a run, once among the waiting, is the controller's goroutine's.
	mu      sync.Mutex
	waiting []*waiter
	closed  bool // no run will be added any more
	passes  []Pass
}

// waiter is a backup or restore in WaitingForPluginOperations, as the controller holds it.
type waiter struct {
	name    string
	run     run
	cl      operationClient
	timeout time.Duration
	// reconciles counts its reconciles so far.
	reconciles int
}

func (c *Core) newOperationsController(origin time.Time) *operationsController {
	return &operationsController{core: c, origin: origin}
}

// add takes a run whose item phase has ended: it enters WaitingForPluginOperations (and ends
// at once when it started no operation) and is reconciled from the next pass on. The run is
// observed waiting before the controller may take it, so it touches the run no more.
func (oc *operationsController) add(r run, cl operationClient, timeout time.Duration) {
	if !oc.wait(r, cl, timeout) {
		oc.core.finalize(r)
	}
}

// wait enters r in WaitingForPluginOperations and, when it has operations, among the waiting
// runs; it reports whether it did.
func (oc *operationsController) wait(r run, cl operationClient, timeout time.Duration) bool {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	r.endItemPhase(time.Now())
	r.enter(waiting)
	oc.core.publish(r.object())
	st := r.status()
	oc.core.observe(st)
	if len(r.operations()) == 0 {
		return false
	}
	oc.waiting = append(oc.waiting, &waiter{name: st.Name, run: r, cl: cl, timeout: timeout})
	return true
}

// close tells the controller that no run will be added: it returns once the last one is done.
func (oc *operationsController) close() {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	oc.closed = true
}

// run reconciles the waiting runs every sync period until every run is done and no more will
// come, or ctx ends.
func (oc *operationsController) run(ctx context.Context) error {
	period := oc.core.syncPeriod()
	at := nextTick(oc.origin, period, oc.origin)
	for {
		if err := sleepUntil(ctx, at); err != nil {
			return err
		}
		start, due, more := oc.due()
		if !more {
			return nil
		}
		if len(due) > 0 {
			oc.pass(start, due)
		}
		at = nextTick(oc.origin, period, start)
	}
}

// due returns the time and the runs of a pass starting now, in the order it takes them, and
// whether any run is waiting or may still come.
func (oc *operationsController) due() (time.Time, []*waiter, bool) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	due := slices.Clone(oc.waiting)
	rand.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
	return time.Now(), due, len(oc.waiting) > 0 || !oc.closed
}

// pass reconciles each of due once, one after another, records the pass and lets the runs that
// ended go.
func (oc *operationsController) pass(start time.Time, due []*waiter) {
	p := Pass{Start: start}
	ended := map[*waiter]bool{}
	for _, w := range due {
		p.Names = append(p.Names, w.name)
		ended[w] = !oc.reconcileOne(w)
	}
	p.Took = time.Since(start)
	oc.mu.Lock()
	defer oc.mu.Unlock()
	oc.passes = append(oc.passes, p)
	oc.waiting = slices.DeleteFunc(oc.waiting, func(w *waiter) bool { return ended[w] })
}

// reconcileOne is one reconcile of a waiting run, then its new status (and its end when no
// operation is left open). It reports whether the run still waits.
func (oc *operationsController) reconcileOne(w *waiter) bool {
	w.reconciles++
	t := oc.core.reconcile(w.cl, w.run.operations(), w.timeout, w.reconciles)
	w.run.record(w.reconciles, t)
	w.run.enter(waiting)
	oc.core.publish(w.run.object())
	oc.core.observe(w.run.status())
	if t.inProgress {
		return true
	}
	oc.core.finalize(w.run)
	return false
}

// recorded returns the passes made so far.
func (oc *operationsController) recorded() []Pass {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return slices.Clone(oc.passes)
}

// nextTick is the first tick of the sync period after t, ticks falling at origin + k × period.
func nextTick(origin time.Time, period time.Duration, t time.Time) time.Time {
	k := t.Sub(origin)/period + 1
	return origin.Add(k * period)
}

// sleepUntil waits until t (returning at once when t has passed) or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
