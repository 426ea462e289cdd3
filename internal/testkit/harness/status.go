package harness

import (
	"slices"
	"time"

	"github.com/vmware-tanzu/velero/pkg/itemoperation"
)

// Status is a point-in-time view of a backup or restore, what `velero backup describe
// --details` shows: phase, item operations completed and failed of total, and per operation
// its progress and description.
type Status struct {
	// Kind is "Backup" or "Restore".
	Kind, Name, Phase string
	// Elapsed is the time since the backup or restore started.
	Elapsed    time.Duration
	Reconciles int
	Operations []*Operation
	// Snapshots are a backup's native snapshots as core has recorded them so far (the volume
	// snapshots `velero backup describe --details` lists, and a deletion deletes); none for a
	// restore.
	Snapshots []VolumeSnapshot
}

// Count returns the number of operations completed and failed.
func (s Status) Count() (completed, failed int) {
	for _, op := range s.Operations {
		switch op.Status.Phase {
		case itemoperation.OperationPhaseCompleted:
			completed++
		case itemoperation.OperationPhaseFailed:
			failed++
		}
	}
	return completed, failed
}

func backupStatus(r *BackupResult, start time.Time) Status {
	return Status{Kind: "Backup", Name: r.Backup.Name, Phase: string(r.Backup.Status.Phase),
		Elapsed: time.Since(start), Reconciles: r.Reconciles, Operations: r.Operations, Snapshots: slices.Clone(r.Snapshots)}
}

func restoreStatus(r *RestoreResult, start time.Time) Status {
	return Status{Kind: "Restore", Name: r.Restore.Name, Phase: string(r.Restore.Status.Phase),
		Elapsed: time.Since(start), Reconciles: r.Reconciles, Operations: r.Operations}
}

// Observer receives the state of a backup or restore after every step of core.
type Observer interface {
	Observe(Status)
}
