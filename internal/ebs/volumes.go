package ebs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// volumeUnits is the unit of a restored volume's progress: 1 when it is usable.
const volumeUnits = "volume"

// VolumeWatcher follows restored volumes until EC2 reports them usable. Volumes restored from
// one backup carry its velero.io/backup tag, so one DescribeVolumes per region and cache lifetime
// answers every operation of a restore.
type VolumeWatcher struct {
	clients ec2api.Regional
	settings

	mu    sync.Mutex
	views map[volumeViewKey]*volumeView
}

type volumeViewKey struct{ region, backup, location string }

type volumeView struct {
	fetched time.Time
	volumes map[string]types.Volume
}

// NewVolumeWatcher returns a VolumeWatcher that reaches EC2 through clients.
func NewVolumeWatcher(clients ec2api.Regional, opts ...Option) *VolumeWatcher {
	return &VolumeWatcher{clients: clients, settings: newSettings(opts), views: map[volumeViewKey]*volumeView{}}
}

// Progress reports a restored volume of a restore. As for snapshots, EC2 being slow or failing
// never fails the operation. The volume is looked for with the credentials of the restore's
// locations (WithLocator), in order, until one lists it.
func (w *VolumeWatcher) Progress(ctx context.Context, operationID string, restore *velerov1.Restore) (velero.OperationProgress, error) {
	op, err := ParseVolumeOperationID(operationID)
	if err != nil {
		return velero.OperationProgress{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	p := velero.OperationProgress{Updated: now, NTotal: 1, OperationUnits: volumeUnits}
	places := fixedPlace(w.clients, nil)
	if w.locator != nil {
		if places, err = w.locator.RestorePlaces(ctx, restore, op.Region); err != nil {
			p.Completed = true
			p.Err = err.Error()
			return p, nil
		}
	}
	var vol types.Volume
	var found bool
	for _, pl := range places {
		if vol, found, err = w.volume(ctx, pl, op.Region, restore.Spec.BackupName, op.VolumeID); found || err != nil {
			break
		}
	}
	switch {
	case err != nil && ec2api.IsTransient(err):
		p.Description = "waiting for EC2: " + err.Error()
		return p, nil
	case err != nil:
		return velero.OperationProgress{}, err
	case !found && now.Sub(op.Issued) > w.notFoundGrace:
		p.Completed = true
		p.Err = fmt.Sprintf("restored volume %s does not exist in %s", op.VolumeID, op.Region)
		return p, nil
	case !found:
		p.Description = fmt.Sprintf("waiting for EC2 to list volume %s in %s", op.VolumeID, op.Region)
		return p, nil
	}
	p.Started = aws.ToTime(vol.CreateTime)
	where := aws.ToString(vol.AvailabilityZone)
	switch vol.State {
	case types.VolumeStateAvailable, types.VolumeStateInUse:
		p.Completed = true
		p.NCompleted = 1
		p.Description = fmt.Sprintf("volume %s in %s is %s", op.VolumeID, where, vol.State)
	case types.VolumeStateCreating:
		p.Description = fmt.Sprintf("volume %s in %s: creating", op.VolumeID, where)
	default:
		p.Completed = true
		p.Err = fmt.Sprintf("restored volume %s in %s is %s", op.VolumeID, where, vol.State)
	}
	return p, nil
}

// volume returns a restored volume: from the backup's volumes in region, described at most once
// per cache lifetime, else on its own (a volume restored from an untagged snapshot).
func (w *VolumeWatcher) volume(ctx context.Context, place Place, region, backup, volumeID string) (types.Volume, bool, error) {
	c, err := place.Clients(ctx, region)
	if err != nil {
		return types.Volume{}, false, err
	}
	key := volumeViewKey{region, backup, place.Location}
	v, ok := w.views[key]
	if !ok || w.clock.Since(v.fetched) >= w.cacheTTL {
		vols, err := describeVolumes(ctx, c, &ec2.DescribeVolumesInput{Filters: []types.Filter{tagFilter(TagBackup, backup)}}, ec2api.Bounded)
		if err != nil {
			return types.Volume{}, false, fmt.Errorf("describing the volumes restored from backup %s in %s: %w", backup, region, err)
		}
		v = &volumeView{fetched: w.clock.Now(), volumes: map[string]types.Volume{}}
		for _, vol := range vols {
			v.volumes[aws.ToString(vol.VolumeId)] = vol
		}
		w.views[key] = v
	}
	if vol, ok := v.volumes[volumeID]; ok {
		return vol, true, nil
	}
	vols, err := describeVolumes(ctx, c, &ec2.DescribeVolumesInput{VolumeIds: []string{volumeID}}, ec2api.Bounded)
	if ec2api.IsNotFound(err) || err == nil && len(vols) == 0 {
		return types.Volume{}, false, nil
	}
	if err != nil {
		return types.Volume{}, false, fmt.Errorf("describing volume %s in %s: %w", volumeID, region, err)
	}
	return vols[0], true, nil
}

// describeVolumes lists the volumes in, every page.
func describeVolumes(ctx context.Context, c ec2api.EC2, in *ec2.DescribeVolumesInput, optFns ...func(*ec2.Options)) ([]types.Volume, error) {
	if len(in.VolumeIds) == 0 {
		in.MaxResults = aws.Int32(describePageSize)
	}
	var all []types.Volume
	p := ec2.NewDescribeVolumesPaginator(c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, optFns...)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Volumes...)
	}
	return all, nil
}
