package harness

import (
	"errors"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
)

// scripted answers Progress from a script and records Cancel calls.
type scripted struct {
	answers  []velero.OperationProgress
	err      error
	calls    int
	canceled bool
}

func (s *scripted) progress(PluginManager, *Operation) (velero.OperationProgress, error) {
	if s.err != nil {
		return velero.OperationProgress{}, s.err
	}
	p := s.answers[min(s.calls, len(s.answers)-1)]
	s.calls++
	return p, nil
}

func (s *scripted) cancel(PluginManager, *Operation) error {
	s.canceled = true
	return nil
}

func TestProgressAllAppliesCoreRules(t *testing.T) {
	started := time.Now()
	tests := []struct {
		name       string
		client     scripted
		timeout    time.Duration
		wantPhase  itemoperation.OperationPhase
		wantError  string
		wantOpen   bool
		wantCancel bool
	}{
		{"not started stays New", scripted{answers: []velero.OperationProgress{{NTotal: 2}}}, time.Hour,
			itemoperation.OperationPhaseNew, "", true, false},
		{"started moves to InProgress", scripted{answers: []velero.OperationProgress{{Started: started, NCompleted: 1, NTotal: 2}}}, time.Hour,
			itemoperation.OperationPhaseInProgress, "", true, false},
		{"completed", scripted{answers: []velero.OperationProgress{{Started: started, Completed: true, NCompleted: 2, NTotal: 2}}}, time.Hour,
			itemoperation.OperationPhaseCompleted, "", false, false},
		{"completed with Err fails", scripted{answers: []velero.OperationProgress{{Started: started, Completed: true, Err: "snapshot error"}}}, time.Hour,
			itemoperation.OperationPhaseFailed, "snapshot error", false, false},
		{"returned error fails", scripted{err: errors.New("boom")}, time.Hour,
			itemoperation.OperationPhaseFailed, "boom", false, false},
		{"past the timeout is canceled", scripted{answers: []velero.OperationProgress{{Started: started}}}, -time.Second,
			itemoperation.OperationPhaseFailed, "Asynchronous action timed out", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op := newOperation("action", "op-1", velero.ResourceIdentifier{GroupResource: pvResource, Name: "pv"})
			c := &Core{}
			tally := c.progressAll(nil, &tc.client, []*Operation{op}, tc.timeout, 1)
			if op.Status.Phase != tc.wantPhase || op.Status.Error != tc.wantError {
				t.Errorf("phase %s error %q, want %s %q", op.Status.Phase, op.Status.Error, tc.wantPhase, tc.wantError)
			}
			if tally.inProgress != tc.wantOpen || tc.client.canceled != tc.wantCancel {
				t.Errorf("in progress %v canceled %v, want %v %v", tally.inProgress, tc.client.canceled, tc.wantOpen, tc.wantCancel)
			}
		})
	}
}

func TestProgressAllSkipsFinishedOperations(t *testing.T) {
	done := newOperation("a", "1", velero.ResourceIdentifier{})
	done.Status.Phase = itemoperation.OperationPhaseCompleted
	failed := newOperation("a", "2", velero.ResourceIdentifier{})
	failed.Status.Phase = itemoperation.OperationPhaseFailed
	open := newOperation("a", "3", velero.ResourceIdentifier{})
	cl := &scripted{answers: []velero.OperationProgress{{Started: time.Now()}}}
	var hooked []int
	c := &Core{Hooks: Hooks{BeforeProgress: func(_, i int) { hooked = append(hooked, i) }}}
	tally := c.progressAll(nil, cl, []*Operation{done, failed, open}, time.Hour, 1)
	if cl.calls != 1 || tally.completed != 1 || tally.failed != 1 || !tally.inProgress {
		t.Errorf("calls %d, tally %+v", cl.calls, tally)
	}
	if len(hooked) != 1 || hooked[0] != 0 {
		t.Errorf("BeforeProgress saw open operations %v, want [0]", hooked)
	}
	if len(open.History) != 1 {
		t.Errorf("history %v", open.History)
	}
}

func TestExpireCancelsOnlyTheOperationItNames(t *testing.T) {
	ops := []*Operation{
		newOperation("a", "1", velero.ResourceIdentifier{Name: "pv-0"}),
		newOperation("a", "2", velero.ResourceIdentifier{Name: "pv-1"}),
	}
	cl := &scripted{answers: []velero.OperationProgress{{Started: time.Now()}}}
	var asked []int
	c := &Core{Hooks: Hooks{Expire: func(n int, op *Operation) bool {
		asked = append(asked, n)
		return op.Resource.Name == "pv-1"
	}}}
	tally := c.progressAll(nil, cl, ops, time.Hour, 3)
	if ops[0].Status.Phase != itemoperation.OperationPhaseInProgress || ops[1].Status.Phase != itemoperation.OperationPhaseFailed ||
		ops[1].Status.Error != "Asynchronous action timed out" {
		t.Errorf("phases %s, %s %q; want InProgress, Failed on the timeout", ops[0].Status.Phase, ops[1].Status.Phase, ops[1].Status.Error)
	}
	if !cl.canceled || tally.failed != 1 || !tally.inProgress {
		t.Errorf("canceled %v, tally %+v", cl.canceled, tally)
	}
	if len(asked) != 2 || asked[0] != 3 {
		t.Errorf("Expire asked in reconciles %v, want [3 3]", asked)
	}
	// Once failed, the operation is polled no more.
	before := cl.calls
	c.progressAll(nil, cl, ops, time.Hour, 4)
	if cl.calls != before+1 {
		t.Errorf("%d Progress calls in the next reconcile, want 1", cl.calls-before)
	}
}

func TestPVZoneFollowsCore(t *testing.T) {
	tests := []struct {
		name string
		vol  fixture.Volume
	}{
		{"in-tree from labels", fixture.Volume{PV: "a", VolumeID: "vol-1", Zone: "us-east-1b"}},
		{"CSI from node affinity", fixture.Volume{PV: "b", VolumeID: "vol-2", Zone: "us-east-1c", CSI: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pvZone(tc.vol.PersistentVolume()); got != tc.vol.Zone {
				t.Errorf("zone %q, want %q", got, tc.vol.Zone)
			}
		})
	}
}
