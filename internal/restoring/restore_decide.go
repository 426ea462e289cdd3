package restoring

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// A restore (CreateVolumeFromSnapshot) reads EC2 as its decision asks, recording every answer
// in a restoreSeen; decideRestore, a pure function of what it has seen, Velero's request, the
// location's restore policy and the time, answers with the volume, the error, or the next
// requests; the act (restore.go) makes them, records their answers and asks again. This file
// holds the decision and the types it reads and answers with.

// restoreRequest is Velero's CreateVolumeFromSnapshot: the snapshot recorded at backup, and the
// backed-up PV's volume type, zone and IOPS (each may be empty).
type restoreRequest struct {
	snapshotID, volumeType, volumeAZ string
	iops                             *int64
}

// restorePolicy is what the location's config and the plugin's settings say about restores.
type restorePolicy struct {
	cfg model.Config
	// clusterName is AWS_CLUSTER_NAME in the Velero server's environment; "" when unset.
	clusterName string
	// patience bounds how long CreateVolume answers that are lost are ridden out.
	patience time.Duration
	// volumeTags are tags every restored volume carries from its creation (WithVolumeTags).
	volumeTags map[string]string
	// from is which snapshots the volume may be made from (WithRestoreSource).
	from model.RestoreSource
}

// restoreSeen is what a restore has read from EC2 and the answers to its requests, in order.
type restoreSeen struct {
	// session is this process's restore session; sessionErr why none could be drawn.
	session    string
	sessionErr error
	// err is a read that failed, or clients that could not be made.
	err error
	// recordedRead says the recorded snapshot was asked for; recorded is it, nil when the
	// location's region does not list it.
	recordedRead bool
	recorded     *types.Snapshot
	// copiesRead says its copies in the region were listed; copies are they.
	copiesRead bool
	copies     []types.Snapshot
	// zonesRead says the region's zones were listed; zones are they.
	zonesRead bool
	zones     []types.AvailabilityZone
	// sent are the CreateVolume requests made, with their answers.
	sent []createSent
}

// createSent is one CreateVolume request and what became of it.
type createSent struct {
	in *ec2.CreateVolumeInput
	// at is when it was sent.
	at time.Time
	// volumeID is EC2's answer; err the failure when none came.
	volumeID string
	err      error
	// lookedUp says the volume was then looked for by the request's token; listed is the one
	// found, "" when none was.
	lookedUp bool
	listed   string
}

// restoreStep is a request a restore makes.
type restoreStep int

const (
	// readRecorded describes the snapshot Velero recorded in the location's region.
	readRecorded restoreStep = iota
	// readCopies lists the region's copies of the recorded snapshot.
	readCopies
	// readZones lists the region's availability zones.
	readZones
	// sendCreate sends CreateVolume with the action's input.
	sendCreate
	// lookUpToken looks for the volume tagged with the action's input's restore token.
	lookUpToken
	// waitRound waits before the action's input is sent again.
	waitRound
)

// restoreAction is one request, or a wait, of a restore.
type restoreAction struct {
	step restoreStep
	in   *ec2.CreateVolumeInput
	wait time.Duration
}

// restoreWarning is a warning a restore logs about its snapshot, with the error behind it.
type restoreWarning struct {
	msg string
	err error
}

// restorePlan is what decideRestore answers: the volume made and its zone, or the error that
// ends the restore; else the warnings to log and the requests to make next, in order.
type restorePlan struct {
	volumeID, zone string
	err            error
	warnings       []restoreWarning
	next           []restoreAction
}

// done reports whether the restore has its answer.
func (p restorePlan) done() bool { return len(p.next) == 0 }

// restoreLookUpWait separates two rounds of a CreateVolume whose answers were all lost.
const restoreLookUpWait = 2 * time.Second

// decideRestore decides a restore's next step from what it has seen. The volume comes from the
// recorded snapshot when the location's region holds it, else from its first completed copy
// there, of those the policy's source takes; in the zone the location names, else the backed-up volume's (the zone recorded at
// backup when Velero passes none, in the snapshot's own region), else the same letter, else
// the region's first; with the backed-up volume's settings. Every request carries a restore
// token, as its ClientToken and tag: a lost answer is followed by a look-up by that tag and the
// same request again, with the same token, until the patience runs out. A volume
// initialization rate EC2 refuses fails the restore, or, with the fallback set, makes the volume
// again without the rate, as a new request with its own token.
func decideRestore(seen restoreSeen, req restoreRequest, pol restorePolicy, now time.Time) restorePlan {
	if !awsid.IsSnapshotID(req.snapshotID) {
		return restorePlan{err: fmt.Errorf("%q is not an EBS snapshot ID", req.snapshotID)}
	}
	if seen.err != nil {
		return restorePlan{err: seen.err}
	}
	snap, plan := restoreSource(seen, req.snapshotID, pol.cfg.Region, pol.from)
	if snap == nil {
		return plan
	}
	tags := model.TagMap(snap.Tags)
	volumeAZ := req.volumeAZ
	if volumeAZ == "" && aws.ToString(snap.SnapshotId) == req.snapshotID {
		// In the volume's own region, the zone recorded at backup; a copy region keeps the
		// zone choice of a volume of unknown zone.
		volumeAZ = tags[model.TagVolumeAZ]
	}
	az := pol.cfg.RestoreAvailabilityZone
	if az == "" {
		if !seen.zonesRead {
			return restorePlan{next: []restoreAction{{step: readZones}}}
		}
		var err error
		if az, err = restoreZone(pol.cfg.Region, seen.zones, volumeAZ); err != nil {
			return restorePlan{err: err}
		}
	}
	if seen.sessionErr != nil {
		return restorePlan{err: seen.sessionErr}
	}
	in := volumeRequest(snap, tags, req, pol, az)
	volumeTags := restoredVolumeTags(tags, pol.clusterName != "")
	withRestoreToken(in, seen.session, pol, volumeTags)
	return decideCreate(seen.sent, in, seen.session, pol, volumeTags, now)
}

// restoreSource returns the snapshot to restore from: the recorded one when from takes it and
// the region holds it completed, else the first completed copy there that from takes. Without
// one, plan says what to read next, or the error saying what there is instead.
func restoreSource(seen restoreSeen, snapshotID, here string, from model.RestoreSource) (*types.Snapshot, restorePlan) {
	switch {
	case from.CopiesOnly:
	case !seen.recordedRead:
		return nil, restorePlan{next: []restoreAction{{step: readRecorded}}}
	case seen.recorded != nil && seen.recorded.State != types.SnapshotStateCompleted:
		return nil, restorePlan{err: fmt.Errorf("snapshot %s in %s is %s, not completed", snapshotID, here, seen.recorded.State)}
	case seen.recorded != nil:
		return seen.recorded, restorePlan{}
	}
	if !seen.copiesRead {
		return nil, restorePlan{next: []restoreAction{{step: readCopies}}}
	}
	var states []string
	for i, c := range seen.copies {
		if !from.Takes(c, snapshotID) {
			states = append(states, fmt.Sprintf("%s is no %s (%s=%q, %s=%q)", aws.ToString(c.SnapshotId), from.Kind(),
				model.TagSourceSnapshotID, model.TagValue(c.Tags, model.TagSourceSnapshotID), model.TagSourceAccount, model.TagValue(c.Tags, model.TagSourceAccount)))
			continue
		}
		if c.State == types.SnapshotStateCompleted {
			return &seen.copies[i], restorePlan{}
		}
		state := string(c.State)
		if c.State == types.SnapshotStatePending {
			state += " at " + aws.ToString(c.Progress)
		}
		if msg := aws.ToString(c.StateMessage); msg != "" {
			state += ": " + msg
		}
		states = append(states, fmt.Sprintf("copy %s is %s", aws.ToString(c.SnapshotId), state))
	}
	if from.CopiesOnly {
		// A drill of the copies: the recorded snapshot, wherever it is, is not asked about.
		if len(states) == 0 {
			return nil, restorePlan{err: fmt.Errorf("snapshot %s has no %s in %s", snapshotID, from.Kind(), here)}
		}
		return nil, restorePlan{err: fmt.Errorf("snapshot %s has no completed %s in %s (%s)", snapshotID, from.Kind(), here, strings.Join(states, "; "))}
	}
	if len(states) == 0 {
		return nil, restorePlan{err: fmt.Errorf("snapshot %s is not in %s and has no copy there", snapshotID, here)}
	}
	return nil, restorePlan{err: fmt.Errorf("snapshot %s is not in %s and has no completed copy there (%s)", snapshotID, here, strings.Join(states, "; "))}
}

// decideCreate decides the CreateVolume requests of in, given those sent so far: the first
// answer ends the restore; a lost or throttled one is looked up by its token, then sent again,
// the same request, after restoreLookUpWait until the patience, counted from the first request
// of that token, runs out; a refused rate ends the restore, or, with the
// fallback, starts a round without the rate. Once a request of the round may have taken
// effect, the restore's error names the tag of the volume that may appear.
func decideCreate(sent []createSent, in *ec2.CreateVolumeInput, session string, pol restorePolicy, volumeTags map[string]string, now time.Time) restorePlan {
	var warnings []restoreWarning
	snap, az := aws.ToString(in.SnapshotId), aws.ToString(in.AvailabilityZone)
	if code, msg, refused := rateRefused(sent); refused {
		rate := aws.ToInt32(in.VolumeInitializationRate)
		if !pol.cfg.Restore.InitializationFallback {
			return restorePlan{err: fmt.Errorf("creating a volume from snapshot %s in %s: EC2 refused the volume with config key %q (value \"%d\"): %s (%s); "+
				"set %q to \"true\" to restore such volumes at EBS's default rate", snap, az, model.ConfigVolumeInitializationRate, rate, msg, code,
				model.ConfigVolumeInitializationFallback)}
		}
		withoutRate := *in
		withoutRate.VolumeInitializationRate = nil
		withRestoreToken(&withoutRate, session, pol, volumeTags)
		if len(sentWith(sent, &withoutRate)) == 0 {
			warnings = append(warnings, restoreWarning{msg: fmt.Sprintf("EC2 refused config key %q (value \"%d\") for the volume from snapshot %s in %s: %s (%s); "+
				"restoring it at EBS's default rate, as %q allows", model.ConfigVolumeInitializationRate, rate, snap, az, msg, code, model.ConfigVolumeInitializationFallback)})
		}
		in = &withoutRate
	}
	round := sentWith(sent, in)
	if len(round) == 0 {
		return restorePlan{warnings: warnings, next: []restoreAction{{step: sendCreate, in: in}}}
	}
	last := round[len(round)-1]
	switch {
	case last.err == nil:
		return restorePlan{volumeID: last.volumeID, zone: az}
	case last.listed != "":
		return restorePlan{volumeID: last.listed, zone: az}
	case mayHaveMade(last.err) && !last.lookedUp:
		warnings = append(warnings, restoreWarning{msg: "CreateVolume may have taken effect; looking for the volume by its token", err: last.err})
		return restorePlan{warnings: warnings, next: []restoreAction{{step: lookUpToken, in: last.in}}}
	case !mayHaveMade(last.err):
		return restorePlan{err: createFailed(in, round, "", last.err)}
	case now.After(round[0].at.Add(pol.patience)):
		return restorePlan{err: createFailed(in, round, fmt.Sprintf("no volume from EC2 within %s, every answer lost or throttled", pol.patience), last.err)}
	}
	return restorePlan{next: []restoreAction{{step: waitRound, wait: restoreLookUpWait}, {step: sendCreate, in: in}}}
}

// createFailed is the error ending a restore whose CreateVolume requests of in's token, round,
// got no volume: why (or EC2's refusal, err) and, when one of them may have taken effect, the
// tag by which the volume it made may still appear.
func createFailed(in *ec2.CreateVolumeInput, round []createSent, why string, err error) error {
	msg := fmt.Sprintf("creating a volume from snapshot %s in %s", aws.ToString(in.SnapshotId), aws.ToString(in.AvailabilityZone))
	if why != "" {
		msg += ": " + why
	}
	if slices.ContainsFunc(round, func(s createSent) bool { return mayHaveMade(s.err) }) {
		msg += fmt.Sprintf(", and no volume tagged %s=%s listed; a volume may still appear with that tag", model.TagRestoreToken, aws.ToString(in.ClientToken))
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// mayHaveMade reports whether a CreateVolume that failed with err may have made its volume: its
// answer was lost, or it was throttled, which the SDK answers after its retries, and one of
// those attempts may have had its answer lost.
func mayHaveMade(err error) bool {
	return ec2api.IsAmbiguous(err) || ec2api.IsThrottle(err)
}

// sentWith returns the requests of sent that carry in's token.
func sentWith(sent []createSent, in *ec2.CreateVolumeInput) []createSent {
	var out []createSent
	for _, s := range sent {
		if aws.ToString(s.in.ClientToken) == aws.ToString(in.ClientToken) {
			out = append(out, s)
		}
	}
	return out
}

// rateRefusalCodes are EC2's answers that refuse a CreateVolume's parameters: for a request
// with a VolumeInitializationRate, the rate for that volume (too small a volume, a snapshot or
// region that does not support it, a rate out of range).
var rateRefusalCodes = []string{"InvalidParameterValue", "InvalidParameterCombination", "InvalidParameter", "UnsupportedOperation"}

// rateRefused returns EC2's code and message when a request of sent that asked for a volume
// initialization rate was refused for its parameters; refused is false otherwise (no rate
// asked, throttling, a lost answer, a credentials failure, another refusal). A refused
// request made no volume: EC2 answers a request whose token already made one with that volume.
func rateRefused(sent []createSent) (code, msg string, refused bool) {
	for _, s := range sent {
		var apiErr smithy.APIError
		if s.in.VolumeInitializationRate != nil && errors.As(s.err, &apiErr) && slices.Contains(rateRefusalCodes, ec2api.Code(s.err)) {
			return apiErr.ErrorCode(), apiErr.ErrorMessage(), true
		}
	}
	return "", "", false
}

// volumeRequest is the CreateVolume of a restore from snap (whose tags are tags) in zone az,
// without its token: the volume type Velero passes, else the one recorded at backup; IOPS and
// throughput as the type takes them; the location's initialization rate and KMS key.
func volumeRequest(snap *types.Snapshot, tags map[string]string, req restoreRequest, pol restorePolicy, az string) *ec2.CreateVolumeInput {
	volumeType := req.volumeType
	if volumeType == "" {
		volumeType = tags[model.TagVolumeType]
	}
	in := &ec2.CreateVolumeInput{
		AvailabilityZone: aws.String(az),
		SnapshotId:       snap.SnapshotId,
		VolumeType:       types.VolumeType(volumeType),
	}
	switch types.VolumeType(volumeType) {
	case types.VolumeTypeIo1, types.VolumeTypeIo2:
		in.Iops = int32Of(req.iops, tags[model.TagVolumeIOPS])
	case types.VolumeTypeGp3:
		in.Iops = int32Of(nil, tags[model.TagVolumeIOPS])
		in.Throughput = int32Of(nil, tags[model.TagVolumeThroughput])
	}
	if rate := pol.cfg.Restore.InitializationRate; rate != 0 {
		in.VolumeInitializationRate = aws.Int32(rate)
	}
	if pol.cfg.EBSKMSKeyID != "" {
		in.Encrypted = aws.Bool(true)
		in.KmsKeyId = aws.String(pol.cfg.EBSKMSKeyID)
	}
	return in
}

// withRestoreToken gives in its restore token, as its ClientToken and as the volume's tag, with
// the tags the policy gives every restored volume, the cluster's ownership tags and the volume's
// other tags.
func withRestoreToken(in *ec2.CreateVolumeInput, session string, pol restorePolicy, volumeTags map[string]string) {
	token := restoreTokenOf(session, pol.cfg.Region, in, pol.volumeTags)
	in.ClientToken = aws.String(token)
	vt, _ := model.MergeTags(model.MaxTags, map[string]string{model.TagRestoreToken: token}, pol.volumeTags, clusterTags(pol.clusterName), volumeTags)
	in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeVolume, Tags: vt}}
}

// restoreTokenOf is the ClientToken of the CreateVolume in of a restore session in region,
// whose volume carries volumeTags from its creation: a digest of the session and of the
// request, so that every attempt to restore the same PV in this restore, Velero's own retries
// included, is one request to EC2 and makes one volume, and a restore asking for other tags
// never gets another restore's volume.
func restoreTokenOf(session, region string, in *ec2.CreateVolumeInput, volumeTags map[string]string) string {
	request := fmt.Appendf(nil, "%s|%s|%s|%s|%s|%d|%d|%t|%s|%d", session, region,
		aws.ToString(in.SnapshotId), aws.ToString(in.AvailabilityZone), in.VolumeType,
		aws.ToInt32(in.Iops), aws.ToInt32(in.Throughput), aws.ToBool(in.Encrypted), aws.ToString(in.KmsKeyId),
		aws.ToInt32(in.VolumeInitializationRate))
	for _, k := range slices.Sorted(maps.Keys(volumeTags)) {
		request = fmt.Appendf(request, "|%q=%q", k, volumeTags[k])
	}
	sum := sha256.Sum256(request)
	return hex.EncodeToString(sum[:restoreTokenBytes])
}

// restoreTokenBytes is the size of a restore token's digest (EC2 takes tokens of up to 64 characters).
const restoreTokenBytes = 16

// restoreZone chooses the AZ of a restored volume among zones, the region's: the backed-up
// volume's zone when the region has it available (a Local or Wavelength Zone included), else
// the AZ of the region with the same letter, else the region's first available AZ.
func restoreZone(region string, zones []types.AvailabilityZone, volumeAZ string) (string, error) {
	all, standard := availableZones(zones)
	if slices.Contains(all, volumeAZ) {
		return volumeAZ, nil
	}
	if len(standard) == 0 {
		return "", fmt.Errorf("region %s has no available availability zone", region)
	}
	if volumeAZ != "" {
		if same := region + volumeAZ[len(volumeAZ)-1:]; slices.Contains(standard, same) {
			return same, nil
		}
	}
	return standard[0], nil
}

// availableZones names the available zones among zones, sorted: all of them, and the standard
// AZs among them (not Local or Wavelength Zones).
func availableZones(zones []types.AvailabilityZone) (all, standard []string) {
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
	return all, standard
}

// Tags by which Kubernetes' AWS integrations tell which cluster owns a volume.
const (
	clusterTagPrefix = "kubernetes.io/cluster/"
	legacyClusterTag = "KubernetesCluster"
)

// clusterTags mark a restored volume as owned by the cluster named clusterName
// (AWS_CLUSTER_NAME in the Velero server's environment), as the upstream plugin does; none
// when it is "".
func clusterTags(clusterName string) map[string]string {
	if clusterName == "" {
		return nil
	}
	return map[string]string{clusterTagPrefix + clusterName: "owned", legacyClusterTag: clusterName}
}

// restoredVolumeTags are a snapshot's tags that a volume restored from it keeps: not the
// plugin's own, and not the backed-up cluster's ownership when this cluster claims the volume.
func restoredVolumeTags(snapshotTags map[string]string, claimed bool) map[string]string {
	_, kept := model.SplitByPrefix(snapshotTags, model.TagPrefix)
	if claimed {
		_, kept = model.SplitByPrefix(kept, clusterTagPrefix, legacyClusterTag)
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
