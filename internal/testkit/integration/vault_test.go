package integration

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1api "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Vault copies through Velero core: 50 volumes of the source account with vault copies in the
// vault account, in the copy region, under a one-day governance lock, while plugin processes are
// killed before random Progress calls. Every operation completes only once its vault copy is
// completed and locked and its source no longer shared (checked the moment core sees it
// complete); one vault copy per source; a restore from the vault in a recovery location; the
// deletion keeps the locked vault copies, tagged, and reports no error.
// deletionSettle is how long a deletion's pending snapshots may take to go.
const deletionSettle = 30 * time.Second

func TestVaultCopiesLockedThroughKillsRestoreAndDeletion(t *testing.T) {
	const volumes = 50
	r := newAPIRig(t, rig.WithAccounts(rig.FastConfig(21), nil, nil), volumes)
	loc, err := r.VaultLocation("", model.LockModeGovernance)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(21, 7))
	killed := 0
	r.Core.Hooks = harness.Hooks{BeforeProgress: func(n, i int) {
		if rng.Float64() < 0.05 {
			killed += plugin.KillPlugins()
		}
	}}
	ctx, cancel := context.WithTimeout(t.Context(), backupTimeout)
	defer cancel()
	found := &rig.Result{}
	res, err := r.Backup(ctx, found, "vaulted", loc)
	if err != nil {
		t.Fatal(err)
	}
	r.Core.Hooks = harness.Hooks{}
	r.Check(found, res, nil)
	r.CheckVault(found, res, loc)
	require(t, found)
	if killed == 0 {
		t.Error("no plugin process was killed")
	}
	t.Logf("%d plugin processes killed", killed)
	for _, op := range res.Operations {
		if want := "in vault account " + rig.VaultAccount + " in " + rig.CopyRegion + ", locked (governance, 1 day) completed"; !strings.HasSuffix(op.Status.Description, want) {
			t.Errorf("%s: description %q does not end %q", op.Resource.Name, op.Status.Description, want)
		}
	}

	// A recovery location in the vault account: the same name, the copy region, the vault's
	// credentials (its Secret), no vault of its own.
	restoreFromVault(ctx, t, r, res, loc.Name, "from-the-vault", rig.VaultCredential())

	deleted := &rig.Result{}
	r.Delete(deleted, res, loc)
	r.CheckKeptVaultCopies(ctx, deleted, res)
	r.CountLeaked(deleted, deletionSettle)
	require(t, deleted)
}

// Vault copies with no key of the vault account anywhere the plugin looks: the vault's Secret
// holds a shared config profile that assumes the vault role from the source role, which the
// web identity token of Velero's service account assumes (IRSA). The vault role is allowed only
// the README's vault actions. Every operation completes with its vault copy locked and nothing
// shared; a recovery location assuming the vault's restore role the same way restores from the
// vault; the deletion keeps the locked copies.
func TestVaultCopiesThroughAnAssumedRole(t *testing.T) {
	const volumes = 8
	r := newAPIRig(t, rig.WithVaultRole(rig.WithAccounts(rig.FastConfig(29), nil, nil), vaultIAM), volumes)
	loc, err := r.VaultLocation("", model.LockModeGovernance)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.PutVaultRole(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), backupTimeout)
	defer cancel()
	found := &rig.Result{}
	res, err := r.Backup(ctx, found, "vaulted-by-role", loc)
	if err != nil {
		t.Fatal(err)
	}
	r.Check(found, res, nil)
	r.CheckVault(found, res, loc)
	require(t, found)
	st := r.Sim.Stats()
	assumed := st.Accounts[rig.VaultAccount].Calls["sts"]["AssumeRole"]["ok"]
	webIdentity := st.Accounts[rig.SourceAccount].Calls["sts"]["AssumeRoleWithWebIdentity"]["ok"]
	t.Logf("STS: %d AssumeRole into the vault role, %d AssumeRoleWithWebIdentity into the source role", assumed, webIdentity)
	if assumed == 0 || webIdentity == 0 {
		t.Errorf("the vault was not reached through the roles: %d AssumeRole, %d AssumeRoleWithWebIdentity", assumed, webIdentity)
	}

	// The recovery location assumes the vault account's restore role: the copies' role may
	// only copy, tag, lock and delete.
	cred, err := r.PutRoleProfile("vault-restore", rig.VaultRestoreRole, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	restoreFromVault(ctx, t, r, res, loc.Name, "from-the-vault-by-role", cred)

	deleted := &rig.Result{}
	r.Delete(deleted, res, loc)
	r.CheckKeptVaultCopies(ctx, deleted, res)
	r.CountLeaked(deleted, deletionSettle)
	require(t, deleted)
}

// restoreFromVault restores every volume of the backup through a recovery location of the given
// name in the vault account's region, with credential: each volume must be made in the vault
// account from the vault copy of its snapshot.
func restoreFromVault(ctx context.Context, t *testing.T, r *suite, res *harness.BackupResult, name, restoreName string, credential *corev1api.SecretKeySelector) {
	t.Helper()
	recovery := harness.NewLocation(name, map[string]string{model.ConfigRegion: rig.CopyRegion})
	recovery.Spec.Credential = credential
	restore, err := r.Core.Restore(ctx, harness.RestoreRequest{Name: restoreName, Backup: res, Location: recovery})
	if err != nil {
		t.Fatal(err)
	}
	if !restore.Succeeded() || len(restore.Volumes) != len(res.Snapshots) {
		t.Fatalf("restore %s with %d volumes, want Completed with %d; errors %v %v", restore.Restore.Status.Phase, len(restore.Volumes), len(res.Snapshots),
			restore.ItemErrors, restore.OperationErrors)
	}
	made := map[string]string{}
	for _, v := range r.Sim.VolumesIn(rig.VaultAccount, rig.CopyRegion) {
		made[v.ID] = v.SnapshotID
	}
	vaultCopies := map[string]string{}
	for _, s := range r.Sim.SnapshotsIn(rig.VaultAccount, rig.CopyRegion) {
		vaultCopies[s.ID] = s.SourceSnapshotID
	}
	for _, v := range restore.Volumes {
		if src, ok := made[v.VolumeID]; !ok || vaultCopies[src] != v.SnapshotID {
			t.Errorf("%s: restored volume %s is not made in the vault from the vault copy of %s", v.PV, v.VolumeID, v.SnapshotID)
		}
	}
}
