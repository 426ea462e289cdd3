package security

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/deleting"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

const (
	vaultSourceRegion = "us-east-1"
	vaultRegion       = "us-west-2"
)

// vaultRun backs up one volume with a locked vault copy and one with an unlocked vault copy,
// then deletes the second backup, with each account allowed only the given actions. Every
// answer to ModifySnapshotAttribute is lost after it took effect, so that settling a lost share
// is part of the run. The plugin reaches the vault with its keys, or as reach says when set. It
// returns what went wrong; nothing when the run is clean.
func vaultRun(t *testing.T, sourceAllowed, vaultAllowed []string, reach *vaultReach) []string {
	cfg := ec2sim.Config{
		Unthrottled:      true,
		SnapshotDuration: ec2sim.Range(10*time.Second, 10*time.Second),
		CopyDuration:     ec2sim.Range(20*time.Second, 20*time.Second),
		Faults:           ec2sim.Faults{DropAfterEffectRate: 1, DropActions: []string{"ModifySnapshotAttribute"}},
	}
	if reach != nil {
		cfg.Roles, cfg.PodIdentityAssociations = reach.roles, reach.pods
	}
	a := rig.NewAccounts(t, cfg, sourceAllowed, vaultAllowed)
	if reach != nil {
		a.Vault = reach.clients(t, a.URL)
	}
	var problems []string
	for _, lock := range []model.Lock{{Mode: model.LockModeGovernance, Days: 1}, {}} {
		cfg := model.Config{Region: vaultSourceRegion, Vault: model.VaultConfig{AccountID: rig.VaultAccount, Profile: "vault", Region: vaultRegion, Lock: lock}}
		srcID, opID, err := a.Snapshot(cfg, vaultSourceRegion, ec2sim.VolumeSpec{SizeGiB: 8})
		if err != nil {
			return append(problems, "CreateSnapshot: "+err.Error())
		}
		seen, p, completed := a.Follow(opID, false)
		switch {
		case !completed:
			problems = append(problems, "operation never completed: "+seen[len(seen)-1])
		case p.Err != "":
			problems = append(problems, "operation failed: "+p.Err)
		}
		if shared := a.Sim.SharedSnapshots(rig.SourceAccount); len(shared) > 0 {
			problems = append(problems, fmt.Sprintf("%d snapshots left shared", len(shared)))
		}
		copies := a.VaultCopies(vaultRegion, srcID)
		if len(copies) != 1 || copies[0].State != "completed" || lock.Mode != "" && copies[0].LockState != lock.Mode {
			problems = append(problems, fmt.Sprintf("vault copies %+v, want one completed, locked %q", copies, lock.Mode))
		}
		if lock.Mode != "" {
			continue
		}
		s := deleting.NewDeleter(cfg, a.Source, a.Options()...)
		if err := s.DeleteSnapshot(context.Background(), srcID); err != nil {
			problems = append(problems, "deletion: "+err.Error())
		}
		if left := a.VaultCopies(vaultRegion, srcID); len(left) > 0 {
			problems = append(problems, fmt.Sprintf("%d vault copies left after deletion", len(left)))
		}
	}
	return problems
}

// TestVaultIAMPoliciesAreExactlyWhatThePluginNeeds runs vault backups and a deletion with the
// source account allowed only the README's plugin and vault-sharing statements, and the vault
// account only its vault statement: the run is clean. Then, for each action of the vault
// statements, with that one denied: something goes wrong.
func TestVaultIAMPoliciesAreExactlyWhatThePluginNeeds(t *testing.T) {
	plugin := readmeEC2Actions(t, sidPlugin)
	sharing := readmeEC2Actions(t, sidVaultSharing)
	vault := readmeEC2Actions(t, sidVaultCopies)
	t.Logf("README source additions: %v; vault account: %v", sharing, vault)
	source := append(slices.Clone(plugin), sharing...)
	t.Run("README policies", func(t *testing.T) {
		if problems := vaultRun(t, source, vault, nil); len(problems) > 0 {
			t.Fatalf("the run fails with the README's policies: %s", strings.Join(problems, "; "))
		}
	})
	without := func(actions []string, denied string) []string {
		return slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return a == denied })
	}
	for _, denied := range sharing {
		t.Run("source without "+denied, func(t *testing.T) {
			problems := vaultRun(t, without(source, denied), vault, nil)
			if len(problems) == 0 {
				t.Fatalf("the run is clean without ec2:%s in the source account: the policy grants more than the plugin needs", denied)
			}
			t.Logf("without ec2:%s: %s", denied, problems[0])
		})
	}
	for _, denied := range vault {
		t.Run("vault without "+denied, func(t *testing.T) {
			problems := vaultRun(t, source, without(vault, denied), nil)
			if len(problems) == 0 {
				t.Fatalf("the run is clean without ec2:%s in the vault account: the policy grants more than the plugin needs", denied)
			}
			t.Logf("without ec2:%s: %s", denied, problems[0])
		})
	}
}
