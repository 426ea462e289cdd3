package restoring

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Units of a restored volume's progress: without waiting for initialization, 1 volume when it
// is usable; while waiting, the percent of the volume initialized, 100 when EC2 reports it
// fully initialized (0 while it is created).
const (
	volumeUnits         = "volume"
	initializationUnits = "% initialized"
	fullyInitialized    = 100
)

// The restore item action's Progress reads the restored volume (VolumeWatcher.readVolume),
// decides with decideVolumeProgress, a pure function of what it read, the operation and the
// time, and reads the volume's initialization only when that decision asks for it. This file
// holds the decision and the type it reads.

// volumeSeen is what one Progress of a restored volume read, and when the read began.
type volumeSeen struct {
	at time.Time
	// located says the places are the restore's locations (a Locator), whose config tells
	// whether the restore waits for initialization; placesErr why they could not be read.
	located   bool
	placesErr error
	// place is the location that listed the volume, else the last one asked.
	place ebs.Place
	// vol is the volume; found says a place listed it; err is the read that failed.
	vol   types.Volume
	found bool
	err   error
	// initRead says the volume's initialization was asked for; initialization is what EC2
	// reports of it, reported false while EC2 lists no status for the volume; initErr is the
	// read that failed.
	initRead       bool
	initialization *types.InitializationStatusDetails
	reported       bool
	initErr        error
}

// volumeDecision is what decideVolumeProgress answers: the progress to report, or the error
// that fails the operation; or that the volume's initialization must be read first.
type volumeDecision struct {
	progress           velero.OperationProgress
	err                error
	readInitialization bool
}

// decideVolumeProgress reports a restored volume: creating until EC2 reports it available;
// then, when the location that found it waits for initialization, initializing at EC2's
// percent until EC2 reports it 100% initialized (a volume made from no snapshot has nothing to
// initialize). A volume EC2 does not list is waited for notFoundGrace after the operation was
// opened. EC2 being slow or failing never fails the operation: a read that failed for a reason
// worth another try reports no figure for this poll (0 of 0, which Velero's describe does not
// show) and says why, since the figure of an earlier poll is not known to a new plugin process.
func decideVolumeProgress(seen volumeSeen, op model.VolumeOperation, notFoundGrace time.Duration) volumeDecision {
	p := velero.OperationProgress{Updated: seen.at, NTotal: 1, OperationUnits: volumeUnits}
	if seen.placesErr != nil {
		p.Completed = true
		p.Err = seen.placesErr.Error()
		return volumeDecision{progress: p}
	}
	var cfg model.RestoreConfig
	if seen.err == nil && seen.found {
		var err error
		if cfg, err = model.ParseRestore(seen.place.Config); err != nil {
			p.Completed = true
			p.Err = fmt.Sprintf("location %s: %v", seen.place.Location, err)
			return volumeDecision{progress: p}
		}
	}
	if cfg.WaitForInitialization {
		p.NTotal, p.OperationUnits = fullyInitialized, initializationUnits
	}
	switch {
	case seen.err != nil && ec2api.IsTransient(seen.err):
		p.Description = "waiting for EC2: " + seen.err.Error()
		return volumeDecision{progress: withoutFigure(p)}
	case seen.err != nil:
		return volumeDecision{err: seen.err}
	case !seen.found && seen.at.Sub(op.Issued) > notFoundGrace:
		p.Completed = true
		p.Err = fmt.Sprintf("restored volume %s does not exist in %s", op.VolumeID, op.Region)
		return volumeDecision{progress: p}
	case !seen.found:
		p.Description = fmt.Sprintf("waiting for EC2 to list volume %s in %s", op.VolumeID, op.Region)
		return volumeDecision{progress: p}
	}
	vol := seen.vol
	p.Started = aws.ToTime(vol.CreateTime)
	where := fmt.Sprintf("volume %s in %s", op.VolumeID, aws.ToString(vol.AvailabilityZone))
	switch vol.State {
	case types.VolumeStateAvailable, types.VolumeStateInUse:
		if cfg.WaitForInitialization {
			if !seen.initRead {
				return volumeDecision{readInitialization: true}
			}
			return decideInitialization(seen, p, where, cfg)
		}
		p.Completed = true
		p.NCompleted = 1
		p.Description = fmt.Sprintf("%s is %s", where, vol.State)
		if aws.ToString(vol.SnapshotId) != "" {
			p.Description += "; EBS goes on initializing it from its snapshot in the background"
		}
		if seen.place.Config == nil && seen.located {
			p.Description += "; the restore's location could not be read, so whether it waits for initialization is not known"
			if seen.place.Note != "" {
				p.Description += ": " + seen.place.Note
			}
		}
	case types.VolumeStateCreating:
		p.Description = where + ": creating"
	default:
		p.Completed = true
		p.Err = fmt.Sprintf("restored %s is %s", where, vol.State)
	}
	return volumeDecision{progress: p}
}

// decideInitialization reports an available volume of a restore that waits for
// initialization: in progress at EC2's percent until EC2 reports it 100% initialized, or
// reports no initialization for a volume made from no snapshot. A status EC2 does not list yet
// means wait; a read that failed for a reason worth another try reports no figure.
func decideInitialization(seen volumeSeen, p velero.OperationProgress, where string, cfg model.RestoreConfig) volumeDecision {
	vol, details := seen.vol, seen.initialization
	switch {
	case seen.initErr != nil && ec2api.IsTransient(seen.initErr):
		p.Description = fmt.Sprintf("%s is %s; waiting for EC2 to report its initialization: %v", where, vol.State, seen.initErr)
		return volumeDecision{progress: withoutFigure(p)}
	case seen.initErr != nil:
		return volumeDecision{err: seen.initErr}
	case !seen.reported:
		p.Description = fmt.Sprintf("%s is %s; waiting for EC2 to report its initialization", where, vol.State)
		return volumeDecision{progress: p}
	case details == nil && aws.ToString(vol.SnapshotId) == "":
		p.Completed = true
		p.NCompleted = p.NTotal
		p.Description = fmt.Sprintf("%s is %s; made from no snapshot, it has nothing to initialize", where, vol.State)
		return volumeDecision{progress: p}
	case details == nil:
		p.Description = fmt.Sprintf("%s is %s; waiting for EC2 to report the initialization from snapshot %s", where, vol.State, aws.ToString(vol.SnapshotId))
		return volumeDecision{progress: p}
	}
	pct := min(max(aws.ToInt64(details.Progress), 0), fullyInitialized)
	p.NCompleted = pct
	if pct == fullyInitialized {
		p.Completed = true
		p.Description = fmt.Sprintf("%s is %s and fully initialized (%s)", where, vol.State, initializationRate(details, vol, cfg))
		return volumeDecision{progress: p}
	}
	p.Description = fmt.Sprintf("%s: initializing %s, %d%%", where, initializationRate(details, vol, cfg), pct)
	if left := details.EstimatedTimeToCompleteInSeconds; left != nil {
		p.Description += fmt.Sprintf(", about %s left", time.Duration(*left)*time.Second)
	}
	return volumeDecision{progress: p}
}

// withoutFigure is p with no figure: Velero records whatever figure Progress returns, any
// error fails the operation for good, and a new plugin process does not know the figure it
// reported before, so a poll that could not read EC2 shows none rather than a wrong one.
func withoutFigure(p velero.OperationProgress) velero.OperationProgress {
	p.NCompleted, p.NTotal, p.OperationUnits = 0, 0, ""
	return p
}

// initializationRate says how EBS initializes a volume: at its provisioned rate (as EC2 lists
// it on the volume, else as the location asks for it), or EC2's kind of initialization.
func initializationRate(details *types.InitializationStatusDetails, vol types.Volume, cfg model.RestoreConfig) string {
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
