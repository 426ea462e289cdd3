package tracking

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
)

// cancelStep is one request of a Cancel after the source's cancelled mark: removing the share
// of the source with a vault, or deleting a pending copy.
type cancelStep struct {
	tg      model.Target
	unshare bool
	copyID  string
}

// cancelPlan is what cancelling an operation does: delete its source when Velero recorded it as
// failed (nothing else would), or mark the source cancelled and take the steps; nothing when
// the source asks for no copy.
type cancelPlan struct {
	deleteUnreturned bool
	markCancelled    bool
	steps            []cancelStep
}

// decideCancel decides the Cancel of the operation following src, at now: a source still
// marked unreturned is deleted when Progress would delete it (decideUnreturned), and left
// otherwise; a source asking for copies is marked cancelled, then the steps run.
func decideCancel(v *backupView, op model.Operation, src *types.Snapshot, st velerov1.BackupStatus, cfg decideCfg, now time.Time) cancelPlan {
	if model.Unreturned(src) {
		_, del := decideUnreturned(op, src, st, cfg, velero.OperationProgress{Updated: now})
		return cancelPlan{deleteUnreturned: del}
	}
	if len(model.TargetsOf(src)) == 0 {
		return cancelPlan{}
	}
	return cancelPlan{markCancelled: true, steps: cancelSteps(v, src)}
}

// cancelSteps lists what cancelling the operation following src asks for after the cancelled
// mark, in order: per target, the removal of a vault's share (when the source is marked shared)
// and the deletion of a copy still pending, unless it is kept: locked (EC2 would refuse to
// delete it, and it is the backup's), or a vault copy vaultRetainOnDelete keeps, as the tags
// or the location's config now say (its hours of copying are what the location asks to keep).
func cancelSteps(v *backupView, src *types.Snapshot) []cancelStep {
	var steps []cancelStep
	for _, tg := range model.TargetsOf(src) {
		if tg.Vault() && model.TagValue(src.Tags, model.TagVaultSharedAt) != "" {
			steps = append(steps, cancelStep{tg: tg, unshare: true})
		}
		cp := v.copyOf(tg, aws.ToString(src.SnapshotId))
		if cp != nil && cp.State == types.SnapshotStatePending && !keptOnCancel(tg, src, cp, v.lockState(aws.ToString(cp.SnapshotId)), retainConfigured(v.place.Config, tg)) {
			steps = append(steps, cancelStep{tg: tg, copyID: aws.ToString(cp.SnapshotId)})
		}
	}
	return steps
}

// keptOnCancel reports whether a pending copy of src into the target stays when its operation
// is cancelled: it is locked, or it is a vault copy that src or the copy itself says to retain,
// or the location's config now (configured): of the tags and the config, the safer wins.
func keptOnCancel(tg model.Target, src, cp *types.Snapshot, lock types.LockState, configured bool) bool {
	retained := model.RetainReason(model.TagValue(cp.Tags, model.TagVaultRetainOnDelete) == "true", model.TagValue(src.Tags, model.TagVaultRetainOnDelete) == "true", configured) != ""
	return model.Locked(lock) || tg.Vault() && retained
}

// retainConfigured reports whether a location's config, as the plugin read it now, keeps the
// target's vault copies when their backup is deleted: vaultRetainOnDelete for that vault
// account. A config not known, or that does not parse, keeps nothing by itself.
func retainConfigured(config map[string]string, tg model.Target) bool {
	cfg, err := model.ParseConfig(config)
	return err == nil && cfg.Vault.RetainOnDelete && cfg.Vault.AccountID == tg.Account
}
