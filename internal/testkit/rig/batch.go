package rig

import (
	"context"
	"fmt"
	"time"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1api "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
)

// Schedules makes n backups, named prefix-0, prefix-1, …, of equal shares of pvs (the first
// ones get one more when they do not divide) through loc, created every `every` from the start:
// the backups of schedules firing one after another, one per namespace or team.
func Schedules(prefix string, n int, every time.Duration, pvs []*corev1api.PersistentVolume, loc *velerov1api.VolumeSnapshotLocation) []harness.ScheduledBackup {
	out := make([]harness.ScheduledBackup, n)
	for i := range out {
		from, to := i*len(pvs)/n, (i+1)*len(pvs)/n
		out[i] = harness.ScheduledBackup{At: time.Duration(i) * every, BackupRequest: harness.BackupRequest{
			Name: fmt.Sprintf("%s-%d", prefix, i), Location: loc, PVs: pvs[from:to], Labels: map[string]string{"app": prefix},
		}}
	}
	return out
}

// Backups runs scheduled backups at once through the rig's core (harness.Core.Backups) and
// records each in res as BackupPVs does; every operation is checked the moment core sees it
// complete.
func (r *Rig) Backups(ctx context.Context, res *Result, scheduled []harness.ScheduledBackup) (*harness.Batch, error) {
	checks := earlyChecks{}
	for _, s := range scheduled {
		checks[s.Name] = r.earlyCheck(res, s.BackupRequest)
	}
	r.Core.Observer = checks
	defer func() { r.Core.Observer = nil }()
	b, err := r.Core.Backups(ctx, scheduled)
	if err != nil {
		return b, fmt.Errorf("backups: %w", err)
	}
	for _, br := range b.Backups {
		r.record(res, br)
	}
	return b, nil
}

// earlyChecks hands each backup's status to the check of that backup.
type earlyChecks map[string]*earlyCheck

// Observe checks the operations of the backup s is about.
func (c earlyChecks) Observe(s harness.Status) {
	if check, ok := c[s.Name]; ok && s.Kind == "Backup" {
		check.Observe(s)
	}
}
