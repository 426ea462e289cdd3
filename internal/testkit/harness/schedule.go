package harness

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// ScheduledBackup is a backup and when it is created, counted from the start of Backups: the
// backups of schedules firing at t0, t0+30s, and so on.
type ScheduledBackup struct {
	// At is when the backup is created, after the start.
	At time.Duration
	BackupRequest
}

// Batch is the outcome of backups run at once.
type Batch struct {
	// Backups are the backups' results in the order they were asked for; nil for a backup
	// never started (the harness failed first).
	Backups []*BackupResult
	// Passes are the operations controller's passes, in order.
	Passes []Pass
	// Start is when the batch began; Makespan runs from there to the end of the last backup.
	Start    time.Time
	Makespan time.Duration
}

// Backups runs backups as Velero's controllers do. The backup controller (with its queue and
// --concurrent-backups 1) takes one backup at a time InProgress: each starts when it is created
// and the one before it has left InProgress, and runs its item phase. Any number then wait
// for plugin operations together, reconciled in turn by one operations controller every sync
// period. It returns an error only when the harness itself cannot go on, with the results so far.
func (c *Core) Backups(ctx context.Context, scheduled []ScheduledBackup) (*Batch, error) {
	if err := distinctNames(scheduled); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &Batch{Start: time.Now(), Backups: make([]*BackupResult, len(scheduled))}
	oc := c.newOperationsController(b.Start)
	items := make(chan error, 1)
	go func() {
		err := c.runBackupController(ctx, b, scheduled, oc)
		if err != nil {
			cancel() // the operations controller stops too
		}
		items <- err
	}()
	err := oc.run(ctx)
	if itemErr := <-items; itemErr != nil {
		err = itemErr
	}
	b.Passes = oc.recorded()
	b.Makespan = b.lastEnd().Sub(b.Start)
	return b, err
}

// runBackupController plays the backup controller: in the order the backups are created, it
// starts each when it is due, runs its item phase and hands it to the operations controller,
// which it closes at the end.
func (c *Core) runBackupController(ctx context.Context, b *Batch, scheduled []ScheduledBackup, oc *operationsController) error {
	defer oc.close()
	for _, i := range creationOrder(scheduled) {
		if err := sleepUntil(ctx, b.Start.Add(scheduled[i].At)); err != nil {
			return err
		}
		res, err := c.startBackup(scheduled[i].BackupRequest)
		if err != nil {
			return err
		}
		b.Backups[i] = res
		oc.waitForBackup(res)
	}
	return nil
}

// lastEnd is when the last of the batch's backups ended; Start when none did.
func (b *Batch) lastEnd() time.Time {
	end := b.Start
	for _, r := range b.Backups {
		if r != nil && r.Backup.Status.CompletionTimestamp != nil {
			end = latest(end, r.Backup.Status.CompletionTimestamp.Time)
		}
	}
	return end
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// creationOrder returns the indexes of scheduled by creation time, ties in the order given.
func creationOrder(scheduled []ScheduledBackup) []int {
	order := make([]int, len(scheduled))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(scheduled[i].At, scheduled[j].At) })
	return order
}

// distinctNames refuses two backups of one name: Kubernetes names a Backup uniquely.
func distinctNames(scheduled []ScheduledBackup) error {
	seen := map[string]bool{}
	for _, s := range scheduled {
		if seen[s.Name] {
			return fmt.Errorf("two backups named %q at once", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}
