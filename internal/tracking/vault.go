package tracking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// codeOperationNotPermitted is EC2's answer to sharing a snapshot under the default aws/ebs key.
const codeOperationNotPermitted = "OperationNotPermitted"

// share lets the vault account copy the source. It reports whether the copy may be asked for
// now; a refusal is recorded, and a transient or ambiguous failure, returned, is tried again at
// a later call (sharing is idempotent).
func (t *Tracker) share(ctx context.Context, c ec2api.EC2, v *backupView, tg model.Target, s types.Snapshot) (bool, error) {
	if !tg.Vault() {
		return true, nil
	}
	id := aws.ToString(s.SnapshotId)
	err := setShare(ctx, c, id, tg.Account, types.OperationTypeAdd)
	if ec2api.IsAmbiguous(err) {
		if shared, serr := sharedWith(ctx, c, id, tg.Account); serr == nil && shared {
			err = nil // it took effect
		}
	}
	switch {
	case err == nil:
		return true, nil
	case ec2api.Code(err) == codeOperationNotPermitted:
		v.refuse(tg, id, fmt.Sprintf("snapshot %s is encrypted with KMS key %s, which EC2 will not share with vault account %s "+
			"(snapshots under the default key aws/ebs cannot be shared): encrypt the volumes with a customer managed key whose key policy lets account %s use it (see the README): %v",
			id, aws.ToString(s.KmsKeyId), tg.Account, tg.Account, err))
	case ec2api.IsTransient(err):
		t.Log.WithError(err).Warnf("Could not share snapshot %s with vault account %s yet; trying again later", id, tg.Account)
		return false, fmt.Errorf("sharing %s with vault account %s: %w", id, tg.Account, err)
	default:
		v.refuse(tg, id, fmt.Sprintf("sharing snapshot %s with vault account %s refused: %v", id, tg.Account, err))
	}
	return false, nil
}

// setShare adds or removes the account's permission to create volumes from (and copy) the
// snapshot.
func setShare(ctx context.Context, c ec2api.EC2, id, account string, op types.OperationType) error {
	perm := []types.CreateVolumePermission{{UserId: aws.String(account)}}
	mods := &types.CreateVolumePermissionModifications{Add: perm}
	if op == types.OperationTypeRemove {
		mods = &types.CreateVolumePermissionModifications{Remove: perm}
	}
	// A lost answer is settled by DescribeSnapshotAttribute, not by the SDK asking again.
	_, err := c.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{
		SnapshotId:             aws.String(id),
		Attribute:              types.SnapshotAttributeNameCreateVolumePermission,
		CreateVolumePermission: mods,
	}, ec2api.Bounded, ec2api.RetryThrottlingOnly)
	return err
}

// sharedWith reports whether EC2 says the snapshot is shared with the account: how an answer
// lost after a share or its removal is settled.
func sharedWith(ctx context.Context, c ec2api.EC2, id, account string) (bool, error) {
	out, err := c.DescribeSnapshotAttribute(ctx, &ec2.DescribeSnapshotAttributeInput{
		SnapshotId: aws.String(id),
		Attribute:  types.SnapshotAttributeNameCreateVolumePermission,
	}, ec2api.Bounded)
	if err != nil {
		return false, err
	}
	for _, p := range out.CreateVolumePermissions {
		if aws.ToString(p.UserId) == account || p.Group == types.PermissionGroupAll {
			return true, nil
		}
	}
	return false, nil
}

// unshare removes the source's share with the vault account and then its shared mark; nil once
// nothing is left shared (or never was). A source already deleted shares nothing.
func (t *Tracker) unshare(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target) error {
	id := aws.ToString(src.SnapshotId)
	if model.TagValue(src.Tags, model.TagVaultSharedAt) == "" {
		return nil
	}
	c, err := v.place.Clients(ctx, v.region)
	if err != nil {
		return err
	}
	err = setShare(ctx, c, id, tg.Account, types.OperationTypeRemove)
	if ec2api.IsAmbiguous(err) {
		if shared, serr := sharedWith(ctx, c, id, tg.Account); serr == nil && !shared {
			err = nil // it took effect
		}
	}
	if err != nil && !ec2api.IsNotFound(err) {
		return fmt.Errorf("removing the share of snapshot %s with account %s: %w", id, tg.Account, err)
	}
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{
		Resources: []string{id},
		Tags:      []types.Tag{{Key: aws.String(model.TagVaultSharedAt)}},
	}, ec2api.Bounded); err != nil && !ec2api.IsNotFound(err) {
		return fmt.Errorf("share removed; clearing the mark %s on %s: %w", model.TagVaultSharedAt, id, err)
	}
	v.setTag([]string{id}, model.TagVaultSharedAt, "")
	t.Log.Infof("Removed the share of snapshot %s with vault account %s", id, tg.Account)
	return nil
}

// sharedAt is when the source was marked for sharing with the vault; zero when it is not.
func sharedAt(s types.Snapshot) time.Time {
	at, _ := time.Parse(time.RFC3339, model.TagValue(s.Tags, model.TagVaultSharedAt))
	return at
}

// vaultSteps takes the steps decideVaultSteps asks for on a vault copy EC2 lists, one after
// another, and reports the phase they leave it in.
func (t *Tracker) vaultSteps(ctx context.Context, v *backupView, src *types.Snapshot, tg model.Target, cp *types.Snapshot) phase {
	cpID := aws.ToString(cp.SnapshotId)
	for range maxVaultSteps {
		d := decideVaultSteps(v, src, tg, cp)
		switch {
		case d.lock != nil:
			if err := t.timed(v, func() error { return t.lockVaultCopy(ctx, v, tg, cpID, *d.lock) }); err != nil {
				if ec2api.IsTransient(err) {
					return phase{units: d.phase.units, busy: true, desc: fmt.Sprintf("vault copy %s in %s: %s; locking it: %v", cpID, tg, progressText(cp.Progress), err)}
				}
				return t.failCopy(ctx, v, src, tg, fmt.Sprintf("locking vault copy %s in %s refused: %v", cpID, tg, err), false)
			}
		case d.unshare:
			if err := t.timed(v, func() error { return t.unshare(ctx, v, src, tg) }); err != nil {
				return phase{units: d.phase.units, busy: true, desc: fmt.Sprintf("vault copy %s in %s completed%s; %v", cpID, tg, d.lockNote, err)}
			}
		default:
			return d.phase
		}
	}
	return decideVaultSteps(v, src, tg, cp).phase
}

// maxVaultSteps bounds the steps one report takes on a vault copy: its lock and the removal of
// its source's share.
const maxVaultSteps = 2

// budgetSpent says why a step waits for the next reconcile.
const budgetSpent = "this reconcile's time for EC2 requests is spent"

// timed runs a step's requests, counting their time against the description's budget (the
// one copies are started within): EC2's rate for mutating requests (5 a second) would
// otherwise make one reconcile of a large backup's vault steps last minutes.
func (t *Tracker) timed(v *backupView, step func() error) error {
	start := t.Clock.Now()
	defer func() { v.spend(t.Clock.Since(start)) }()
	return step()
}

// lockVaultCopy locks a vault copy with the vault's credentials. An answer that may have taken
// effect is checked by the next description's DescribeLockedSnapshots, so it is transient here.
func (t *Tracker) lockVaultCopy(ctx context.Context, v *backupView, tg model.Target, cpID string, l model.Lock) error {
	c, _, err := v.place.ClientsFor(ctx, tg)
	if err != nil {
		return err
	}
	in := &ec2.LockSnapshotInput{
		SnapshotId:   aws.String(cpID),
		LockMode:     types.LockMode(l.Mode),
		LockDuration: aws.Int32(l.Days),
	}
	if l.CoolOffHours > 0 {
		in.CoolOffPeriod = aws.Int32(l.CoolOffHours)
	}
	out, err := c.LockSnapshot(ctx, in, ec2api.Bounded, ec2api.RetryThrottlingOnly) // a lost answer: the next description tells
	switch {
	case err == nil:
		v.recordLock(cpID, out.LockState)
		t.Log.Infof("Locked vault copy %s in %s (%s, %d days)", cpID, tg, l.Mode, l.Days)
		return nil
	case ec2api.IsAmbiguous(err):
		return errors.Join(err, errors.New("the lock may have taken effect; the next description tells"))
	}
	return err
}

// checkVaultAccount confirms that the view's vault credentials are the target's vault
// account's: they list no snapshot another account owns, and STS names the vault account,
// when the place can ask (once per description: a failure is not asked again by every
// operation of a reconcile).
func (t *Tracker) checkVaultAccount(ctx context.Context, v *backupView, tg model.Target) vaultCheck {
	if owner := v.stranger(tg); owner != "" {
		return vaultCheck{wrong: wrongVaultAccount(tg, owner)}
	}
	if v.place.VaultIdentity == nil || v.place.Vault == nil {
		return vaultCheck{}
	}
	if c, ok := v.vaultChecked(tg); ok {
		return c
	}
	account, err := v.place.VaultIdentity(ctx)
	c := decideVaultAccount(tg, account, err)
	v.recordVaultCheck(tg, c)
	return c
}
