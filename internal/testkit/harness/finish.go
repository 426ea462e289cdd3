package harness

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// defaultItemOperationTimeout is Velero's default spec.itemOperationTimeout.
const defaultItemOperationTimeout = 4 * time.Hour

// itemOperationTimeout is the timeout asked for, or Velero's default.
func itemOperationTimeout(asked time.Duration) time.Duration {
	if asked == 0 {
		return defaultItemOperationTimeout
	}
	return asked
}

// stage is where a backup or restore is after its item phase, as its phase names it.
type stage int

const (
	// waiting is WaitingForPluginOperations (or its PartiallyFailed form).
	waiting stage = iota
	// done is Completed (or PartiallyFailed).
	done
)

// phaseOf picks the phase of stage s from a backup's or restore's phases after its item phase:
// the waiting or the final one, partially failed when partial.
func phaseOf[P any](s stage, partial bool, wait, waitPartial, final, finalPartial P) P {
	switch {
	case s == waiting && partial:
		return waitPartial
	case s == waiting:
		return wait
	case partial:
		return finalPartial
	}
	return final
}

// run is a backup or restore as core's operations controller moves it on.
type run interface {
	// endItemPhase records when the item phase ended: the run enters WaitingForPluginOperations.
	endItemPhase(at time.Time)
	// enter sets the phase of the stage, partially failed when errors were recorded.
	enter(s stage)
	// record takes a reconcile's tally: the operations' counts, its errors, its time.
	record(reconcile int, t tally)
	// finish records the completion time and the total time since start.
	finish()
	// status is what an Observer sees now.
	status() Status
	// operations are the item operations the item phase started.
	operations() []*Operation
	// object is the Backup or Restore, as core publishes it to the API.
	object() client.Object
}

// waitAndFinalize is core after the item phase of a backup or restore: it waits in
// WaitingForPluginOperations for every operation, reconciled by an operations controller of
// its own from the end of the item phase on, then ends Completed, or PartiallyFailed when
// anything failed.
func (c *Core) waitAndFinalize(ctx context.Context, r run, cl operationClient, timeout time.Duration) error {
	oc := c.newOperationsController(time.Now())
	oc.add(r, cl, timeout)
	oc.close()
	return oc.run(ctx)
}

// finalize ends a run whose operations are all done. Core passes through Finalizing; without
// finalize actions that changes nothing here.
func (c *Core) finalize(r run) {
	r.enter(done)
	r.finish()
	c.publish(r.object())
	c.observe(r.status())
}
