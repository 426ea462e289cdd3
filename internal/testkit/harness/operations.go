package harness

import (
	"fmt"
	"time"

	"github.com/vmware-tanzu/velero/pkg/itemoperation"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Operation is one asynchronous item operation (of a backup or a restore) as core records it.
type Operation struct {
	// Action is the name of the item action that returned the operation.
	Action string
	// ID is the operation ID the action returned.
	ID string
	// Resource is the item the operation belongs to.
	Resource velero.ResourceIdentifier
	// Status is what core records: phase, progress, error and times.
	Status itemoperation.OperationStatus
	// History is every answer Progress gave, in order.
	History []velero.OperationProgress
}

// Open reports whether core still calls Progress for the operation.
func (o *Operation) Open() bool {
	return o.Status.Phase == itemoperation.OperationPhaseNew || o.Status.Phase == itemoperation.OperationPhaseInProgress
}

func newOperation(action, id string, res velero.ResourceIdentifier) *Operation {
	now := metav1.Now()
	return &Operation{Action: action, ID: id, Resource: res, Status: itemoperation.OperationStatus{
		Phase: itemoperation.OperationPhaseNew, Created: &now,
	}}
}

// operationClient reaches the item action behind an operation through a plugin manager.
type operationClient interface {
	progress(m PluginManager, op *Operation) (velero.OperationProgress, error)
	cancel(m PluginManager, op *Operation) error
}

// tally counts operations by outcome.
type tally struct {
	inProgress        bool
	completed, failed int
	errs              []string
	// open counts the operations the reconcile called Progress for.
	open int
	// took is how long the reconcile's Progress and Cancel calls took, one after another.
	took time.Duration
}

// progressAll is one reconcile's pass over the operations, with the rules of
// getBackupItemOperationProgress (the restore operations controller applies the same).
func (c *Core) progressAll(m PluginManager, cl operationClient, ops []*Operation, timeout time.Duration, reconcile int) tally {
	var t tally
	for _, op := range ops {
		switch op.Status.Phase {
		case itemoperation.OperationPhaseCompleted:
			t.completed++
			continue
		case itemoperation.OperationPhaseFailed:
			t.failed++
			continue
		}
		if c.Hooks.BeforeProgress != nil {
			c.Hooks.BeforeProgress(reconcile, t.open)
		}
		t.open++
		p, err := cl.progress(m, op)
		if err != nil {
			t.fail(op, err.Error())
			continue
		}
		op.History = append(op.History, p)
		op.record(p)
		if p.Completed {
			if p.Err != "" {
				t.fail(op, p.Err)
				continue
			}
			op.Status.Phase = itemoperation.OperationPhaseCompleted
			t.completed++
			continue
		}
		if op.Status.Created.Add(timeout).Before(time.Now()) || c.Hooks.Expire != nil && c.Hooks.Expire(reconcile, op) {
			_ = cl.cancel(m, op)
			t.fail(op, "Asynchronous action timed out")
			continue
		}
		if op.Status.Phase == itemoperation.OperationPhaseNew && op.Status.Started != nil {
			op.Status.Phase = itemoperation.OperationPhaseInProgress
		}
		t.inProgress = true
	}
	return t
}

func (t *tally) fail(op *Operation, msg string) {
	op.Status.Phase = itemoperation.OperationPhaseFailed
	op.Status.Error = msg
	t.errs = append(t.errs, fmt.Sprintf("%s, plugin: %s", msg, op.Action))
	t.failed++
}

// record copies a Progress answer into the status as core does.
func (o *Operation) record(p velero.OperationProgress) {
	o.Status.NCompleted = p.NCompleted
	o.Status.NTotal = p.NTotal
	o.Status.OperationUnits = p.OperationUnits
	o.Status.Description = p.Description
	if !p.Started.IsZero() {
		started := metav1.NewTime(p.Started)
		o.Status.Started = &started
	}
	if !p.Updated.IsZero() {
		updated := metav1.NewTime(p.Updated)
		o.Status.Updated = &updated
	}
}

// reconcile is reconcile n of one backup or restore, as the operations controller makes it:
// a fresh plugin manager, Progress for each open operation one after another (timed), then
// CleanupClients.
func (c *Core) reconcile(cl operationClient, ops []*Operation, timeout time.Duration, n int) tally {
	if c.Hooks.BeforeReconcile != nil {
		c.Hooks.BeforeReconcile(n)
	}
	m := c.Plugins()
	defer m.CleanupClients()
	start := time.Now()
	t := c.progressAll(m, cl, ops, timeout, n)
	t.took = time.Since(start)
	return t
}
