package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// summary is what the demo reports at the end.
type summary struct {
	o           options
	backup      *harness.BackupResult
	restore     *harness.RestoreResult
	deletion    time.Duration
	deleteErr   error
	afterBackup ec2sim.Stats
	final       ec2sim.Stats
	left        map[string]int
	peakMemory  int64
	logPath     string
}

func (s summary) ok() bool {
	return s.backup.Succeeded() && s.restore.Succeeded() && s.deleteErr == nil && s.leftover() == 0
}

func (s summary) leftover() int {
	n := 0
	for _, c := range s.left {
		n += c
	}
	return n
}

func (s summary) print(w io.Writer) {
	b, r := s.backup, s.restore
	fmt.Fprintln(w, "Summary")
	fmt.Fprintf(w, "  Backup %s: %s in %s (items %s, waiting for plugin operations %s, %d reconciles)\n",
		b.Backup.Name, b.Backup.Status.Phase, round(b.Total), round(b.ItemPhase), round(b.Total-b.ItemPhase), b.Reconciles)
	fmt.Fprintf(w, "    volume snapshots %d of %d, item operations %d of %d completed, %d failed\n",
		b.Backup.Status.VolumeSnapshotsCompleted, b.Backup.Status.VolumeSnapshotsAttempted,
		b.Backup.Status.BackupItemOperationsCompleted, b.Backup.Status.BackupItemOperationsAttempted, b.Backup.Status.BackupItemOperationsFailed)
	for _, e := range append(b.ItemErrors, b.OperationErrors...) {
		fmt.Fprintf(w, "    error: %s\n", e)
	}
	fmt.Fprintf(w, "  Restore %s in %s: %s in %s, %d volumes, item operations %d of %d completed, %d failed\n",
		r.Restore.Name, s.o.copyRegion, r.Restore.Status.Phase, round(r.Total), len(r.Volumes),
		r.Restore.Status.RestoreItemOperationsCompleted, r.Restore.Status.RestoreItemOperationsAttempted, r.Restore.Status.RestoreItemOperationsFailed)
	for _, e := range append(r.ItemErrors, r.OperationErrors...) {
		fmt.Fprintf(w, "    error: %s\n", e)
	}
	status := "done"
	if s.deleteErr != nil {
		status = "error: " + s.deleteErr.Error()
	}
	fmt.Fprintf(w, "  Deletion of %s: %s in %s\n", b.Backup.Name, status, round(s.deletion))
	fmt.Fprintf(w, "  Copies made in %s: %d\n", s.o.copyRegion, sum(s.afterBackup.Copies[s.o.copyRegion]))
	calls := rig.CallsByAction(s.final)
	fmt.Fprintf(w, "  EC2 calls: %d in all, %d throttled (%s)\n", rig.TotalCalls(s.final), rig.CallsByOutcome(s.final)[rig.Throttled], rig.Throttled)
	for _, action := range slices.Sorted(maps.Keys(calls)) {
		fmt.Fprintf(w, "    %-24s %6d\n", action, calls[action])
	}
	if s.peakMemory > 0 {
		fmt.Fprintf(w, "  Peak plugin process memory (VmHWM): %.1f MiB\n", float64(s.peakMemory)/(1<<20))
	}
	fmt.Fprintf(w, "  Left in the simulator after deletion: %d snapshots (%s); %d restored volumes in %s, kept: they are the restored cluster's, not the backup's\n",
		s.leftover(), perRegion(s.left), len(r.Volumes), s.o.copyRegion)
	if s.logPath != "" {
		fmt.Fprintf(w, "  Velero and plugin log: %s\n", s.logPath)
	}
	if s.ok() {
		fmt.Fprintln(w, "OK")
	} else {
		fmt.Fprintln(w, "FAILED")
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

// perRegion lists counts by region, regions sorted: "0 in us-east-1, 0 in us-west-2".
func perRegion(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for _, region := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d in %s", counts[region], region))
	}
	return strings.Join(parts, ", ")
}
