package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// observedOnAWS is the time per volume a plugin that waits in CreateSnapshot for the snapshot
// and then for its copy was observed to take on AWS, whatever the delta size (the README's Why).
const observedOnAWS = 2*time.Minute + 37*time.Second

// summary is what the demo found and reports at the end.
type summary struct {
	o       options
	logPath string
	// found holds what the rig's checks found wrong: the backup's snapshots, copies and vault
	// copies, what the deletion kept or left.
	found       *rig.Result
	backup      *harness.BackupResult
	restore     *harness.RestoreResult
	deletion    time.Duration
	deleteErr   error
	afterBackup ec2sim.Stats
	final       ec2sim.Stats
	peakMemory  int64
	// checkStatus is check's exit status; checkErr why it could not run.
	checkStatus int
	checkErr    error
}

func (s summary) ok() bool {
	return s.backup.Succeeded() && s.restore.Succeeded() && len(s.restore.Volumes) == s.o.volumes &&
		s.deleteErr == nil && s.found.OK() && s.checkErr == nil && s.checkStatus == check.ExitOK
}

// blockingBound is the least time the blocking approach's item phase takes for the options'
// volumes: for each volume, one after another, CreateSnapshot waits for the snapshot and then
// for its copy, each at least the simulator's shortest.
func blockingBound(o options) time.Duration {
	return time.Duration(o.volumes) * (o.snapshots.Min.Duration + o.copies.Min.Duration)
}

// printItemPhase compares the backup's item phase with the blocking approach's.
func (s summary) printItemPhase(w io.Writer) {
	b, n := s.backup, s.o.volumes
	fmt.Fprintf(w, "Item phase (Velero backs up the items and calls CreateSnapshot for each PV; other backups wait for it):\n")
	fmt.Fprintf(w, "  this plugin:        %-9s CreateSnapshot returns at once; the copies went on while the backup waited %s for its operations\n",
		round(b.ItemPhase), round(b.Total-b.ItemPhase))
	fmt.Fprintf(w, "  blocking approach:  at least %s, computed: each CreateSnapshot waits for its snapshot, then for its copy, one PV after another:\n"+
		"                      %d PVs × (%s + %s), the shortest snapshot and copy this simulator makes (on AWS, at the %s per volume observed: %s)\n\n",
		blockingBound(s.o), n, s.o.snapshots.Min, s.o.copies.Min, observedOnAWS, time.Duration(n)*observedOnAWS)
}

func (s summary) print(w io.Writer) {
	b, r := s.backup, s.restore
	fmt.Fprintln(w, "Summary")
	fmt.Fprintf(w, "  Backup %s: %s in %s (item phase %s, waiting for plugin operations %s, %d reconciles)\n",
		b.Backup.Name, b.Backup.Status.Phase, round(b.Total), round(b.ItemPhase), round(b.Total-b.ItemPhase), b.Reconciles)
	fmt.Fprintf(w, "    volume snapshots %d of %d, item operations %d of %d completed, %d failed\n",
		b.Backup.Status.VolumeSnapshotsCompleted, b.Backup.Status.VolumeSnapshotsAttempted,
		b.Backup.Status.BackupItemOperationsCompleted, b.Backup.Status.BackupItemOperationsAttempted, b.Backup.Status.BackupItemOperationsFailed)
	for _, e := range append(b.ItemErrors, b.OperationErrors...) {
		fmt.Fprintf(w, "    error: %s\n", e)
	}
	fmt.Fprintf(w, "    copies made in %s: %d; vault copies in account %s in %s: %d, locked\n", rig.CopyRegion, sum(s.afterBackup.Accounts[rig.SourceAccount].Copies[rig.CopyRegion]),
		rig.VaultAccount, rig.CopyRegion, sum(s.afterBackup.Accounts[rig.VaultAccount].Copies[rig.CopyRegion]))
	fmt.Fprintf(w, "  Restore %s in %s: %s in %s, %d volumes, item operations %d of %d completed, %d failed\n",
		r.Restore.Name, rig.CopyRegion, r.Restore.Status.Phase, round(r.Total), len(r.Volumes),
		r.Restore.Status.RestoreItemOperationsCompleted, r.Restore.Status.RestoreItemOperationsAttempted, r.Restore.Status.RestoreItemOperationsFailed)
	for _, e := range append(r.ItemErrors, r.OperationErrors...) {
		fmt.Fprintf(w, "    error: %s\n", e)
	}
	status := "done"
	if s.deleteErr != nil {
		status = "error: " + s.deleteErr.Error()
	}
	fmt.Fprintf(w, "  Deletion of %s: %s in %s; the locked vault copies kept, as their lock demands\n", b.Backup.Name, status, round(s.deletion))
	calls := rig.CallsByAction(s.final)
	fmt.Fprintf(w, "  EC2 calls: %d in all, %d throttled (%s)\n", rig.TotalCalls(s.final), rig.CallsByOutcome(s.final)[rig.Throttled], rig.Throttled)
	for _, action := range slices.Sorted(maps.Keys(calls)) {
		fmt.Fprintf(w, "    %-26s %6d\n", action, calls[action])
	}
	if s.peakMemory > 0 {
		fmt.Fprintf(w, "  Peak plugin process memory (VmHWM): %.1f MiB\n", float64(s.peakMemory)/(1<<20))
	}
	fmt.Fprintf(w, "  Left after the deletion: %d snapshots in either region and account; the %d restored volumes in %s are kept: they are the restored cluster's, not the backup's\n",
		s.found.Leaked, len(r.Volumes), rig.CopyRegion)
	switch {
	case s.checkErr != nil:
		fmt.Fprintf(w, "  check: could not run: %v\n", s.checkErr)
	case s.checkStatus != check.ExitOK:
		fmt.Fprintf(w, "  check: exit status %d: a problem with the demo's setup (the ✗ lines above say which)\n", s.checkStatus)
	default:
		fmt.Fprintf(w, "  check: no problem with location %s (exit status %d)\n", locationName, s.checkStatus)
	}
	for _, p := range s.found.Problems {
		fmt.Fprintf(w, "  problem: %s\n", p)
	}
	if s.found.Duplicates > 0 {
		fmt.Fprintf(w, "  problem: %d duplicate snapshots or copies\n", s.found.Duplicates)
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

// configLine lists a location's config sorted by key: "copyToRegion=us-west-2, region=…".
func configLine(cfg map[string]string) string {
	parts := make([]string, 0, len(cfg))
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		parts = append(parts, k+"="+cfg[k])
	}
	return strings.Join(parts, ", ")
}
