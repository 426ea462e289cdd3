package explore

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// The audit's verdicts as promises: what it says of the backup holds in EC2 and in the cluster.
// A backup is DR-ready only when every copy it asked for (its sources' tags) is completed in
// the right account and region, and the audit read that place; a recovery point is only ever a
// Completed backup, the one Velero's `restore --from-schedule` would take.

// catAuditVerdict is the promise the audit's verdicts break.
const catAuditVerdict category = "audit called a backup DR-ready while a copy it asked for was not read completed, named a backup that is not Completed as a recovery point, or listed as an orphan a snapshot the backup's record names"

// checkVerdicts checks the audit's report rep, whose requests begin at the since-th.
func (w *world) checkVerdicts(rep audit.Report, since int) {
	read := map[string]bool{} // account/region: the audit's last listing there was answered
	for _, q := range w.requests[since:] {
		if q.role == auditRole && q.action == "DescribeSnapshots" {
			read[q.signer+"/"+q.region] = q.answered
		}
	}
	phase := velerov1.BackupPhase("")
	if b := w.backupObject(); b != nil {
		phase = b.Status.Phase
	}
	for _, rp := range rep.RecoveryPoints {
		if rp.Backup == backupName && phase != velerov1.BackupPhaseCompleted {
			w.violate(catAuditVerdict, "the recovery point of %s is backup %s, which is %q", rp.Place, rp.Backup, phase)
		}
	}
	snaps := w.everything()
	for _, g := range rep.Orphans {
		for _, o := range g.Orphans {
			if named := w.namedByRecord(snaps[o.ID]); named != "" && snaps[o.ID].ID != "" {
				w.violate(catAuditVerdict, "%s listed as an orphan: %s", o.ID, named)
			}
		}
	}
	for _, b := range rep.Backups {
		if b.Name != backupName || !b.DRReady {
			continue
		}
		for _, op := range w.ops {
			src, ok := snaps[op.snapshotID]
			if op.snapshotID == "" || op.upstream || !ok {
				continue
			}
			for _, want := range askedCopies(src.Tags) {
				switch {
				case w.copyIn(snaps, op.snapshotID, want.account, want.region) == nil:
					w.violate(catAuditVerdict, "%s called DR-ready with no completed copy of %s in %s of %s", backupName, op.snapshotID, want.region, want.account)
				case !read[want.account+"/"+want.region]:
					w.violate(catAuditVerdict, "%s called DR-ready though the audit did not read %s of %s, where the copy of %s is", backupName, want.region, want.account, op.snapshotID)
				default:
					continue
				}
				return
			}
		}
	}
}

// askedCopy is a place a source asked for a copy in.
type askedCopy struct{ account, region string }

// askedCopies are the copies a source's tags ask for: in the copy region of its own account,
// and in the vault account's region.
func askedCopies(tags map[string]string) []askedCopy {
	var out []askedCopy
	if r := tags[model.TagCopyToRegion]; r != "" {
		out = append(out, askedCopy{account: sourceAccount, region: r})
	}
	if a := tags[model.TagVaultAccount]; a != "" {
		out = append(out, askedCopy{account: a, region: tags[model.TagVaultRegion]})
	}
	return out
}
