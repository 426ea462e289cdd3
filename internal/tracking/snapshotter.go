package tracking

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Snapshotter takes EBS snapshots for one VolumeSnapshotLocation. CreateSnapshot only starts a
// snapshot; the Tracker follows it to completion.
type Snapshotter struct {
	cfg     model.Config
	clients ec2api.Regional
	ebs.Settings

	mu      sync.Mutex
	volumes map[string]types.Volume // described by GetVolumeInfo, reused by CreateSnapshot
	// install, when known, tags every snapshot taken (TagInstall).
	install string
}

// NewSnapshotter returns a Snapshotter for the location configured by cfg.
func NewSnapshotter(cfg model.Config, clients ec2api.Regional, opts ...ebs.Option) *Snapshotter {
	return &Snapshotter{cfg: cfg, clients: clients, Settings: ebs.NewSettings(opts), volumes: map[string]types.Volume{}}
}

// SetInstall makes the snapshots taken from now on carry TagInstall with the identity id of
// this Velero install; "" leaves them without it.
func (s *Snapshotter) SetInstall(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.install = id
}

// GetVolumeInfo returns the volume's type and, for io1 and io2, its IOPS.
func (s *Snapshotter) GetVolumeInfo(ctx context.Context, volumeID string) (string, *int64, error) {
	vol, err := s.describeVolume(ctx, volumeID)
	if err != nil {
		return "", nil, err
	}
	var iops *int64
	if t := vol.VolumeType; (t == types.VolumeTypeIo1 || t == types.VolumeTypeIo2) && vol.Iops != nil {
		iops = aws.Int64(int64(*vol.Iops))
	}
	return string(vol.VolumeType), iops, nil
}

// describeVolume describes the volume once per process.
func (s *Snapshotter) describeVolume(ctx context.Context, volumeID string) (types.Volume, error) {
	s.mu.Lock()
	vol, ok := s.volumes[volumeID]
	s.mu.Unlock()
	if ok {
		return vol, nil
	}
	vol, err := ebs.DescribeVolume(ctx, s.clients, s.cfg.Region, s.cfg.Credentials, volumeID)
	if err != nil {
		return types.Volume{}, err
	}
	s.mu.Lock()
	s.volumes[volumeID] = vol
	s.mu.Unlock()
	return vol, nil
}

// laterMarks counts the tags the plugin may add to a source snapshot after creating it (the
// recorded mark is there from its creation): for a source with a copy or a vault copy, the copy-cancelled and deletion
// marks; and for each copy its requested mark (and for the vault copy its shared mark).
// CreateSnapshot leaves room for them under EC2's 50.
func laterMarks(withCopy, withVault bool) int {
	n := 0
	if withCopy || withVault {
		n += 2
	}
	if withCopy {
		n++
	}
	if withVault {
		n += 2
	}
	return n
}

// CreateSnapshot starts a snapshot of the volume and returns its ID at once. It makes exactly
// one snapshot: EC2's per-volume limits are waited out with bounded patience, and after a
// failure that may have taken effect the snapshot is looked up, by a token only this call's
// requests carry, before it is requested again, within the same patience. When more than one request may have made a
// snapshot, the one returned is marked as Velero's, so the tracker deletes the others. A volume
// on an AWS Outpost is refused before any snapshot is requested.
func (s *Snapshotter) CreateSnapshot(ctx context.Context, volumeID string, veleroTags map[string]string) (string, error) {
	vol, err := s.describeVolume(ctx, volumeID)
	if err != nil {
		return "", err
	}
	if err := s.supported(volumeID, vol); err != nil {
		return "", err
	}
	c, err := s.clients(ctx, s.cfg.Region)
	if err != nil {
		return "", err
	}
	token, err := ebs.NewCreateToken()
	if err != nil {
		return "", err
	}
	// The plugin's own keys come only from the plugin: on a volume or a backup label they would
	// make a snapshot look like a copy, or send it to a region the location never named.
	_, volumeTags := model.SplitByPrefix(model.TagMap(vol.Tags), model.TagPrefix)
	_, labelTags := model.SplitByPrefix(veleroTags, model.TagPrefix)
	own := s.intentTags(vol)
	own[model.TagCreateToken], own[model.TagRecorded] = token, model.RecordedPending
	if uid := s.Handoff.UID(veleroTags[model.TagBackup], veleroTags[model.TagPV], volumeID); uid != "" {
		own[model.TagBackupUID] = uid
	}
	limit := model.MaxTags - laterMarks(s.cfg.CopyToRegion != "", s.cfg.Vault.Enabled())
	tags, dropped := model.MergeTags(limit, own, pick(veleroTags, model.TagBackup, model.TagPV), labelTags, volumeTags)
	if len(dropped) > 0 {
		s.Log.WithField("volumeID", volumeID).Infof("Tags left off the snapshot (reserved, too long, or beyond EC2's %d): %v", model.MaxTags, dropped)
	}
	in := &ec2.CreateSnapshotInput{
		VolumeId:    aws.String(volumeID),
		Description: aws.String(truncate(fmt.Sprintf("Velero backup %s, persistent volume %s", veleroTags[model.TagBackup], veleroTags[model.TagPV]), 255)),
		TagSpecifications: []types.TagSpecification{{
			ResourceType: types.ResourceTypeSnapshot,
			Tags:         tags,
		}},
	}
	id, mayHaveMade, err := s.createOnce(ctx, c, in, token)
	if err != nil {
		return "", err
	}
	if err := s.markReturned(ctx, c, id, volumeID, mayHaveMade > 1); err != nil {
		return "", s.deleteUnreturned(ctx, c, id, err)
	}
	return id, nil
}

// deleteUnreturned deletes a snapshot this call made and will not return, because why: no one
// else may ever reach it (Velero records no ID, and a deletion of the backup right after may
// not see it listed yet). When EC2 does not take the deletion, the backup's operation or its
// deletion deletes it later, by its recordedPending mark.
func (s *Snapshotter) deleteUnreturned(ctx context.Context, c ec2api.EC2, id string, why error) error {
	_, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(id)}, ec2api.Bounded)
	if err == nil || ec2api.IsNotFound(err) {
		return fmt.Errorf("%w; snapshot %s was deleted, so no snapshot of this volume is left", why, id)
	}
	return fmt.Errorf("%w; deleting it failed too: %w", why, err)
}

// supported refuses, before anything is created, a volume the plugin cannot snapshot and
// restore faithfully: one on an AWS Outpost, whose snapshots and restored volumes need the
// Outpost named (CreateSnapshot's and CreateVolume's OutpostArn), which the plugin does not do.
func (s *Snapshotter) supported(volumeID string, vol types.Volume) error {
	if arn := aws.ToString(vol.OutpostArn); arn != "" {
		return fmt.Errorf("volume %s in %s is on AWS Outpost %s: volumes on AWS Outposts are not supported by this plugin, and no snapshot was taken", volumeID, s.cfg.Region, arn)
	}
	return nil
}

// createOnce sends in until EC2 accepts it or a look-up by token finds what an earlier request
// made. mayHaveMade counts the requests that may have made a snapshot. The SDK's retryer
// rides out throttling within each request; between two requests whose outcome is unknown the
// snapshot is looked up, and no request is sent whose look-up would outlast the create
// patience: then the call fails, naming the last answer and the token a snapshot it may have
// made carries (marked recordedPending, so the backup's operation deletes it).
func (s *Snapshotter) createOnce(ctx context.Context, c ec2api.EC2, in *ec2.CreateSnapshotInput, token string) (id string, mayHaveMade int, err error) {
	call := createCall{volumeID: aws.ToString(in.VolumeId), region: s.cfg.Region, creds: s.cfg.Credentials.String(), token: token,
		patience: s.CreatePatience, listingLag: s.ListingLag}
	deadline := s.Clock.Now().Add(s.CreatePatience)
	var step createStep
	var unanswered error // the last ambiguous answer
	for {
		switch {
		case step.err != nil:
			return "", mayHaveMade, step.err
		case step.lookUp:
			id, known, err := s.awaitSnapshot(ctx, c, call.volumeID, token)
			if err != nil {
				return "", mayHaveMade, err
			}
			if id != "" {
				return id, mayHaveMade, nil
			}
			step = decideAfterLookUp(call, known, mayHaveMade, unanswered, s.Clock.Now(), deadline)
			continue
		case step.wait > 0:
			if err := ebs.Sleep(ctx, s.Clock, step.wait); err != nil {
				return "", mayHaveMade, err
			}
		}
		out, err := c.CreateSnapshot(ctx, in, ec2api.RetryThrottlingOnly)
		if err == nil {
			return aws.ToString(out.SnapshotId), mayHaveMade + 1, nil
		}
		step = decideCreateAnswer(call, err, mayHaveMade, s.Clock.Now(), deadline)
		if step.ambiguous {
			s.Log.WithField("volumeID", call.volumeID).WithError(err).Warn("CreateSnapshot may have taken effect; looking for the snapshot before trying again")
			unanswered = err
			mayHaveMade++
		}
	}
}

// markReturned marks the snapshot about to be returned to Velero as returned (recordedTrue
// when the call may have made others, which the tracker then deletes; recordedReturned
// otherwise). Only a snapshot so marked is ever copied: one still marked recordedPending past
// its create window is one whose call returned an error (Velero records no snapshot and its
// deletion skips it), and the backup's operation deletes it. So when the mark cannot be
// written, CreateSnapshot returns an error too; an answer lost after the mark took effect is
// settled by reading the snapshot's tags.
func (s *Snapshotter) markReturned(ctx context.Context, c ec2api.EC2, id, volumeID string, maySiblings bool) error {
	value := model.RecordedReturned
	if maySiblings {
		value = model.RecordedTrue
	}
	deadline := s.Clock.Now().Add(s.ListingLag)
	for {
		_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{
			Resources: []string{id},
			Tags:      []types.Tag{{Key: aws.String(model.TagRecorded), Value: aws.String(value)}},
		})
		var read []types.Snapshot // the snapshot as EC2 lists it after an answer that may hide the mark
		if err != nil && ec2api.IsAmbiguous(err) {
			read, _ = ebs.DescribeSnapshots(ctx, c, []types.Filter{{Name: aws.String("snapshot-id"), Values: []string{id}}})
		}
		wait, failed := decideMarkAnswer(err, read, value, s.Clock.Now(), deadline)
		if failed != nil {
			return fmt.Errorf("snapshot %s of volume %s in %s was made, but marking it %s=%s failed, so it is not returned: %w", id, volumeID, s.cfg.Region, model.TagRecorded, value, failed)
		}
		if wait == 0 {
			return nil
		}
		s.Log.WithField("volumeID", volumeID).WithError(err).Warnf("Could not mark snapshot %s as returned to Velero yet; trying again", id)
		if err := ebs.Sleep(ctx, s.Clock, wait); err != nil {
			return err
		}
	}
}

// awaitSnapshot looks, for as long as EC2 may lag in listing it, for the snapshot a
// CreateSnapshot request carrying token may have made. known is false when EC2 could not be
// asked, so the question stays open.
func (s *Snapshotter) awaitSnapshot(ctx context.Context, c ec2api.EC2, volumeID, token string) (id string, known bool, err error) {
	end := s.Clock.Now().Add(s.ListingLag)
	wait := time.Second
	for {
		id, lookErr := findSnapshot(ctx, c, volumeID, token)
		if id != "" {
			return id, true, nil
		}
		known = lookErr == nil
		left := end.Sub(s.Clock.Now())
		if left <= 0 {
			return "", known, nil
		}
		if err := ebs.Sleep(ctx, s.Clock, min(wait, left)); err != nil {
			return "", false, err
		}
		wait *= 2
	}
}

// findSnapshot returns the ID of the earliest snapshot of the volume made by a request that
// carried token: only this call's requests could have made it.
func findSnapshot(ctx context.Context, c ec2api.EC2, volumeID, token string) (string, error) {
	snaps, err := ebs.DescribeSnapshots(ctx, c, []types.Filter{
		{Name: aws.String("volume-id"), Values: []string{volumeID}},
		ebs.TagFilter(model.TagCreateToken, token),
	})
	if err != nil {
		return "", err
	}
	var best *types.Snapshot
	for i := range snaps {
		if sn := &snaps[i]; best == nil || aws.ToTime(sn.StartTime).Before(aws.ToTime(best.StartTime)) {
			best = sn
		}
	}
	if best == nil {
		return "", nil
	}
	return aws.ToString(best.SnapshotId), nil
}

// intentTags are the plugin's own tags on a source snapshot: where its copy and its vault copy
// go, and the volume settings (its zone among them) a restore recreates.
func (s *Snapshotter) intentTags(vol types.Volume) map[string]string {
	t := map[string]string{model.TagVolumeType: string(vol.VolumeType)}
	if az := aws.ToString(vol.AvailabilityZone); az != "" {
		t[model.TagVolumeAZ] = az
	}
	if vol.Iops != nil {
		t[model.TagVolumeIOPS] = strconv.Itoa(int(*vol.Iops))
	}
	if vol.Throughput != nil {
		t[model.TagVolumeThroughput] = strconv.Itoa(int(*vol.Throughput))
	}
	if s.cfg.CopyToRegion != "" {
		t[model.TagCopyToRegion] = s.cfg.CopyToRegion
	}
	if s.cfg.CopyKMSKeyID != "" {
		t[model.TagCopyKMSKeyID] = s.cfg.CopyKMSKeyID
	}
	if s.cfg.CopyCompletionMinutes != 0 {
		t[model.TagCopyCompletionMinutes] = strconv.Itoa(int(s.cfg.CopyCompletionMinutes))
	}
	s.mu.Lock()
	if s.install != "" {
		t[model.TagInstall] = s.install
	}
	s.mu.Unlock()
	if v := s.cfg.Vault; v.Enabled() {
		t[model.TagVaultAccount], t[model.TagVaultRegion] = v.AccountID, v.Region
		if v.KMSKeyID != "" {
			t[model.TagVaultKMSKeyID] = v.KMSKeyID
		}
		if v.Lock.Mode != "" {
			t[model.TagVaultLock] = v.Lock.String()
		}
		if v.RetainOnDelete {
			t[model.TagVaultRetainOnDelete] = "true"
		}
	}
	return t
}

// pick returns the entries of m with the given keys.
func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
