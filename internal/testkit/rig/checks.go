package rig

import (
	"fmt"
	"strings"
	"time"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
)

// Check records a problem unless the backup has one snapshot and one operation per PV, the
// operations of the PVs in wantFailed (PV name -> text its error must contain) failed and no
// other, and the backup is Completed, or PartiallyFailed when some were meant to fail.
func (r *Rig) Check(res *Result, b *harness.BackupResult, wantFailed map[string]string) {
	CheckBackup(res, b, len(r.PVs), wantFailed)
}

// CheckBackup is Check for a backup of pvs PVs.
func CheckBackup(res *Result, b *harness.BackupResult, pvs int, wantFailed map[string]string) {
	st := b.Backup.Status
	want := velerov1api.BackupPhaseCompleted
	if len(wantFailed) > 0 {
		want = velerov1api.BackupPhasePartiallyFailed
	}
	if st.Phase != want {
		res.Problemf("backup %s is %s, want %s (item errors %v, operation errors %v)", b.Backup.Name, st.Phase, want, b.ItemErrors, b.OperationErrors)
	}
	if n := pvs; st.VolumeSnapshotsAttempted != n || st.VolumeSnapshotsCompleted != n || len(b.Operations) != n {
		res.Problemf("backup %s: %d of %d snapshots completed and %d operations for %d PVs", b.Backup.Name,
			st.VolumeSnapshotsCompleted, st.VolumeSnapshotsAttempted, len(b.Operations), n)
	}
	if n, failed := pvs, len(wantFailed); st.BackupItemOperationsAttempted != n ||
		st.BackupItemOperationsCompleted != n-failed || st.BackupItemOperationsFailed != failed {
		res.Problemf("backup %s: item operations %d of %d completed, %d failed, want %d of %d and %d failed", b.Backup.Name,
			st.BackupItemOperationsCompleted, st.BackupItemOperationsAttempted, st.BackupItemOperationsFailed, n-failed, n, failed)
	}
	for _, op := range b.Operations {
		text, meant := wantFailed[op.Resource.Name]
		failed := op.Status.Phase == itemoperation.OperationPhaseFailed
		switch {
		case failed && !meant:
			res.Problemf("backup %s: %s failed: %s", b.Backup.Name, op.Resource.Name, op.Status.Error)
		case meant && (!failed || !strings.Contains(op.Status.Error, text)):
			res.Problemf("backup %s: %s is %s with error %q, want failed with %q", b.Backup.Name, op.Resource.Name, op.Status.Phase, op.Status.Error, text)
		}
	}
}

// CheckSnapshots records a problem unless every snapshot the backup recorded is the one
// completed source snapshot of its PV in SourceRegion and, when copyTo is set, has exactly one
// completed copy there, tagged with its source; without copyTo, CopyRegion must hold none.
func (r *Rig) CheckSnapshots(res *Result, b *harness.BackupResult, copyTo string) {
	backup := b.Backup.Name
	sources := r.PerPV(SourceRegion, backup, false)
	copies := r.PerPV(copyTo, backup, true)
	for _, snap := range b.Snapshots {
		src := sources[snap.PV]
		if len(src) != 1 || src[0].ID != snap.SnapshotID || src[0].State != "completed" {
			res.Problemf("%s: source snapshots %+v, want one completed %s", snap.PV, src, snap.SnapshotID)
			continue
		}
		if copyTo == "" {
			continue
		}
		cp := copies[snap.PV]
		if len(cp) != 1 || cp[0].State != "completed" || cp[0].SourceSnapshotID != snap.SnapshotID ||
			cp[0].Tags[model.TagSourceSnapshotID] != snap.SnapshotID || cp[0].Tags[model.TagSourceRegion] != SourceRegion {
			res.Problemf("%s: copies in %s %+v, want one completed copy of %s", snap.PV, copyTo, cp, snap.SnapshotID)
		}
	}
	if n := len(r.Sim.Snapshots(CopyRegion)); copyTo == "" && n != 0 {
		res.Problemf("%d snapshots in %s, want none without copyToRegion", n, CopyRegion)
	}
}

// PerPV returns a backup's snapshots in region by PV: its copies, or its sources.
func (r *Rig) PerPV(region, backup string, copies bool) map[string][]ec2sim.Snapshot {
	out := map[string][]ec2sim.Snapshot{}
	for _, s := range r.Sim.Snapshots(region) {
		if s.Tags[model.TagBackup] != backup || (s.SourceSnapshotID != "") != copies {
			continue
		}
		out[s.Tags[model.TagPV]] = append(out[s.Tags[model.TagPV]], s)
	}
	return out
}

// Usable returns "" when the PV's snapshot in backup, and its copy in copyTo when set, are
// completed in the simulator, or else what is not.
func (r *Rig) Usable(backup, pvName, copyTo string) string {
	src, cp := r.SourceOf(backup, pvName)
	switch {
	case src.ID == "" || src.State != "completed":
		return fmt.Sprintf("%s: operation completed, source snapshot %q is %q", pvName, src.ID, src.State)
	case copyTo == "":
		return ""
	case cp.ID == "":
		return fmt.Sprintf("%s: operation completed, no copy of %s in %s", pvName, src.ID, copyTo)
	case cp.State != "completed":
		return fmt.Sprintf("%s: operation completed, copy %s of %s is %s", pvName, cp.ID, src.ID, cp.State)
	}
	return ""
}

// SourceOf returns the source snapshot of pvName in backup and its copy in CopyRegion (zero
// values when absent).
func (r *Rig) SourceOf(backup, pvName string) (source, copy ec2sim.Snapshot) {
	for _, s := range r.Sim.Snapshots(SourceRegion) {
		if s.SourceSnapshotID == "" && s.Tags[model.TagBackup] == backup && s.Tags[model.TagPV] == pvName {
			source = s
		}
	}
	for _, c := range r.Sim.Snapshots(CopyRegion) {
		if source.ID != "" && c.SourceSnapshotID == source.ID {
			copy = c
		}
	}
	return source, copy
}

// CountLeaked waits up to settle for snapshots whose deletion is pending to go (EC2 removes a
// deleted pending snapshot when it completes), then adds to res.Leaked every snapshot and copy
// left in either region, of the source account or the vault account, and records each as a
// problem.
func (r *Rig) CountLeaked(res *Result, settle time.Duration) {
	deadline := time.Now().Add(settle)
	for {
		pending := false
		for _, region := range []string{SourceRegion, CopyRegion} {
			for _, s := range r.Sim.Snapshots(region) {
				pending = pending || s.DeletePending
			}
		}
		if !pending || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, region := range []string{SourceRegion, CopyRegion} {
		for _, s := range append(r.Sim.Snapshots(region), r.Sim.SnapshotsIn(VaultAccount, region)...) {
			res.Leaked++
			if len(res.Problems) < 20 {
				res.Problemf("left after deletion: %s in %s (%s, %s, backup %q, pv %q, delete pending %v)", s.ID, region, s.VolumeID, s.State,
					s.Tags[model.TagBackup], s.Tags[model.TagPV], s.DeletePending)
			}
		}
	}
}

// Duplicates counts, for every backup of the name (each Backup by its UID, so a reused name is
// not a duplicate), the source snapshots beyond one per volume and the copies beyond one per
// source, in every region of the simulator's scenarios.
func Duplicates(sim *ec2sim.Simulator, backup string) int {
	perVolume, perSource := map[string]int{}, map[string]int{}
	for _, region := range []string{SourceRegion, CopyRegion} {
		for _, s := range sim.Snapshots(region) {
			if s.Tags[model.TagBackup] != backup {
				continue
			}
			if s.SourceSnapshotID != "" {
				perSource[s.SourceSnapshotID]++
			} else {
				perVolume[region+"/"+s.Tags[model.TagBackupUID]+"/"+s.VolumeID]++
			}
		}
	}
	n := 0
	for _, m := range []map[string]int{perVolume, perSource} {
		for _, c := range m {
			n += max(0, c-1)
		}
	}
	return n
}
