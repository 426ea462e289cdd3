package ebs

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// cancelStep is one request of a Cancel after the source's cancelled mark: removing the share
// of the source with a vault, or deleting a pending copy.
type cancelStep struct {
	tg      target
	unshare bool
	copyID  string
}

// decideCancel lists what cancelling the operation following src asks for, in order: per
// target, the removal of a vault's share (when the source is marked shared) and the deletion of
// a copy still pending and not locked (EC2 would refuse to delete a locked one, and it is the
// backup's).
func decideCancel(v *backupView, src *types.Snapshot) []cancelStep {
	var steps []cancelStep
	for _, tg := range targetsOf(src) {
		if tg.vault() && tagValue(src.Tags, TagVaultSharedAt) != "" {
			steps = append(steps, cancelStep{tg: tg, unshare: true})
		}
		cp := v.copyOf(tg, aws.ToString(src.SnapshotId))
		if cp != nil && cp.State == types.SnapshotStatePending && !locked(v.lockState(aws.ToString(cp.SnapshotId))) {
			steps = append(steps, cancelStep{tg: tg, copyID: aws.ToString(cp.SnapshotId)})
		}
	}
	return steps
}
