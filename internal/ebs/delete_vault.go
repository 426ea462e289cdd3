package ebs

import (
	"cmp"
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

// TagVaultRetainOnDelete, "true" on a source snapshot taken by a location with
// vaultRetainOnDelete and on its vault copy, keeps the vault copy when its backup is deleted,
// whichever location deletes it: one without vault config, or one restoring from the vault
// that finds the vault copy as a plain copy of the recorded source.
const TagVaultRetainOnDelete = tagPrefix + "vault-retain-on-delete"

// readVaultCopies adds the vault copies of the source, through the vault's credentials: in
// the vault region the location names and the one the source was tagged with. Without a
// vault there are none to find; without credentials for it, nothing is deleted.
func (s *Snapshotter) readVaultCopies(ctx context.Context, seen *deletionSeen) error {
	regions := map[string]bool{}
	account := s.cfg.Vault.AccountID
	if s.cfg.Vault.Enabled() {
		regions[s.cfg.Vault.Region] = true
	}
	if src := seen.source; src != nil && tagValue(src.Tags, TagVaultRegion) != "" {
		regions[tagValue(src.Tags, TagVaultRegion)] = true
		account = cmp.Or(tagValue(src.Tags, TagVaultAccount), account)
	}
	if len(regions) == 0 {
		return nil
	}
	if s.vault == nil {
		return fmt.Errorf("snapshot %s has vault copies in account %s, but the location names no credentials for the vault (%s or %s); nothing deleted",
			seen.sourceID, account, ConfigVaultCredentialSecret, ConfigVaultProfile)
	}
	var errs []error
	for _, region := range slices.Sorted(maps.Keys(regions)) {
		copies, err := copiesOf(ctx, s.vault, region, seen.sourceID)
		if err != nil {
			errs = append(errs, fmt.Errorf("vault account: %w", err))
			continue
		}
		for _, c := range copies {
			if f := found(region, vaultCredentials, c); !slices.ContainsFunc(seen.copies, func(o foundSnapshot) bool { return o.regionalSnapshot == f.regionalSnapshot }) {
				seen.copies = append(seen.copies, f)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w; nothing deleted, so that a later deletion still finds every copy of %s", err, seen.sourceID)
	}
	return nil
}

// readLocks reads the lock states of the copies asked to be locked (TagVaultLock), through
// the credentials each was found with, one request per region and credentials.
func (s *Snapshotter) readLocks(ctx context.Context, copies []foundSnapshot) (map[regionalSnapshot]types.LockState, error) {
	type place struct {
		region string
		via    credentialsOf
	}
	asked := map[place][]types.Snapshot{}
	for _, c := range copies {
		if tagValue(c.snap.Tags, TagVaultLock) != "" {
			p := place{c.region, c.via}
			asked[p] = append(asked[p], c.snap)
		}
	}
	locks := map[regionalSnapshot]types.LockState{}
	for p, snaps := range asked {
		c, err := s.clientsOf(p.via)(ctx, p.region)
		if err != nil {
			return nil, err
		}
		states := map[string]types.LockState{}
		if err := describeLocks(ctx, c, snaps, states); err != nil {
			return nil, fmt.Errorf("reading the locks of copies in %s: %w", p.region, err)
		}
		for id, st := range states {
			locks[regionalSnapshot{p.region, id}] = st
		}
	}
	return locks, nil
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
func (s *Snapshotter) keep(ctx context.Context, t deletionTarget, why string) {
	c, err := s.clientsOf(t.via)(ctx, t.region)
	if err == nil {
		_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{
			Resources: []string{t.id},
			Tags:      []types.Tag{{Key: aws.String(TagBackupDeletedAt), Value: aws.String(s.clock.Now().UTC().Format(time.RFC3339))}},
		})
	}
	if err != nil {
		s.log.WithError(err).Warnf("Could not tag kept snapshot %s with %s", t, TagBackupDeletedAt)
	}
	s.log.Warnf("Kept snapshot %s of the deleted backup: %s. It is tagged %s; delete it once that no longer holds", t, why, TagBackupDeletedAt)
}
