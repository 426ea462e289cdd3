package tracking

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// cancelStep is one request of a Cancel after the source's cancelled mark: removing the share
// of the source with a vault, or deleting a pending copy.
type cancelStep struct {
	tg      model.Target
	unshare bool
	copyID  string
}

// decideCancel lists what cancelling the operation following src asks for, in order: per
// target, the removal of a vault's share (when the source is marked shared) and the deletion of
// a copy still pending, unless it is kept: locked (EC2 would refuse to delete it, and it is the
// backup's), or a vault copy vaultRetainOnDelete keeps (its hours of copying are what the
// location asks to keep).
func decideCancel(v *backupView, src *types.Snapshot) []cancelStep {
	var steps []cancelStep
	for _, tg := range model.TargetsOf(src) {
		if tg.Vault() && model.TagValue(src.Tags, model.TagVaultSharedAt) != "" {
			steps = append(steps, cancelStep{tg: tg, unshare: true})
		}
		cp := v.copyOf(tg, aws.ToString(src.SnapshotId))
		if cp != nil && cp.State == types.SnapshotStatePending && !keptOnCancel(tg, src, cp, v.lockState(aws.ToString(cp.SnapshotId))) {
			steps = append(steps, cancelStep{tg: tg, copyID: aws.ToString(cp.SnapshotId)})
		}
	}
	return steps
}

// keptOnCancel reports whether a pending copy of src into the target stays when its operation
// is cancelled: it is locked, or it is a vault copy that src or the copy itself says to retain.
func keptOnCancel(tg model.Target, src, cp *types.Snapshot, lock types.LockState) bool {
	retained := model.TagValue(src.Tags, model.TagVaultRetainOnDelete) == "true" || model.TagValue(cp.Tags, model.TagVaultRetainOnDelete) == "true"
	return model.Locked(lock) || tg.Vault() && retained
}
