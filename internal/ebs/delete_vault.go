package ebs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// findVaultCopies lists the vault copies of a source: in the vault region the location names
// and the one the source was tagged with, through the vault's credentials. Without a vault, or
// credentials for it, there are none to find.
func (s *Snapshotter) findVaultCopies(ctx context.Context, sourceID string, src *types.Snapshot) ([]regionalSnapshot, error) {
	regions := map[string]bool{}
	if s.cfg.Vault.Enabled() {
		regions[s.cfg.Vault.Region] = true
	}
	if src != nil && tagValue(src.Tags, TagVaultRegion) != "" {
		regions[tagValue(src.Tags, TagVaultRegion)] = true
	}
	if len(regions) == 0 {
		return nil, nil
	}
	if s.vault == nil {
		return nil, fmt.Errorf("snapshot %s has vault copies in account %s, but the location names no credentials for the vault (%s or %s); nothing deleted",
			sourceID, s.cfg.Vault.AccountID, ConfigVaultCredentialSecret, ConfigVaultProfile)
	}
	var out []regionalSnapshot
	var errs []error
	for _, region := range slices.Sorted(maps.Keys(regions)) {
		copies, err := copiesOf(ctx, s.vault, region, sourceID)
		if err != nil {
			errs = append(errs, fmt.Errorf("vault account: %w", err))
			continue
		}
		out = append(out, inRegion(region, copies)...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w; nothing deleted, so that a later deletion still finds every copy of %s", err, sourceID)
	}
	return out, nil
}

// deleteVaultCopy deletes a vault copy with the vault's credentials, unless the location keeps
// vault copies (vaultRetainOnDelete): then it is kept (see keep).
func (s *Snapshotter) deleteVaultCopy(ctx context.Context, t regionalSnapshot) error {
	if !s.cfg.Vault.RetainOnDelete {
		return s.deleteOne(ctx, s.vault, t)
	}
	c, err := s.vault(ctx, t.region)
	if err != nil {
		return err
	}
	s.keep(ctx, c, t, ConfigVaultRetainOnDelete+" is true")
	return nil
}

// lockOf returns the snapshot's lock as EC2 describes it; the zero value when it has none.
func lockOf(ctx context.Context, c ec2api.EC2, id string) (types.LockedSnapshotsInfo, error) {
	out, err := c.DescribeLockedSnapshots(ctx, &ec2.DescribeLockedSnapshotsInput{SnapshotIds: []string{id}})
	if err != nil || len(out.Snapshots) == 0 {
		return types.LockedSnapshotsInfo{}, err
	}
	return out.Snapshots[0], nil
}

// keep leaves a snapshot in place after its backup's deletion, saying why, and tags it with
// when its backup was deleted so that it can be found and deleted later.
func (s *Snapshotter) keep(ctx context.Context, c ec2api.EC2, t regionalSnapshot, why string) {
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: []string{t.id},
		Tags:      []types.Tag{{Key: aws.String(TagBackupDeletedAt), Value: aws.String(s.clock.Now().UTC().Format(time.RFC3339))}},
	}); err != nil {
		s.log.WithError(err).Warnf("Could not tag kept snapshot %s with %s", t, TagBackupDeletedAt)
	}
	s.log.Warnf("Kept snapshot %s of the deleted backup: %s. It is tagged %s; delete it once that no longer holds", t, why, TagBackupDeletedAt)
}
