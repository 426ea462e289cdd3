// Package restoring creates volumes from a backup's snapshots or their completed copies (the
// VolumeSnapshotter's CreateVolumeFromSnapshot) and follows each restored volume until it is
// usable (the RestoreItemAction's Progress), each reading EC2, deciding in a pure function
// (decideRestore, decideVolumeProgress), then acting.
package restoring

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Restorer creates volumes from the snapshots Velero recorded for one VolumeSnapshotLocation,
// or from their copies in the location's region.
type Restorer struct {
	cfg     model.Config
	clients ec2api.Regional
	ebs.Settings

	mu       sync.Mutex
	restored map[string]string // volume ID -> AZ of the volumes this process created
	zones    []types.AvailabilityZone
}

// NewRestorer returns a Restorer for the location configured by cfg.
func NewRestorer(cfg model.Config, clients ec2api.Regional, opts ...ebs.Option) *Restorer {
	return &Restorer{cfg: cfg, clients: clients, Settings: ebs.NewSettings(opts), restored: map[string]string{}}
}

// CreateVolumeFromSnapshot creates a volume from a snapshot Velero recorded at backup. In the
// snapshot's own region it restores from the snapshot; in the copy region, from its completed
// copy. When Velero passes no zone, a restore in the snapshot's own region uses the zone the
// backed-up volume was in. It returns the new volume's ID; VolumeZone then tells its AZ.
//
// It makes the requests decideRestore asks for, one decision after another, and decides
// nothing itself.
func (s *Restorer) CreateVolumeFromSnapshot(ctx context.Context, snapshotID, volumeType, volumeAZ string, iops *int64) (string, error) {
	req := restoreRequest{snapshotID: snapshotID, volumeType: volumeType, volumeAZ: volumeAZ, iops: iops}
	pol := restorePolicy{cfg: s.cfg, clusterName: s.ClusterName, patience: s.CreatePatience, volumeTags: s.VolumeTags, from: s.RestoreSource}
	var seen restoreSeen
	seen.session, seen.sessionErr = restoreSession()
	for {
		plan := decideRestore(seen, req, pol, s.Clock.Now())
		for _, w := range plan.warnings {
			log := s.Log.WithField("snapshotID", snapshotID)
			if w.err != nil {
				log = log.WithError(w.err)
			}
			log.Warn(w.msg)
		}
		if plan.done() {
			if plan.err != nil {
				return "", plan.err
			}
			s.mu.Lock()
			s.restored[plan.volumeID] = plan.zone
			s.mu.Unlock()
			return plan.volumeID, nil
		}
		for _, a := range plan.next {
			if err := s.restoreAct(ctx, &seen, snapshotID, a); err != nil {
				return "", err
			}
		}
	}
}

// restoreAct makes the request a of a restore of snapshotID and records its answer in seen.
// It returns an error only when the call's context ends during a wait.
func (s *Restorer) restoreAct(ctx context.Context, seen *restoreSeen, snapshotID string, a restoreAction) error {
	here := s.cfg.Region
	switch a.step {
	case readRecorded:
		snap, found, err := ebs.DescribeSnapshot(ctx, s.clients, here, snapshotID)
		seen.recordedRead, seen.err = true, err
		if found {
			seen.recorded = &snap
		}
	case readCopies:
		seen.copiesRead = true
		seen.copies, seen.err = ebs.CopiesOf(ctx, s.clients, here, snapshotID)
	case readZones:
		seen.zonesRead = true
		seen.zones, seen.err = s.zoneList(ctx)
	case sendCreate:
		c, err := s.clients(ctx, here)
		if err != nil {
			seen.err = err
			return nil
		}
		sent := createSent{in: a.in, at: s.Clock.Now()}
		out, err := c.CreateVolume(ctx, a.in)
		if sent.err = err; err == nil {
			sent.volumeID = aws.ToString(out.VolumeId)
		}
		seen.sent = append(seen.sent, sent)
	case lookUpToken:
		last := &seen.sent[len(seen.sent)-1]
		last.lookedUp = true
		c, err := s.clients(ctx, here)
		if err != nil {
			return nil // as a look-up that found nothing
		}
		vols, err := describeVolumes(ctx, c, &ec2.DescribeVolumesInput{Filters: []types.Filter{ebs.TagFilter(model.TagRestoreToken, aws.ToString(a.in.ClientToken))}})
		if err == nil && len(vols) > 0 {
			last.listed = aws.ToString(vols[0].VolumeId)
		}
	case waitRound:
		return ebs.Sleep(ctx, s.Clock, a.wait)
	}
	return nil
}

// Restore sessions: one Velero plugin process serves one restore (core starts the plugins for
// each restore and stops them after), so a token drawn per process tells this restore from any
// other restore of the same snapshot.
var restoreSession = sync.OnceValues(ebs.NewCreateToken)

// ValidateRestoreZone checks that the location's restoreAvailabilityZone is an available zone of
// its region.
func (s *Restorer) ValidateRestoreZone(ctx context.Context) error {
	az := s.cfg.RestoreAvailabilityZone
	if az == "" {
		return nil
	}
	zones, err := s.zoneList(ctx)
	if err != nil {
		return err
	}
	all, _ := availableZones(zones)
	if !slices.Contains(all, az) {
		return fmt.Errorf("config key %q: %q is not an available zone of %s (available: %s)",
			model.ConfigRestoreAvailabilityZone, az, s.cfg.Region, strings.Join(all, ", "))
	}
	return nil
}

// zoneList lists the region's availability zones. EC2 is asked once per process.
func (s *Restorer) zoneList(ctx context.Context) ([]types.AvailabilityZone, error) {
	s.mu.Lock()
	zones := s.zones
	s.mu.Unlock()
	if zones != nil {
		return zones, nil
	}
	c, err := s.clients(ctx, s.cfg.Region)
	if err != nil {
		return nil, err
	}
	out, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return nil, fmt.Errorf("listing availability zones of %s: %w", s.cfg.Region, err)
	}
	s.mu.Lock()
	s.zones = out.AvailabilityZones
	s.mu.Unlock()
	return out.AvailabilityZones, nil
}

// VolumeZone returns the AZ of a volume: remembered when this process created it, else described.
func (s *Restorer) VolumeZone(ctx context.Context, volumeID string) (string, error) {
	s.mu.Lock()
	az, ok := s.restored[volumeID]
	s.mu.Unlock()
	if ok {
		return az, nil
	}
	vol, err := ebs.DescribeVolume(ctx, s.clients, s.cfg.Region, s.cfg.Credentials, volumeID)
	if err != nil {
		return "", err
	}
	return aws.ToString(vol.AvailabilityZone), nil
}
