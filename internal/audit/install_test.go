package audit

import (
	"context"
	"slices"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// A snapshot the plugin's VolumeSnapshotter takes carries the install's identity, so the audit
// of that install, and only of it, finds it once its backup is gone.
func TestSnapshotterTagsTheInstall(t *testing.T) {
	for _, tc := range []struct {
		name          string
		auditCluster  string
		orphan, other bool
	}{
		{name: "the install that took it calls it an orphan once its backup is gone", auditCluster: clusterAUID, orphan: true},
		{name: "another cluster's install never does", auditCluster: clusterBUID, other: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			cfg, err := ebs.ParseConfig(map[string]string{ebs.ConfigRegion: sourceRegion})
			if err != nil {
				t.Fatal(err)
			}
			s := ebs.NewSnapshotter(cfg, func(_ context.Context, region string) (ec2api.EC2, error) {
				return newEC2(w.srv.URL, region, sourceProfile), nil
			})
			s.SetInstall(installA)
			id, err := s.CreateSnapshot(w.ctx, w.vols[0], map[string]string{ebs.TagBackup: "gone", ebs.TagPV: "pv-1"})
			if err != nil {
				t.Fatal(err)
			}
			w.cluster(tc.auditCluster, map[string]string{ebs.ConfigRegion: sourceRegion, ebs.ConfigProfile: sourceProfile})
			w.clock.Step(pastGrace)
			rep := w.audit(false)
			if got := slices.Contains(orphanIDs(rep), id); got != tc.orphan || (rep.OtherInstalls == 1) != tc.other {
				t.Errorf("orphan %v, other installs %d; want orphan %v, other %v\n%s", got, rep.OtherInstalls, tc.orphan, tc.other, text(t, rep))
			}
		})
	}
}

// Velero's record of a backup's native snapshots, as its server writes it to object storage.
func TestDecodeRecord(t *testing.T) {
	data := []byte(`[{"spec":{"backupName":"b1","backupUID":"u","location":"ebs","persistentVolumeName":"pv-1","providerVolumeID":"vol-1","volumeType":"gp3","volumeAZ":"us-east-1a"},"status":{"providerSnapshotID":"snap-1","phase":"Completed"}},
{"spec":{"backupName":"b1","location":"ebs","persistentVolumeName":"pv-2","providerVolumeID":"vol-2"},"status":{"phase":"Failed"}}]`)
	got, err := decodeRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := (RecordedSnapshot{ID: "snap-1", Location: "ebs", PV: "pv-1", VolumeType: "gp3", VolumeAZ: "us-east-1a"}); len(got) != 1 || got[0] != want {
		t.Errorf("record %+v, want %+v (a failed snapshot has no ID to keep)", got, want)
	}
}
