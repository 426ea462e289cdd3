package ebs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// Units of a restored volume's progress: without waiting for initialization, 1 volume when it
// is usable; while waiting, the percent of the volume initialized, 100 when EC2 reports it
// fully initialized (0 while it is created).
const (
	volumeUnits         = "volume"
	initializationUnits = "% initialized"
	fullyInitialized    = 100
)

// volumeStatusBatch is how many volume IDs one DescribeVolumeStatus names. EC2 documents no
// limit for the list; 200 is the most values EC2 takes in one filter, and keeps each answer small.
const volumeStatusBatch = 200

// VolumeWatcher follows restored volumes until EC2 reports them usable, or, for a location with
// waitForVolumeInitialization, fully initialized. Volumes restored from one backup carry its
// velero.io/backup tag, so one DescribeVolumes and one DescribeVolumeStatus per region,
// location and cache lifetime answer every operation of a restore.
type VolumeWatcher struct {
	clients ec2api.Regional
	settings

	mu    sync.Mutex
	views map[volumeViewKey]*volumeView
}

type volumeViewKey struct{ region, backup, location string }

// volumeView is one description of a backup's restored volumes in a region, through a location.
type volumeView struct {
	fetched time.Time
	volumes map[string]types.Volume
	// statuses are the view's volumes' status items, described once for the view when a
	// restore waits for initialization; asked names every volume EC2 was asked about.
	statuses map[string]types.VolumeStatusItem
	asked    map[string]bool
}

// NewVolumeWatcher returns a VolumeWatcher that reaches EC2 through clients.
func NewVolumeWatcher(clients ec2api.Regional, opts ...Option) *VolumeWatcher {
	return &VolumeWatcher{clients: clients, settings: newSettings(opts), views: map[volumeViewKey]*volumeView{}}
}

// Progress reports a restored volume of a restore: creating until EC2 reports it available;
// then, when the location that found it waits for initialization, initializing until EC2
// reports it 100% initialized. As for snapshots, EC2 being slow or failing never fails the
// operation. The volume is looked for with the credentials of the restore's locations
// (WithLocator), in order, until one lists it.
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
	var place Place
	for _, place = range places {
		if vol, found, err = w.volume(ctx, place, op.Region, restore.Spec.BackupName, op.VolumeID); found || err != nil {
			break
		}
	}
	var cfg RestoreConfig
	if err == nil && found {
		if cfg, err = parseRestore(place.Config); err != nil {
			p.Completed = true
			p.Err = fmt.Sprintf("location %s: %v", place.Location, err)
			return p, nil
		}
	}
	if cfg.WaitForInitialization {
		p.NTotal, p.OperationUnits = fullyInitialized, initializationUnits
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
	where := fmt.Sprintf("volume %s in %s", op.VolumeID, aws.ToString(vol.AvailabilityZone))
	switch vol.State {
	case types.VolumeStateAvailable, types.VolumeStateInUse:
		if cfg.WaitForInitialization {
			return w.initializing(ctx, p, place, op.Region, restore.Spec.BackupName, vol, where, cfg)
		}
		p.Completed = true
		p.NCompleted = 1
		p.Description = fmt.Sprintf("%s is %s", where, vol.State)
		if aws.ToString(vol.SnapshotId) != "" {
			p.Description += "; EBS goes on initializing it from its snapshot in the background"
		}
		if place.Config == nil && w.locator != nil {
			p.Description += "; the restore's location could not be read, so whether it waits for initialization is not known"
			if place.Note != "" {
				p.Description += ": " + place.Note
			}
		}
	case types.VolumeStateCreating:
		p.Description = where + ": creating"
	default:
		p.Completed = true
		p.Err = fmt.Sprintf("restored %s is %s", where, vol.State)
	}
	return p, nil
}

// initializing reports an available volume of a restore that waits for initialization: in
// progress at EC2's percent until EC2 reports it 100% initialized, or reports no initialization
// for a volume made from no snapshot. Throttling and a status EC2 does not list yet mean wait.
func (w *VolumeWatcher) initializing(ctx context.Context, p velero.OperationProgress, place Place, region, backup string,
	vol types.Volume, where string, cfg RestoreConfig) (velero.OperationProgress, error) {
	details, reported, err := w.initialization(ctx, place, region, backup, aws.ToString(vol.VolumeId))
	switch {
	case err != nil && ec2api.IsTransient(err):
		p.Description = fmt.Sprintf("%s is %s; waiting for EC2 to report its initialization: %v", where, vol.State, err)
		return p, nil
	case err != nil:
		return velero.OperationProgress{}, err
	case !reported:
		p.Description = fmt.Sprintf("%s is %s; waiting for EC2 to report its initialization", where, vol.State)
		return p, nil
	case details == nil && aws.ToString(vol.SnapshotId) == "":
		p.Completed = true
		p.NCompleted = p.NTotal
		p.Description = fmt.Sprintf("%s is %s; made from no snapshot, it has nothing to initialize", where, vol.State)
		return p, nil
	case details == nil:
		p.Description = fmt.Sprintf("%s is %s; waiting for EC2 to report the initialization from snapshot %s", where, vol.State, aws.ToString(vol.SnapshotId))
		return p, nil
	}
	pct := min(max(aws.ToInt64(details.Progress), 0), fullyInitialized)
	p.NCompleted = pct
	if pct == fullyInitialized {
		p.Completed = true
		p.Description = fmt.Sprintf("%s is %s and fully initialized (%s)", where, vol.State, initializationRate(details, vol, cfg))
		return p, nil
	}
	p.Description = fmt.Sprintf("%s: initializing %s, %d%%", where, initializationRate(details, vol, cfg), pct)
	if left := details.EstimatedTimeToCompleteInSeconds; left != nil {
		p.Description += fmt.Sprintf(", about %s left", time.Duration(*left)*time.Second)
	}
	return p, nil
}

// initializationRate says how EBS initializes a volume: at its provisioned rate (as EC2 lists
// it on the volume, else as the location asks for it), or EC2's kind of initialization.
func initializationRate(details *types.InitializationStatusDetails, vol types.Volume, cfg RestoreConfig) string {
	switch details.InitializationType {
	case types.InitializationTypeProvisionedRate:
		rate := aws.ToInt32(vol.VolumeInitializationRate)
		if rate == 0 {
			rate = cfg.InitializationRate
		}
		if rate == 0 {
			return "at a provisioned rate"
		}
		return fmt.Sprintf("at %d MiB/s (provisioned)", rate)
	case types.InitializationTypeDefault:
		return "at EBS's default rate"
	case types.InitializationTypeVolumeCopy:
		return "at the rate of volume copies"
	}
	return fmt.Sprintf("(%s)", details.InitializationType)
}

// initialization returns what EC2 reports of a restored volume's initialization; reported is
// false while EC2 lists no status for it. The statuses of the view's usable volumes are
// described once per view, in batches; a volume the view lacks, or one of a batch EC2 did not
// know yet, is asked about on its own.
func (w *VolumeWatcher) initialization(ctx context.Context, place Place, region, backup, volumeID string) (details *types.InitializationStatusDetails, reported bool, err error) {
	c, err := place.Clients(ctx, region)
	if err != nil {
		return nil, false, err
	}
	v := w.views[volumeViewKey{region, backup, place.Location}]
	if v.asked == nil {
		var usable []string
		for id, vol := range v.volumes {
			if vol.State == types.VolumeStateAvailable || vol.State == types.VolumeStateInUse {
				usable = append(usable, id)
			}
		}
		sort.Strings(usable)
		statuses, asked := map[string]types.VolumeStatusItem{}, map[string]bool{}
		for batch := range slices.Chunk(usable, volumeStatusBatch) {
			items, err := describeVolumeStatus(ctx, c, batch)
			if ec2api.IsNotFound(err) {
				continue // a volume EC2 does not know yet: each is asked about on its own
			}
			if err != nil {
				return nil, false, fmt.Errorf("describing the initialization of the volumes restored from backup %s in %s: %w", backup, region, err)
			}
			for _, id := range batch {
				asked[id] = true
			}
			for _, it := range items {
				statuses[aws.ToString(it.VolumeId)] = it
			}
		}
		v.statuses, v.asked = statuses, asked
	}
	if !v.asked[volumeID] {
		items, err := describeVolumeStatus(ctx, c, []string{volumeID})
		if ec2api.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("describing the initialization of volume %s in %s: %w", volumeID, region, err)
		}
		v.asked[volumeID] = true
		for _, it := range items {
			v.statuses[aws.ToString(it.VolumeId)] = it
		}
	}
	it, ok := v.statuses[volumeID]
	if !ok {
		return nil, false, nil
	}
	return it.InitializationStatusDetails, true, nil
}

// describeVolumeStatus lists the status items of the volumes ids, every page.
func describeVolumeStatus(ctx context.Context, c ec2api.EC2, ids []string) ([]types.VolumeStatusItem, error) {
	var all []types.VolumeStatusItem
	p := ec2.NewDescribeVolumeStatusPaginator(c, &ec2.DescribeVolumeStatusInput{VolumeIds: ids})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, ec2api.Bounded)
		if err != nil {
			return nil, err
		}
		all = append(all, page.VolumeStatuses...)
	}
	return all, nil
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
