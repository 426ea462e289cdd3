package audit_test

import (
	"context"
	"slices"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/audittest"
	"github.com/velero-async/velero-plugin-for-aws/internal/tracking"
)

// A snapshot the plugin's VolumeSnapshotter takes carries the install's identity, so the audit
// of that install, and only of it, finds it once its backup is gone.
func TestSnapshotterTagsTheInstall(t *testing.T) {
	for _, tc := range []struct {
		name          string
		auditCluster  string
		orphan, other bool
	}{
		{name: "the install that took it calls it an orphan once its backup is gone", auditCluster: audittest.ClusterAUID, orphan: true},
		{name: "another cluster's install never does", auditCluster: audittest.ClusterBUID, other: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := audittest.New(t)
			cfg, err := model.ParseConfig(map[string]string{model.ConfigRegion: audittest.SourceRegion})
			if err != nil {
				t.Fatal(err)
			}
			s := tracking.NewSnapshotter(cfg, func(_ context.Context, region string) (ec2api.EC2, error) {
				return audittest.NewEC2(w.Srv.URL, region, audittest.SourceProfile), nil
			})
			s.SetInstall(audittest.InstallA)
			// Velero passes the backup's name, the PV and the backup's labels, its storage location's among them.
			id, err := s.CreateSnapshot(w.Ctx, w.Vols[0], map[string]string{model.TagBackup: "gone", model.TagPV: "pv-1", velerov1.StorageLocationLabel: audittest.BSLName})
			if err != nil {
				t.Fatal(err)
			}
			w.Cluster(tc.auditCluster, map[string]string{model.ConfigRegion: audittest.SourceRegion, model.ConfigProfile: audittest.SourceProfile})
			w.Clock.Step(pastGrace)
			rep := w.Audit(false)
			if got := slices.Contains(audittest.OrphanIDs(rep), id); got != tc.orphan || (rep.OtherInstalls == 1) != tc.other {
				t.Errorf("orphan %v, other installs %d; want orphan %v, other %v\n%s", got, rep.OtherInstalls, tc.orphan, tc.other, audittest.Text(t, rep))
			}
		})
	}
}
