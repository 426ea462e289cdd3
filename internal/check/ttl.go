package check

import (
	"fmt"
	"slices"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// day is a lock's unit.
const day = 24 * time.Hour

// locationSchedules are the Schedules whose backups may use the location: those naming it, and those
// naming no location of the provider (Velero then picks its default, perhaps this one).
func locationSchedules(lc *locationCheck) []velerov1.Schedule {
	var out []velerov1.Schedule
	for _, s := range lc.cluster.schedules {
		if named := s.Spec.Template.VolumeSnapshotLocations; len(named) == 0 || slices.Contains(named, lc.vsl.Name) {
			out = append(out, s)
		}
	}
	return out
}

// lockAgainstTTL names every backup TTL that expires before the vault lock: deleting such a
// backup keeps its locked vault copies.
func lockAgainstTTL(lc *locationCheck) {
	const check = "backup TTL against the vault lock"
	lock := time.Duration(lc.cfg.Vault.Lock.Days) * day
	kept := fmt.Sprintf("shorter than the %d-day vault lock: deleting the expired backups keeps their locked vault copies (tagged %s) until the lock ends, and their owner deletes them then",
		lc.cfg.Vault.Lock.Days, model.TagBackupDeletedAt)
	s := lc.cluster.settings
	found := false
	if s.defaultTTL < lock {
		found = true
		who := "--" + flagDefaultBackupTTL
		if !s.known() {
			who += " (Velero's default; " + s.problem.String() + ")"
		}
		lc.add(fail(check, fmt.Sprintf("%s %s is %s", who, human(s.defaultTTL), kept),
			fmt.Sprintf("--%s=%s in the Velero server's arguments, or a shorter %s", flagDefaultBackupTTL, human(lock), model.ConfigVaultLockDurationDays)))
	}
	for _, sch := range locationSchedules(lc) {
		if ttl := sch.Spec.Template.TTL.Duration; ttl > 0 && ttl < lock {
			found = true
			lc.add(fail(check, fmt.Sprintf("Schedule %s/%s's TTL %s is %s", lc.Namespace, sch.Name, human(ttl), kept),
				fmt.Sprintf("velero schedule create %s --ttl %s (or spec.template.ttl), or a shorter %s", sch.Name, human(lock), model.ConfigVaultLockDurationDays)))
		}
	}
	var short []string
	for _, b := range lc.cluster.backups {
		if ttl := b.Spec.TTL.Duration; ttl > 0 && ttl < lock && slices.Contains(b.Spec.VolumeSnapshotLocations, lc.vsl.Name) {
			short = append(short, b.Name)
		}
	}
	if len(short) > 0 {
		found = true
		lc.add(fail(check, fmt.Sprintf("%s of the location (%s) with a TTL %s", plural(len(short), "Backup"), shortList(short), kept),
			fmt.Sprintf("unless that is meant: back up with --ttl %s or longer, or set a shorter %s", human(lock), model.ConfigVaultLockDurationDays)))
	}
	switch {
	case found:
	case lc.cluster.scheduleProblem != nil || lc.cluster.backupProblem != nil:
		lc.add(joinUnreadable(lc.cluster.scheduleProblem, lc.cluster.backupProblem).finding(check,
			fmt.Sprintf("--%s %s is not shorter than the %d-day lock", flagDefaultBackupTTL, human(s.defaultTTL), lc.cfg.Vault.Lock.Days)))
	default:
		lc.add(pass(check, fmt.Sprintf("--%s %s and the TTLs of the Schedules (%d) and Backups that may use the location are not shorter than the %d-day lock",
			flagDefaultBackupTTL, human(s.defaultTTL), len(locationSchedules(lc)), lc.cfg.Vault.Lock.Days)))
	}
}
