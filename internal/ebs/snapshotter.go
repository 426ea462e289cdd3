package ebs

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/pv"
)

// Snapshotter takes, deletes and restores EBS snapshots for one VolumeSnapshotLocation.
// CreateSnapshot only starts a snapshot; the Tracker follows it to completion.
type Snapshotter struct {
	cfg     Config
	clients ec2api.Regional
	settings

	mu       sync.Mutex
	volumes  map[string]types.Volume // described by GetVolumeInfo, reused by CreateSnapshot
	restored map[string]string       // volume ID -> AZ of the volumes this process created
	zones    []types.AvailabilityZone
}

// NewSnapshotter returns a Snapshotter for the location configured by cfg.
func NewSnapshotter(cfg Config, clients ec2api.Regional, opts ...Option) *Snapshotter {
	return &Snapshotter{
		cfg:      cfg,
		clients:  clients,
		settings: newSettings(opts),
		volumes:  map[string]types.Volume{},
		restored: map[string]string{},
	}
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

func (s *Snapshotter) describeVolume(ctx context.Context, volumeID string) (types.Volume, error) {
	if !pv.ValidVolumeID(volumeID) {
		return types.Volume{}, fmt.Errorf("%q is not an EBS volume ID", volumeID)
	}
	s.mu.Lock()
	vol, ok := s.volumes[volumeID]
	s.mu.Unlock()
	if ok {
		return vol, nil
	}
	c, err := s.clients(ctx, s.cfg.Region)
	if err != nil {
		return types.Volume{}, err
	}
	out, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{volumeID}})
	if err == nil && len(out.Volumes) == 0 || ec2api.IsNotFound(err) {
		return types.Volume{}, fmt.Errorf("volume %s does not exist in %s", volumeID, s.cfg.Region)
	}
	if err != nil {
		return types.Volume{}, fmt.Errorf("describing volume %s in %s: %w", volumeID, s.cfg.Region, err)
	}
	vol = out.Volumes[0]
	s.mu.Lock()
	s.volumes[volumeID] = vol
	s.mu.Unlock()
	return vol, nil
}

// CreateSnapshot starts a snapshot of the volume and returns its ID at once. It makes exactly
// one snapshot: EC2's per-volume limits are waited out with bounded patience, and after a
// failure that may have taken effect the snapshot is looked up before it is requested again.
func (s *Snapshotter) CreateSnapshot(ctx context.Context, volumeID string, veleroTags map[string]string) (string, error) {
	vol, err := s.describeVolume(ctx, volumeID)
	if err != nil {
		return "", err
	}
	c, err := s.clients(ctx, s.cfg.Region)
	if err != nil {
		return "", err
	}
	// The plugin's own keys come only from the plugin: on a volume or a backup label they would
	// make a snapshot look like a copy, or send it to a region the location never named.
	_, volumeTags := splitByPrefix(tagMap(vol.Tags), tagPrefix)
	_, labelTags := splitByPrefix(veleroTags, tagPrefix)
	limit := maxTags
	if s.cfg.CopyToRegion != "" {
		limit-- // room for the copy-requested-at mark
	}
	tags, dropped := mergeTags(limit, s.intentTags(vol), pick(veleroTags, TagBackup, TagPV), labelTags, volumeTags)
	if len(dropped) > 0 {
		s.log.WithField("volumeID", volumeID).Infof("Tags left off the snapshot (reserved, too long, or beyond EC2's %d): %v", maxTags, dropped)
	}
	in := &ec2.CreateSnapshotInput{
		VolumeId:    aws.String(volumeID),
		Description: aws.String(truncate(fmt.Sprintf("Velero backup %s, persistent volume %s", veleroTags[TagBackup], veleroTags[TagPV]), 255)),
		TagSpecifications: []types.TagSpecification{{
			ResourceType: types.ResourceTypeSnapshot,
			Tags:         tags,
		}},
	}
	first := s.clock.Now()
	deadline := first.Add(s.createPatience)
	// maybeCreated: a request may have taken effect and the snapshot was not seen yet.
	// everAmbiguous: some request may have; a per-volume rate refusal then says it did.
	maybeCreated, everAmbiguous := false, false
	for {
		if maybeCreated {
			id, known, err := s.awaitSnapshot(ctx, c, volumeID, veleroTags[TagBackup], first)
			if err != nil {
				return "", err
			}
			if id != "" {
				return id, nil
			}
			maybeCreated = !known
			if maybeCreated && s.clock.Now().After(deadline) {
				return "", fmt.Errorf("creating a snapshot of volume %s in %s: the outcome of a request is unknown and EC2 could not be asked for %s", volumeID, s.cfg.Region, s.createPatience)
			}
			continue
		}
		out, err := c.CreateSnapshot(ctx, in, ec2api.RetryThrottlingOnly)
		if err == nil {
			return aws.ToString(out.SnapshotId), nil
		}
		var wait time.Duration
		switch code := ec2api.Code(err); {
		case ec2api.IsAmbiguous(err):
			s.log.WithField("volumeID", volumeID).WithError(err).Warn("CreateSnapshot may have taken effect; looking for the snapshot before trying again")
			maybeCreated, everAmbiguous = true, true
			continue
		case code == ec2api.CodeSnapshotCreationPerVolumeRateExceeded:
			maybeCreated = everAmbiguous
			wait = 15 * time.Second
		case code == ec2api.CodeConcurrentSnapshotLimitExceeded:
			wait = 30 * time.Second
		case ec2api.IsThrottle(err):
			wait = 5 * time.Second
		default:
			return "", fmt.Errorf("creating a snapshot of volume %s in %s: %w", volumeID, s.cfg.Region, err)
		}
		if !maybeCreated && s.clock.Now().Add(wait).After(deadline) {
			return "", fmt.Errorf("creating a snapshot of volume %s in %s: still refused after %s: %w", volumeID, s.cfg.Region, s.createPatience, err)
		}
		if maybeCreated {
			continue
		}
		if err := sleep(ctx, s.clock, wait); err != nil {
			return "", err
		}
	}
}

// awaitSnapshot looks, for as long as EC2 may lag in listing it, for a snapshot that a CreateSnapshot
// whose outcome is unknown may have made. known is false when EC2 could not be asked, so the
// question stays open.
func (s *Snapshotter) awaitSnapshot(ctx context.Context, c ec2api.EC2, volumeID, backup string, since time.Time) (id string, known bool, err error) {
	end := s.clock.Now().Add(s.listingLag)
	wait := time.Second
	for {
		id, lookErr := findSnapshot(ctx, c, volumeID, backup, since)
		if id != "" {
			return id, true, nil
		}
		known = lookErr == nil
		left := end.Sub(s.clock.Now())
		if left <= 0 {
			return "", known, nil
		}
		if err := sleep(ctx, s.clock, min(wait, left)); err != nil {
			return "", false, err
		}
		wait *= 2
	}
}

// findSnapshot returns the ID of the earliest snapshot of the volume tagged for the backup (or,
// for an untagged request, started since the request).
func findSnapshot(ctx context.Context, c ec2api.EC2, volumeID, backup string, since time.Time) (string, error) {
	filters := []types.Filter{{Name: aws.String("volume-id"), Values: []string{volumeID}}}
	if backup != "" {
		filters = append(filters, tagFilter(TagBackup, backup))
	}
	snaps, err := describeSnapshots(ctx, c, filters)
	if err != nil {
		return "", err
	}
	var best *types.Snapshot
	for i := range snaps {
		sn := &snaps[i]
		if backup == "" && aws.ToTime(sn.StartTime).Before(since.Add(-time.Minute)) {
			continue
		}
		if best == nil || aws.ToTime(sn.StartTime).Before(aws.ToTime(best.StartTime)) {
			best = sn
		}
	}
	if best == nil {
		return "", nil
	}
	return aws.ToString(best.SnapshotId), nil
}

// intentTags are the plugin's own tags on a source snapshot: where its copy goes, and the
// volume settings a restore recreates.
func (s *Snapshotter) intentTags(vol types.Volume) map[string]string {
	t := map[string]string{TagVolumeType: string(vol.VolumeType)}
	if vol.Iops != nil {
		t[TagVolumeIOPS] = strconv.Itoa(int(*vol.Iops))
	}
	if vol.Throughput != nil {
		t[TagVolumeThroughput] = strconv.Itoa(int(*vol.Throughput))
	}
	if s.cfg.CopyToRegion != "" {
		t[TagCopyToRegion] = s.cfg.CopyToRegion
	}
	if s.cfg.CopyKMSKeyID != "" {
		t[TagCopyKMSKeyID] = s.cfg.CopyKMSKeyID
	}
	if s.cfg.CopyCompletionMinutes != 0 {
		t[TagCopyCompletionMinutes] = strconv.Itoa(int(s.cfg.CopyCompletionMinutes))
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
