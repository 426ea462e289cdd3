package security

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/audittest"
)

// sidDrill is the README's statement letting drills delete the volumes they made.
const sidDrill = "DrillVolumes"

// drillRecoveryLocation is the recovery region's location the drills restore through.
const drillRecoveryLocation = "recovery"

// drillRun backs up two volumes with copies and locked vault copies, then, with the source
// account allowed only sourceAllowed and the vault account vaultAllowed, drills the backup in
// the copy region and audits (deleting the orphans of a deleted backup). It returns what went
// wrong; nothing when both ran clean.
func drillRun(t *testing.T, sourceAllowed, vaultAllowed []string) []string {
	w := audittest.New(t, audittest.WithAllowed(sourceAllowed, vaultAllowed))
	w.Cluster(audittest.ClusterAUID, audittest.LocationConfig)
	w.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: audittest.VeleroNS, Name: drillRecoveryLocation},
		Spec: velerov1.VolumeSnapshotLocationSpec{Provider: location.DefaultProvider,
			Config: map[string]string{model.ConfigRegion: audittest.CopyRegion, model.ConfigProfile: audittest.SourceProfile}}})
	w.Backup("b1", "", w.Clock.Now(), velerov1.BackupPhaseCompleted, w.Take("b1", w.Vols[0], audittest.Outcome{}))
	w.Take("deleted", w.Vols[1], audittest.Outcome{Unlocked: true})

	d := &drill.Driller{Kube: w.Kube(), Records: w.Records, Resolver: w.Resolver(), Clients: drillClients{w.Clients()}, Clock: w.Clock,
		Log: logrus.New(), Namespace: audittest.VeleroNS, Provider: location.DefaultProvider}
	done := make(chan drill.Report, 1)
	errs := make(chan error, 1)
	go func() {
		rep, err := d.Run(context.Background(), drill.Options{Backup: "b1", Location: drillRecoveryLocation, PollInterval: time.Second})
		errs <- err
		done <- rep
	}()
	var problems []string
	for waiting := true; waiting; {
		select {
		case err := <-errs:
			if err != nil {
				return []string{"drill: " + err.Error()}
			}
			rep := <-done
			problems = append(problems, rep.Problems...)
			waiting = false
		case <-time.After(time.Millisecond):
			if w.Clock.HasWaiters() {
				w.Clock.Step(time.Second)
			}
		}
	}
	if n := len(w.Srv.Sim.VolumesIn(audittest.SourceAccount, audittest.CopyRegion)); n > 0 {
		problems = append(problems, "the drill left volumes")
	}
	w.Clock.Step(audit.DefaultOrphanGrace + time.Minute)
	rep := w.Audit(true)
	problems = append(problems, rep.Problems...)
	for _, d := range rep.Deletions {
		if !d.Deleted {
			problems = append(problems, "audit --delete-orphans: "+d.ID+": "+d.Why)
		}
	}
	if len(rep.Deletions) != 3 {
		problems = append(problems, "audit --delete-orphans did not delete the deleted backup's three snapshots")
	}
	return problems
}

// drillClients are the world's clients, with STS's answer of whose credentials they are (STS
// needs no permission).
type drillClients struct{ audittest.SimClients }

func (drillClients) Account(_ context.Context, _ string, creds ec2api.Credentials) (ec2api.Identity, error) {
	accounts := map[string]string{audittest.SourceProfile: audittest.SourceAccount, audittest.VaultProfile: audittest.VaultAccount}
	return ec2api.Identity{Account: accounts[creds.Profile]}, nil
}

// TestIAMDrillAndAuditNeedExactlyTheREADMEStatements runs a drill and an audit that deletes
// orphans with the source account allowed only the README's plugin, vault-sharing and drill
// statements and the vault account only its vault statement: both run clean. Without the drill
// statement's one action, the drill leaves its volumes. Its condition names the drill's tag.
func TestIAMDrillAndAuditNeedExactlyTheREADMEStatements(t *testing.T) {
	source := readmeEC2Actions(t, sidPlugin, sidVaultSharing, sidDrill)
	vault := readmeEC2Actions(t, sidVaultCopies)
	if problems := drillRun(t, source, vault); len(problems) > 0 {
		t.Fatalf("with the README's statements: %v", problems)
	}
	for _, denied := range readmeEC2Actions(t, sidDrill) {
		t.Run("without "+denied, func(t *testing.T) {
			allowed := slices.DeleteFunc(slices.Clone(source), func(a string) bool { return a == denied })
			if problems := drillRun(t, allowed, vault); len(problems) == 0 {
				t.Fatalf("the drill and the audit run clean without ec2:%s: the statement grants more than they need", denied)
			}
		})
	}
	if key := readmeDrillConditionKey(t); key != "aws:ResourceTag/"+audit.TagDrill {
		t.Errorf("the README's %s statement is conditioned on %q, want aws:ResourceTag/%s: the tag drills put on their volumes", sidDrill, key, audit.TagDrill)
	}
}

// readmeDrillConditionKey is the condition key of the README's drill statement.
func readmeDrillConditionKey(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range jsonBlock.FindAllSubmatch(b, -1) {
		var p struct {
			Statement []struct {
				Sid       string
				Condition map[string]map[string]string
			}
		}
		if json.Unmarshal(m[1], &p) != nil {
			continue
		}
		for _, s := range p.Statement {
			if s.Sid != sidDrill {
				continue
			}
			for _, keys := range s.Condition {
				for k := range keys {
					return k
				}
			}
		}
	}
	t.Fatalf("no %s statement with a condition in README.md", sidDrill)
	return ""
}
