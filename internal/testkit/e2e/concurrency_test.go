//go:build e2e

package e2e

import (
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
)

// Two backups created at once, each of its own namespace and account (Velero runs backups
// whose namespaces overlap one after another): account A's volumes through aws-async and
// account B's through aws-async-b. With --concurrent-backups 2 (v1.18 on) both are in their
// item phase at the same time, each in plugin processes of its own, while 4 ItemBlock workers
// interleave Execute and CreateSnapshot of different PVs within each. Both must complete with
// exactly one source and one completed copy per volume, in their own account only; then both
// are deleted and nothing of them is left.

// concurrentBackupPoll is how often the two backups' phases are read: well below the length of
// an item phase (seconds), so that an overlap is seen.
const concurrentBackupPoll = 20 * time.Millisecond

// concurrentBackupTimeout bounds the wait for both backups to end.
const concurrentBackupTimeout = 5 * time.Minute

// pastItemPhase are the phases a backup moves to once its item phase has ended.
var pastItemPhase = map[velerov1.BackupPhase]bool{
	velerov1.BackupPhaseWaitingForPluginOperations:                true,
	velerov1.BackupPhaseWaitingForPluginOperationsPartiallyFailed: true,
	velerov1.BackupPhaseFinalizing:                                true,
	velerov1.BackupPhaseFinalizingPartiallyFailed:                 true,
	velerov1.BackupPhaseCompleted:                                 true,
	velerov1.BackupPhasePartiallyFailed:                           true,
	velerov1.BackupPhaseFailed:                                    true,
	velerov1.BackupPhaseFailedValidation:                          true,
}

// itemPhase is when a backup was first seen InProgress, and first seen past it.
type itemPhase struct{ start, end time.Time }

func (p itemPhase) String() string {
	return fmt.Sprintf("InProgress from %s to %s", p.start.UTC().Format("15:04:05.000"), p.end.UTC().Format("15:04:05.000"))
}

// overlaps reports whether two item phases were seen running at once.
func (p itemPhase) overlaps(q itemPhase) bool {
	return !p.start.IsZero() && !q.start.IsZero() && p.start.Before(q.end) && q.start.Before(p.end)
}

func (r *rig) concurrentBackupsRun(sim simClient) {
	t := r.t
	specs := []backupSpec{
		{name: "e2e-conc-a", ns: appNS, vsl: vslName, vols: volumes, acct: r.acctA()},
		{name: "e2e-conc-b", ns: appNSB, vsl: vslNameB, vols: volumesB, acct: r.acctB()},
	}
	for _, bs := range specs {
		r.step("velero backup create %s --include-namespaces %s --volume-snapshot-locations %s (volumes in account %s), at once with the other",
			bs.name, bs.ns, bs.vsl, bs.acct.Name)
		out := r.mustVelero("backup", "create", bs.name, "--include-namespaces", bs.ns, "--snapshot-volumes",
			"--volume-snapshot-locations", bs.vsl, "--storage-location", "default")
		r.saw("%s", firstLine(out))
	}
	phases := make([]itemPhase, len(specs))
	ended := make([]*velerov1.Backup, len(specs))
	deadline := time.Now().Add(concurrentBackupTimeout)
	for done := 0; done < len(specs); {
		if time.Now().After(deadline) {
			t.Fatalf("backups %s and %s not ended after %s", specs[0].name, specs[1].name, concurrentBackupTimeout)
		}
		now := time.Now()
		done = 0
		for i, bs := range specs {
			if ended[i] != nil {
				done++
				continue
			}
			b, err := r.getBackup(bs.name)
			if err != nil {
				continue
			}
			switch ph := b.Status.Phase; {
			case ph == velerov1.BackupPhaseInProgress:
				if phases[i].start.IsZero() {
					phases[i].start = now
				}
			case pastItemPhase[ph] && phases[i].end.IsZero():
				phases[i].end = now
			}
			switch b.Status.Phase {
			case velerov1.BackupPhaseCompleted, velerov1.BackupPhasePartiallyFailed, velerov1.BackupPhaseFailed, velerov1.BackupPhaseFailedValidation:
				ended[i] = b
			}
		}
		time.Sleep(concurrentBackupPoll)
	}
	for i, bs := range specs {
		r.saw("backup %s: %s; ended %s", bs.name, phases[i], ended[i].Status.Phase)
	}
	overlap := phases[0].overlaps(phases[1])
	switch {
	case veleroRunsConcurrentBackups() && !overlap:
		t.Errorf("backups %s (%s) and %s (%s) were never in their item phase at once, with --concurrent-backups %d",
			specs[0].name, phases[0], specs[1].name, phases[1], concurrentBackups)
	case veleroRunsConcurrentBackups():
		r.saw("both backups were in their item phase at once (--concurrent-backups %d, --item-block-worker-count %d)", concurrentBackups, itemBlockWorkers)
	default:
		r.saw("Velero %s has no --concurrent-backups: the backups ran one after another (overlap seen: %v), each with %d ItemBlock workers",
			veleroVersion(), overlap, itemBlockWorkers)
	}
	for i, bs := range specs {
		r.checkConcurrentBackup(sim, bs, ended[i])
	}
	r.deleteBackups(sim, specs[0].name, specs[1].name)
}

// checkConcurrentBackup checks one of the two backups: Completed, every operation Completed in
// describe, and exactly one completed source and copy per volume, in its own account only.
func (r *rig) checkConcurrentBackup(sim simClient, bs backupSpec, b *velerov1.Backup) {
	t := r.t
	d := r.mustVelero("backup", "describe", bs.name, "--details", "--colorized=false")
	r.saveDescribe(bs.name+"-final", d, true)
	if b.Status.Phase != velerov1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != len(bs.vols) {
		logs, _ := r.velero("backup", "logs", bs.name)
		r.saveLog(bs.name+"-backup-logs", logs)
		t.Errorf("backup %s ended %s with %d of %d operations completed (failed: %v)",
			bs.name, b.Status.Phase, b.Status.BackupItemOperationsCompleted, len(bs.vols), failedOpErrors(d))
	}
	r.checkDescribeOps(d, true, len(bs.vols))
	src, copies := backupSnapshots(sim, bs.acct.ID, bs.name)
	r.saw("simulator, account %s: %d source snapshots, %d copies for backup %s", bs.acct.Name, len(src), len(copies), bs.name)
	perVol := map[string]int{}
	for _, s := range src {
		perVol[s.VolumeID]++
	}
	for _, v := range bs.vols {
		if perVol[v.ID] != 1 {
			t.Errorf("volume %s has %d source snapshots for backup %s, want exactly 1", v.ID, perVol[v.ID], bs.name)
		}
	}
	completed := 0
	for _, c := range copies {
		if c.State == "completed" {
			completed++
		}
	}
	if len(copies) != len(bs.vols) || completed != len(copies) {
		t.Errorf("backup %s has %d copies (%d completed), want exactly %d, all completed: %v", bs.name, len(copies), completed, len(bs.vols), copies)
	}
	for _, other := range r.accounts {
		if other.ID == bs.acct.ID {
			continue
		}
		if osrc, ocopies := backupSnapshots(sim, other.ID, bs.name); len(osrc)+len(ocopies) > 0 {
			t.Errorf("snapshots of backup %s (account %s's volumes) in account %s: %v %v", bs.name, bs.acct.Name, other.Name, osrc, ocopies)
		}
	}
}
