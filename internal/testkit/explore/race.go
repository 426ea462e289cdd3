package explore

import (
	"context"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// A deletion racing a reconcile. After a server restart nothing stops Velero's deletion
// controller from deleting a backup whose operations are open, while its operations controller
// reconciles it: two plugin processes, each calling EC2, their requests interleaved. The draw
// lands the deletion (DeleteSnapshot of each recorded snapshot, as the deletion controller calls
// it, in its own process) between two requests of one Progress (or Cancel) call, just before
// the reconcile's n-th write; the reconcile goes on after the deletion's k-th write (or once it
// has ended), on the view of EC2 its process read before the deletion marked anything (the
// tracker shares one read per reconcile through a cache), and ends; then the deletion ends.
// A write is a mutating request: where two processes' interleaving matters.
//
// The reverse, a reconcile in a fresh process between two of the deletion's requests, is
// actDelete's hook (actions.go deleteBackup).
//
// The call the deletion landed in is cut short at Velero's call deadline, as the plugin's adapter
// cuts it: a Progress call's requests never come later than that after it began, which the
// deletion's waits (for a copy asked for just before its mark, for a lock) rely on.

// actRaceDeletion is a reconcile with the backup's deletion landing inside one of its calls.
const actRaceDeletion = "velero: reconcile, the backup's deletion landing inside a Progress call"

// The shape of a drawn race.
const (
	// maxRaceWrites bounds the reconcile's write the deletion lands before.
	maxRaceWrites = 4
	// maxRaceYield bounds the deletion's writes after which the reconcile goes on (-1: the
	// deletion runs whole inside the call).
	maxRaceYield = 2
)

// race is a deletion racing a reconcile: the deletion's goroutine, paused or ended.
type race struct {
	w    *world
	kind deletionKind
	// ctx is the deletion's own context: its calls outlive the call it landed in.
	ctx context.Context
	// paused is sent on when the deletion pauses; resume lets it go on; done closes when it ends.
	paused, resume chan struct{}
	done           chan struct{}
	started        bool
	// before is what EC2 held when the deletion began.
	before map[string]ec2sim.Snapshot
}

// raceDeletion is a reconcile in a fresh plugin process with the backup's deletion by kind
// landing just before the reconcile's write-th write, the reconcile going on after the
// deletion's yield-th write (-1: once the deletion has ended). A reconcile making fewer writes
// is followed by the deletion.
func (w *world) raceDeletion(kind deletionKind, write, yield int) {
	r := &race{w: w, kind: kind, ctx: context.Background(), paused: make(chan struct{}), resume: make(chan struct{}), done: make(chan struct{})}
	w.logf("velero: reconcile; the deletion by %s lands before its write %d, the reconcile going on after the deletion's write %d (-1: once it has ended)", kind, write, yield)
	w.race = r
	defer func() { w.race = nil }()
	w.atWrite(write, func() { r.land(yield) })
	w.reconcile()
	w.hook, w.hookAt = nil, -1
	if !r.started {
		w.logf("velero: (the reconcile made fewer writes) deletion")
		w.deleteBackup(kind, -1, 0)
		return
	}
	w.onClock(func(context.Context) { r.goOn() })
}

// land starts the deletion inside the call under way, and waits until it pauses after its
// yield-th write, or ends. The call goes on unless Velero's deadline has passed meanwhile.
func (r *race) land(yield int) {
	w := r.w
	r.started, r.before = true, w.everything()
	w.logf("velero: (the deletion lands inside the call)")
	call, inCancel := w.callCtx, w.cancels.inCancel
	start := w.clk.Now()
	w.callCtx, w.cancels.inCancel = r.ctx, false
	go func() {
		defer close(r.done)
		if yield >= 0 {
			w.afterWrites(yield, r.pause)
		}
		w.deleteBackup(r.kind, -1, 0)
	}()
	select {
	case <-r.paused:
	case <-r.done:
	}
	w.callCtx, w.cancels.inCancel = call, inCancel
	w.elsewhere += w.clk.Since(start)
	if w.clk.Since(w.callStart) >= callDeadline {
		w.logf("velero: the call is past its %s deadline: cut short", callDeadline)
		w.callCancel()
	} else {
		w.logf("velero: (the reconcile goes on)")
	}
}

// pause hands the turn back to the reconcile, in the deletion's goroutine, until goOn.
func (r *race) pause() {
	r.w.logf("velero: (the deletion pauses)")
	r.paused <- struct{}{}
	<-r.resume
}

// goOn lets a paused deletion go on, in its own context, and waits for its end.
func (r *race) goOn() {
	select {
	case <-r.done:
		return
	default:
	}
	r.w.logf("velero: (the deletion goes on)")
	r.w.callCtx = r.ctx
	r.resume <- struct{}{}
	<-r.done
}

// atWrite arms the hook to run fn just before the n-th write from now.
func (w *world) atWrite(n int, fn func()) {
	seen := 0
	var arm func()
	arm = func() {
		w.hook, w.hookAt = func() {
			if mutating[w.requests[len(w.requests)-1].action] {
				if seen++; seen == n {
					fn()
					return
				}
			}
			arm()
		}, len(w.requests)
	}
	arm()
}

// afterWrites arms the hook to run fn just before the first request after the n-th write from
// now (before the next request, for n 0).
func (w *world) afterWrites(n int, fn func()) {
	seen := 0
	var arm func()
	arm = func() {
		w.hook, w.hookAt = func() {
			if seen == n {
				fn()
				return
			}
			if mutating[w.requests[len(w.requests)-1].action] {
				seen++
			}
			arm()
		}, len(w.requests)
	}
	arm()
}

// completedOn is what an operation Velero has just seen complete is judged on: EC2 as it is, or,
// while a deletion races the reconcile, as it was when the deletion began. The plugin process
// read EC2 before (its view is cached for the reconcile), and the deletion deletes what it
// reports complete.
func (w *world) completedOn() map[string]ec2sim.Snapshot {
	if w.race != nil && w.race.started {
		return w.race.before
	}
	return w.everything()
}
