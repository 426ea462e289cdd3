package faults

import (
	"context"
	"fmt"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// vaultActions are the actions of the vault steps whose answers the vault scenario loses.
var vaultActions = []string{"ModifySnapshotAttribute", "CopySnapshot", "LockSnapshot"}

// vault backs up volumes with copies and locked vault copies while a fifth of the answers to
// the vault steps are lost after they took effect, checks one vault copy per source, locked,
// nothing left shared, then deletes the backup: the locked vault copies must be kept (the vault's
// owner then unlocks and deletes them), and nothing else is left.
func vault(ctx context.Context, e *rig.Env, res *rig.Result, volumes int) error {
	withAPI := *e
	withAPI.KubeAPI = true
	cfg := rig.WithAccounts(rig.FastConfig(9), nil, nil)
	cfg.Faults = ec2sim.Faults{DropAfterEffectRate: 0.2, DropActions: vaultActions}
	return withRig(&withAPI, "vault", cfg, volumes, func(r *rig.Rig) error {
		loc, err := r.VaultLocation(rig.CopyRegion, model.LockModeGovernance)
		if err != nil {
			return err
		}
		b, err := r.Backup(ctx, res, "vault", loc)
		if err != nil {
			return err
		}
		r.Check(res, b, nil)
		r.CheckVault(res, b, loc)
		r.Delete(res, b, loc)
		r.CheckKeptVaultCopies(ctx, res, b)
		r.CountLeaked(res, deletionSettle)
		lost := 0
		for _, a := range vaultActions {
			st := r.Sim.Stats()
			lost += st.Total(a, "") - st.Total(a, "ok")
		}
		res.Faults += fmt.Sprintf(": %d answers lost", lost)
		if lost == 0 {
			res.Problemf("no answer to %v was lost: the scenario proves nothing", vaultActions)
		}
		return nil
	})
}
