package restoring

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
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
	ebs.Settings

	mu    sync.Mutex
	views map[volumeViewKey]*volumeView
}

type volumeViewKey struct{ region, backup, location string }

// volumeView is one description of a backup's restored volumes in a region, through a location.
// A description that failed answers the restore's other operations with its error for the
// view's lifetime, as a successful one answers with the volumes, so that EC2 refusing or
// throttling one read does not cost every operation of a reconcile its own retries.
type volumeView struct {
	fetched time.Time
	volumes map[string]types.Volume
	// err is the description that failed; statusErr the description of the initialization.
	err, statusErr error
	// statuses are the view's volumes' status items, described once for the view when a
	// restore waits for initialization; asked names every volume EC2 was asked about.
	statuses map[string]types.VolumeStatusItem
	asked    map[string]bool
}

// NewVolumeWatcher returns a VolumeWatcher that reaches EC2 through clients.
func NewVolumeWatcher(clients ec2api.Regional, opts ...ebs.Option) *VolumeWatcher {
	return &VolumeWatcher{clients: clients, Settings: ebs.NewSettings(opts), views: map[volumeViewKey]*volumeView{}}
}

// Progress reports a restored volume of a restore, as decideVolumeProgress decides from what
// readVolume read: creating until EC2 reports it available; then, when the location that found
// it waits for initialization, initializing until EC2 reports it 100% initialized. As for
// snapshots, EC2 being slow or failing never fails the operation. The volume is looked for with
// the credentials of the restore's locations (WithLocator), in order, until one lists it.
func (w *VolumeWatcher) Progress(ctx context.Context, operationID string, restore *velerov1.Restore) (velero.OperationProgress, error) {
	op, err := model.ParseVolumeOperationID(operationID)
	if err != nil {
		return velero.OperationProgress{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := w.readVolume(ctx, op, restore)
	d := decideVolumeProgress(seen, op, w.NotFoundGrace)
	if d.readInitialization {
		seen.initRead = true
		seen.initialization, seen.reported, seen.initErr = w.initialization(ctx, seen.place, op.Region, restore.Spec.BackupName, op.VolumeID)
		d = decideVolumeProgress(seen, op, w.NotFoundGrace)
	}
	return d.progress, d.err
}

// readVolume reads the volume of op through the restore's places, in order, until one lists it.
func (w *VolumeWatcher) readVolume(ctx context.Context, op model.VolumeOperation, restore *velerov1.Restore) volumeSeen {
	seen := volumeSeen{at: w.Clock.Now(), located: w.Locator != nil}
	places := ebs.FixedPlace(w.clients, nil)
	if w.Locator != nil {
		if places, seen.placesErr = w.Locator.RestorePlaces(ctx, restore, op.Region); seen.placesErr != nil {
			return seen
		}
	}
	for _, seen.place = range places {
		if seen.vol, seen.found, seen.err = w.volume(ctx, seen.place, op.Region, restore.Spec.BackupName, op.VolumeID); seen.found || seen.err != nil {
			break
		}
	}
	return seen
}

// watchReadAttempts is how many times the watcher tries each read that EC2 throttles or does
// not answer: Bounded's backoff, at most a second between attempts, rides out several
// throttled answers in a row well within ec2api.ItemActionCallTimeout.
const watchReadAttempts = 6

// watchRead is the per-call option of the watcher's reads: ec2api.Bounded, with
// watchReadAttempts attempts.
func watchRead(o *ec2.Options) {
	ec2api.Bounded(o)
	o.Retryer = retry.AddWithMaxAttempts(o.Retryer, watchReadAttempts)
}

// initialization returns what EC2 reports of a restored volume's initialization; reported is
// false while EC2 lists no status for it. The statuses of the view's usable volumes are
// described once per view, in batches; a volume the view lacks, or one of a batch EC2 did not
// know yet, is asked about on its own.
func (w *VolumeWatcher) initialization(ctx context.Context, place ebs.Place, region, backup, volumeID string) (details *types.InitializationStatusDetails, reported bool, err error) {
	c, err := place.Clients(ctx, region)
	if err != nil {
		return nil, false, err
	}
	v := w.views[volumeViewKey{region, backup, place.Location}]
	if v.statusErr != nil {
		return nil, false, v.statusErr
	}
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
				v.statusErr = fmt.Errorf("describing the initialization of the volumes restored from backup %s in %s: %w", backup, region, err)
				return nil, false, v.statusErr
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
		page, err := p.NextPage(ctx, watchRead)
		if err != nil {
			return nil, err
		}
		all = append(all, page.VolumeStatuses...)
	}
	return all, nil
}

// volume returns a restored volume: from the backup's volumes in region, described at most once
// per cache lifetime, else on its own (a volume restored from an untagged snapshot).
func (w *VolumeWatcher) volume(ctx context.Context, place ebs.Place, region, backup, volumeID string) (types.Volume, bool, error) {
	c, err := place.Clients(ctx, region)
	if err != nil {
		return types.Volume{}, false, err
	}
	key := volumeViewKey{region, backup, place.Location}
	v, ok := w.views[key]
	if !ok || w.Clock.Since(v.fetched) >= w.CacheTTL {
		vols, err := describeVolumes(ctx, c, &ec2.DescribeVolumesInput{Filters: []types.Filter{ebs.TagFilter(model.TagBackup, backup)}}, watchRead)
		v = &volumeView{fetched: w.Clock.Now(), volumes: map[string]types.Volume{}}
		if err != nil {
			v.err = fmt.Errorf("describing the volumes restored from backup %s in %s: %w", backup, region, err)
		}
		for _, vol := range vols {
			v.volumes[aws.ToString(vol.VolumeId)] = vol
		}
		w.views[key] = v
	}
	if v.err != nil {
		return types.Volume{}, false, v.err
	}
	if vol, ok := v.volumes[volumeID]; ok {
		return vol, true, nil
	}
	vols, err := describeVolumes(ctx, c, &ec2.DescribeVolumesInput{VolumeIds: []string{volumeID}}, watchRead)
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
		in.MaxResults = aws.Int32(ebs.DescribePageSize)
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
