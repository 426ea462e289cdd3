package ebs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// CreateVolumeFromSnapshot creates a volume from a snapshot Velero recorded at backup. In the
// snapshot's own region it restores from the snapshot; in the copy region, from its completed
// copy. When Velero passes no zone, a restore in the snapshot's own region uses the zone the
// backed-up volume was in. It returns the new volume's ID; VolumeZone then tells its AZ.
func (s *Snapshotter) CreateVolumeFromSnapshot(ctx context.Context, snapshotID, volumeType, volumeAZ string, iops *int64) (string, error) {
	if !awsid.IsSnapshotID(snapshotID) {
		return "", fmt.Errorf("%q is not an EBS snapshot ID", snapshotID)
	}
	snap, err := s.restorableSnapshot(ctx, snapshotID)
	if err != nil {
		return "", err
	}
	tags := tagMap(snap.Tags)
	if volumeAZ == "" && aws.ToString(snap.SnapshotId) == snapshotID {
		// In the volume's own region, the zone recorded at backup; a copy region keeps the
		// zone choice of a volume of unknown zone.
		volumeAZ = tags[TagVolumeAZ]
	}
	az, err := s.restoreZone(ctx, volumeAZ)
	if err != nil {
		return "", err
	}
	if volumeType == "" {
		volumeType = tags[TagVolumeType]
	}
	in := &ec2.CreateVolumeInput{
		AvailabilityZone: aws.String(az),
		SnapshotId:       snap.SnapshotId,
		VolumeType:       types.VolumeType(volumeType),
	}
	switch types.VolumeType(volumeType) {
	case types.VolumeTypeIo1, types.VolumeTypeIo2:
		in.Iops = int32Of(iops, tags[TagVolumeIOPS])
	case types.VolumeTypeGp3:
		in.Iops = int32Of(nil, tags[TagVolumeIOPS])
		in.Throughput = int32Of(nil, tags[TagVolumeThroughput])
	}
	if rate := s.cfg.Restore.InitializationRate; rate != 0 {
		in.VolumeInitializationRate = aws.Int32(rate)
	}
	if s.cfg.EBSKMSKeyID != "" {
		in.Encrypted = aws.Bool(true)
		in.KmsKeyId = aws.String(s.cfg.EBSKMSKeyID)
	}
	volumeTags := restoredVolumeTags(tags, s.clusterName != "")
	if err := s.withRestoreToken(in, volumeTags); err != nil {
		return "", err
	}
	c, err := s.clients(ctx, s.cfg.Region)
	if err != nil {
		return "", err
	}
	id, err := s.createVolumeOnce(ctx, c, in)
	if code, msg := rateRefusal(err, in); code != "" {
		id, err = s.createWithoutRate(ctx, c, in, volumeTags, code, msg)
	}
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.restored[id] = az
	s.mu.Unlock()
	return id, nil
}

// withRestoreToken gives in its restore token, as its ClientToken and as the volume's tag, with
// the volume's other tags.
func (s *Snapshotter) withRestoreToken(in *ec2.CreateVolumeInput, volumeTags map[string]string) error {
	token, err := restoreToken(s.cfg.Region, in)
	if err != nil {
		return err
	}
	in.ClientToken = aws.String(token)
	vt, _ := mergeTags(maxTags, map[string]string{TagRestoreToken: token}, s.clusterTags(), volumeTags)
	in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeVolume, Tags: vt}}
	return nil
}

// rateRefusalCodes are EC2's answers that refuse a CreateVolume's parameters: for a request
// with a VolumeInitializationRate, the rate for that volume (too small a volume, a snapshot or
// region that does not support it, a rate out of range).
var rateRefusalCodes = []string{"InvalidParameterValue", "InvalidParameterCombination", "InvalidParameter", "UnsupportedOperation"}

// rateRefusal returns EC2's code and message when err is EC2 refusing in, which asks for a
// volume initialization rate; "" otherwise (no rate asked, throttling, a lost answer, a
// credentials failure, another refusal). A refused request made no volume: EC2 answers a
// request whose token already made one with that volume.
func rateRefusal(err error, in *ec2.CreateVolumeInput) (code, msg string) {
	var apiErr smithy.APIError
	if in.VolumeInitializationRate == nil || !errors.As(err, &apiErr) || !slices.Contains(rateRefusalCodes, ec2api.Code(err)) {
		return "", ""
	}
	return apiErr.ErrorCode(), apiErr.ErrorMessage()
}

// createWithoutRate follows EC2's refusal (code, msg) of in's volume initialization rate: with
// the fallback allowed, it creates the volume at EBS's default rate, as a new request with its
// own token, and warns; without, it fails naming the rate's key and value and EC2's message.
func (s *Snapshotter) createWithoutRate(ctx context.Context, c ec2api.EC2, in *ec2.CreateVolumeInput, volumeTags map[string]string, code, msg string) (string, error) {
	snap, az, rate := aws.ToString(in.SnapshotId), aws.ToString(in.AvailabilityZone), aws.ToInt32(in.VolumeInitializationRate)
	if !s.cfg.Restore.InitializationFallback {
		return "", fmt.Errorf("creating a volume from snapshot %s in %s: EC2 refused the volume with config key %q (value \"%d\"): %s (%s); "+
			"set %q to \"true\" to restore such volumes at EBS's default rate", snap, az, ConfigVolumeInitializationRate, rate, msg, code,
			ConfigVolumeInitializationFallback)
	}
	s.log.WithField("snapshotID", snap).Warnf("EC2 refused config key %q (value \"%d\") for the volume from snapshot %s in %s: %s (%s); "+
		"restoring it at EBS's default rate, as %q allows", ConfigVolumeInitializationRate, rate, snap, az, msg, code, ConfigVolumeInitializationFallback)
	in.VolumeInitializationRate = nil
	if err := s.withRestoreToken(in, volumeTags); err != nil {
		return "", err
	}
	return s.createVolumeOnce(ctx, c, in)
}

// Restore sessions: one Velero plugin process serves one restore (core starts the plugins for
// each restore and stops them after), so a token drawn per process tells this restore from any
// other restore of the same snapshot.
var restoreSession = sync.OnceValues(newCreateToken)

// restoreToken is the ClientToken of the CreateVolume that restores a PV: a digest of this
// process's restore session and of the request, so that every attempt to restore the same PV in
// this restore, Velero's own retries included, is one request to EC2 and makes one volume.
func restoreToken(region string, in *ec2.CreateVolumeInput) (string, error) {
	session, err := restoreSession()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%s|%s|%s|%s|%d|%d|%t|%s|%d", session, region,
		aws.ToString(in.SnapshotId), aws.ToString(in.AvailabilityZone), in.VolumeType,
		aws.ToInt32(in.Iops), aws.ToInt32(in.Throughput), aws.ToBool(in.Encrypted), aws.ToString(in.KmsKeyId),
		aws.ToInt32(in.VolumeInitializationRate)))
	return hex.EncodeToString(sum[:restoreTokenBytes]), nil
}

// restoreTokenBytes is the size of a restore token's digest (EC2 takes tokens of up to 64 characters).
const restoreTokenBytes = 16

// restoreLookUpWait separates two rounds of a CreateVolume whose answers were all lost.
const restoreLookUpWait = 2 * time.Second

// createVolumeOnce sends in, which carries a ClientToken, until EC2 answers it or a look-up by
// the token's tag finds the volume a request made. EC2 makes one volume per token, so sending
// it again is safe; what matters is never to return without the volume a request may have made.
func (s *Snapshotter) createVolumeOnce(ctx context.Context, c ec2api.EC2, in *ec2.CreateVolumeInput) (string, error) {
	token, snap, az := aws.ToString(in.ClientToken), aws.ToString(in.SnapshotId), aws.ToString(in.AvailabilityZone)
	deadline := s.clock.Now().Add(s.createPatience)
	for {
		out, err := c.CreateVolume(ctx, in)
		if err == nil {
			return aws.ToString(out.VolumeId), nil
		}
		if !ec2api.IsAmbiguous(err) {
			return "", fmt.Errorf("creating a volume from snapshot %s in %s: %w", snap, az, err)
		}
		s.log.WithField("snapshotID", snap).WithError(err).Warn("CreateVolume may have taken effect; looking for the volume by its token")
		vols, lookErr := describeVolumes(ctx, c, &ec2.DescribeVolumesInput{Filters: []types.Filter{tagFilter(TagRestoreToken, token)}})
		if lookErr == nil && len(vols) > 0 {
			return aws.ToString(vols[0].VolumeId), nil
		}
		if s.clock.Now().After(deadline) {
			return "", fmt.Errorf("creating a volume from snapshot %s in %s: no answer from EC2 for %s, and no volume tagged %s=%s listed; "+
				"a volume may still appear with that tag: %w", snap, az, s.createPatience, TagRestoreToken, token, err)
		}
		if err := sleep(ctx, s.clock, restoreLookUpWait); err != nil {
			return "", err
		}
	}
}

// restorableSnapshot returns the snapshot itself when this region holds it, else its completed
// copy here. Without one, the error says what there is instead.
func (s *Snapshotter) restorableSnapshot(ctx context.Context, snapshotID string) (types.Snapshot, error) {
	here := s.cfg.Region
	snap, found, err := s.describeSnapshot(ctx, here, snapshotID)
	if err != nil {
		return types.Snapshot{}, err
	}
	if found {
		if snap.State != types.SnapshotStateCompleted {
			return types.Snapshot{}, fmt.Errorf("snapshot %s in %s is %s, not completed", snapshotID, here, snap.State)
		}
		return snap, nil
	}
	copies, err := copiesOf(ctx, s.clients, here, snapshotID)
	if err != nil {
		return types.Snapshot{}, err
	}
	var seen []string
	for _, c := range copies {
		if c.State == types.SnapshotStateCompleted {
			return c, nil
		}
		state := string(c.State)
		if c.State == types.SnapshotStatePending {
			state += " at " + aws.ToString(c.Progress)
		}
		if msg := aws.ToString(c.StateMessage); msg != "" {
			state += ": " + msg
		}
		seen = append(seen, fmt.Sprintf("copy %s is %s", aws.ToString(c.SnapshotId), state))
	}
	if len(seen) == 0 {
		return types.Snapshot{}, fmt.Errorf("snapshot %s is not in %s and has no copy there", snapshotID, here)
	}
	return types.Snapshot{}, fmt.Errorf("snapshot %s is not in %s and has no completed copy there (%s)", snapshotID, here, strings.Join(seen, "; "))
}

// restoreZone chooses the AZ of a restored volume: the location's restoreAvailabilityZone, else
// the backed-up volume's zone when this region has it available (a Local or Wavelength Zone
// included), else the AZ of this region with the same letter, else this region's first
// available AZ.
func (s *Snapshotter) restoreZone(ctx context.Context, volumeAZ string) (string, error) {
	if s.cfg.RestoreAvailabilityZone != "" {
		return s.cfg.RestoreAvailabilityZone, nil
	}
	all, standard, err := s.availableZones(ctx)
	if err != nil {
		return "", err
	}
	if slices.Contains(all, volumeAZ) {
		return volumeAZ, nil
	}
	if len(standard) == 0 {
		return "", fmt.Errorf("region %s has no available availability zone", s.cfg.Region)
	}
	if volumeAZ != "" {
		if same := s.cfg.Region + volumeAZ[len(volumeAZ)-1:]; slices.Contains(standard, same) {
			return same, nil
		}
	}
	return standard[0], nil
}

// ValidateRestoreZone checks that the location's restoreAvailabilityZone is an available zone of
// its region.
func (s *Snapshotter) ValidateRestoreZone(ctx context.Context) error {
	az := s.cfg.RestoreAvailabilityZone
	if az == "" {
		return nil
	}
	all, _, err := s.availableZones(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(all, az) {
		return fmt.Errorf("config key %q: %q is not an available zone of %s (available: %s)",
			ConfigRestoreAvailabilityZone, az, s.cfg.Region, strings.Join(all, ", "))
	}
	return nil
}

// availableZones lists the region's available zones, sorted: all of them, and the standard
// AZs among them (not Local or Wavelength Zones). EC2 is asked once per process.
func (s *Snapshotter) availableZones(ctx context.Context) (all, standard []string, err error) {
	s.mu.Lock()
	zones := s.zones
	s.mu.Unlock()
	if zones == nil {
		c, err := s.clients(ctx, s.cfg.Region)
		if err != nil {
			return nil, nil, err
		}
		out, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
		if err != nil {
			return nil, nil, fmt.Errorf("listing availability zones of %s: %w", s.cfg.Region, err)
		}
		zones = out.AvailabilityZones
		s.mu.Lock()
		s.zones = zones
		s.mu.Unlock()
	}
	for _, z := range zones {
		if z.State != types.AvailabilityZoneStateAvailable {
			continue
		}
		name := aws.ToString(z.ZoneName)
		all = append(all, name)
		if z.ZoneType == nil || *z.ZoneType == "availability-zone" {
			standard = append(standard, name)
		}
	}
	sort.Strings(all)
	sort.Strings(standard)
	return all, standard, nil
}

// VolumeZone returns the AZ of a volume: remembered when this process created it, else described.
func (s *Snapshotter) VolumeZone(ctx context.Context, volumeID string) (string, error) {
	s.mu.Lock()
	az, ok := s.restored[volumeID]
	s.mu.Unlock()
	if ok {
		return az, nil
	}
	vol, err := s.describeVolume(ctx, volumeID)
	if err != nil {
		return "", err
	}
	return aws.ToString(vol.AvailabilityZone), nil
}

// Tags by which Kubernetes' AWS integrations tell which cluster owns a volume.
const (
	clusterTagPrefix = "kubernetes.io/cluster/"
	legacyClusterTag = "KubernetesCluster"
)

// clusterTags mark a restored volume as owned by this cluster, named by AWS_CLUSTER_NAME in the
// Velero server's environment, as the upstream plugin does.
func (s *Snapshotter) clusterTags() map[string]string {
	if s.clusterName == "" {
		return nil
	}
	return map[string]string{clusterTagPrefix + s.clusterName: "owned", legacyClusterTag: s.clusterName}
}

// restoredVolumeTags are a snapshot's tags that a volume restored from it keeps: not the
// plugin's own, and not the backed-up cluster's ownership when this cluster claims the volume.
func restoredVolumeTags(snapshotTags map[string]string, claimed bool) map[string]string {
	_, kept := splitByPrefix(snapshotTags, tagPrefix)
	if claimed {
		_, kept = splitByPrefix(kept, clusterTagPrefix, legacyClusterTag)
	}
	return kept
}

// int32Of returns v, else the number in tag, else nil.
func int32Of(v *int64, tag string) *int32 {
	if v != nil {
		return aws.Int32(int32(*v))
	}
	if n, err := strconv.Atoi(tag); err == nil && n > 0 {
		return aws.Int32(int32(n))
	}
	return nil
}
