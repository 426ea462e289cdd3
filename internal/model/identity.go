package model

import (
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
)

// ClockSkew is the margin allowed between the clock of the Velero server's node and EC2's
// when a snapshot's start time is compared with the time its operation was opened. Nodes
// and EC2 keep time by NTP, within a second; a minute leaves room for a poorly synced node.
const ClockSkew = time.Minute

// BackupIdentity is what tells this install's backup from another of the same name: another
// cluster's, or an earlier one whose snapshots are still in the account.
type BackupIdentity struct {
	Name, UID string
	// Install is the identity of this Velero install (TagInstall); "" when unknown.
	Install string
	// started is when core started the backup; zero when unknown.
	started time.Time
}

func IdentityOf(b *velerov1.Backup) BackupIdentity {
	id := BackupIdentity{Name: b.Name, UID: string(b.UID)}
	if b.Status.StartTimestamp != nil {
		id.started = b.Status.StartTimestamp.Time
	}
	return id
}

// owns reports whether s can be a snapshot of this backup: tagged with its UID, or with no UID
// and started after the backup (less the clock-skew margin). A snapshot tagged with another
// UID never is, nor one without a UID tagged with another install's identity (that install's
// CreateSnapshot took it: a backup of the same name in another cluster).
func (id BackupIdentity) owns(s *types.Snapshot) bool {
	tags := TagMap(s.Tags)
	uid, tagged := tags[TagBackupUID]
	if tagged && id.UID != "" {
		return uid == id.UID
	}
	if install := tags[TagInstall]; install != "" && id.Install != "" && install != id.Install {
		return false
	}
	return id.started.IsZero() || !aws.ToTime(s.StartTime).Before(id.started.Add(-ClockSkew))
}

// HasUID reports whether s carries this backup's UID: certain evidence that it is this backup's.
func (id BackupIdentity) HasUID(s *types.Snapshot) bool {
	return id.UID != "" && TagMap(s.Tags)[TagBackupUID] == id.UID
}

// Values of TagRecorded.
const (
	RecordedPending  = "pending"
	RecordedTrue     = "true"
	RecordedReturned = "returned"
)

// MadeByThisPlugin reports whether this plugin's CreateSnapshot made s, by what that call writes
// at creation: its create token and recorded mark, or, on a snapshot of an earlier release
// (made before either existed), the volume type every release wrote. No other tag of the
// plugin's prefix is evidence: a volume this plugin restored carries its restore token, and the
// upstream plugin copies a volume's tags onto its snapshots.
func MadeByThisPlugin(s *types.Snapshot) bool {
	return TagValue(s.Tags, TagCreateToken) != "" || TagValue(s.Tags, TagRecorded) != "" || TagValue(s.Tags, TagVolumeType) != ""
}

// returned reports whether s is marked as returned to Velero by its CreateSnapshot call.
func returned(s *types.Snapshot) bool {
	v := TagValue(s.Tags, TagRecorded)
	return v == RecordedTrue || v == RecordedReturned
}

// Unreturned reports whether s is marked as not returned to Velero (yet): its CreateSnapshot
// call was under way, returned an error, or was cut off. Snapshots of earlier releases carry no
// such mark.
func Unreturned(s *types.Snapshot) bool { return TagValue(s.Tags, TagRecorded) == RecordedPending }

// sourceKey names one recorded source of a backup: core makes one CreateSnapshot call per PV,
// and a PV is on one volume.
type sourceKey struct{ pv, volume string }

func sourceKeyOf(s *types.Snapshot) sourceKey {
	return sourceKey{pv: TagValue(s.Tags, TagPV), volume: aws.ToString(s.VolumeId)}
}

// RecordedSources counts the distinct recorded sources of this backup among snaps: one per PV
// and volume of the snapshots carrying the backup's UID and not marked unreturned, so that the
// other snapshots of one CreateSnapshot call count once, and a snapshot whose call returned an
// error to Velero not at all. Snapshots of the backup's name without its UID (the upstream
// plugin's, a lost handoff, or another install's backup of the same name) are not evidence of
// this backup's; unnamed counts them, for messages.
func (id BackupIdentity) RecordedSources(snaps []*types.Snapshot) (recorded, unnamed int) {
	seen := map[sourceKey]bool{}
	for _, s := range snaps {
		switch {
		case id.HasUID(s) && !Unreturned(s):
			seen[sourceKeyOf(s)] = true
		case TagValue(s.Tags, TagBackupUID) == "" && id.owns(s):
			unnamed++
		}
	}
	return len(seen), unnamed
}

// Resolution is which of a volume's snapshots an operation follows.
type Resolution struct {
	// source is the snapshot Velero recorded; nil when none can be told.
	Source *types.Snapshot
	// Strays are other snapshots the same CreateSnapshot call made: the plugin's own, to delete.
	Strays []types.Snapshot
	// Ambiguous lists the snapshots that could each be the recorded one, when there are several.
	Ambiguous []types.Snapshot
}

// Candidates are the sources of the volume that could be the snapshot of op: of the op's PV
// (when the op names it), owned by the backup, and, without this backup's UID, started within
// the window of the operation. Those carrying the backup's UID, when there are any, are the
// only candidates. Else those this plugin made, when there are any, are: the PV's snapshot was
// then asked of this plugin, so one it did not make is another's (another cluster's backup of
// the same name, through the upstream plugin).
func Candidates(sources []types.Snapshot, op Operation, id BackupIdentity, window time.Duration) []types.Snapshot {
	var tagged, timed, made []types.Snapshot
	for i := range sources {
		s := &sources[i]
		tags := TagMap(s.Tags)
		if op.PV != "" && tags[TagPV] != op.PV || !id.owns(s) {
			continue
		}
		if id.HasUID(s) {
			tagged = append(tagged, *s)
			continue
		}
		start := aws.ToTime(s.StartTime)
		if start.Before(op.Issued.Add(-ClockSkew)) || start.After(op.Issued.Add(window)) {
			continue
		}
		timed = append(timed, *s)
		if MadeByThisPlugin(s) {
			made = append(made, *s)
		}
	}
	switch {
	case len(tagged) > 0:
		return tagged
	case len(made) > 0:
		return made
	}
	return timed
}

// ofSeveralPVs reports whether snaps are snapshots of more than one PV.
func ofSeveralPVs(snaps []types.Snapshot) bool {
	for _, s := range snaps {
		if TagValue(s.Tags, TagPV) != TagValue(snaps[0].Tags, TagPV) {
			return true
		}
	}
	return false
}

// Resolve picks the recorded snapshot among candidates: the only one; else the one marked
// recorded (the others of its CreateSnapshot call are strays); else the only one started after
// the operation was opened (the others are older snapshots of a backup of the same name).
// Candidates of several PVs (an operation naming none) are first narrowed to those started
// after it opened, which must be of one PV. Anything else is ambiguous: the plugin cannot tell
// which one Velero holds.
func Resolve(cands []types.Snapshot, issued time.Time) Resolution {
	if ofSeveralPVs(cands) {
		// An operation naming no PV (an earlier release's) on a volume static PVs share: a
		// mark tells a call's strays from its returned snapshot, not one PV's recorded
		// snapshot from another's. Velero takes the PVs one after another, so only those
		// started after the operation opened can be its own, and they must be of one PV.
		own := slices.DeleteFunc(slices.Clone(cands), func(s types.Snapshot) bool { return aws.ToTime(s.StartTime).Before(issued) })
		if len(own) == 0 || ofSeveralPVs(own) {
			return Resolution{Ambiguous: cands}
		}
		cands = own
	}
	switch len(cands) {
	case 0:
		return Resolution{}
	case 1:
		return Resolution{Source: &cands[0]}
	}
	var marked, after []int
	for i := range cands {
		if returned(&cands[i]) {
			marked = append(marked, i)
		}
		if !aws.ToTime(cands[i].StartTime).Before(issued) {
			after = append(after, i)
		}
	}
	var chosen int
	switch {
	case len(marked) == 1:
		chosen = marked[0]
	case len(marked) == 0 && len(after) == 1:
		chosen = after[0]
	default:
		return Resolution{Ambiguous: cands}
	}
	res := Resolution{Source: &cands[chosen]}
	token := TagMap(cands[chosen].Tags)[TagCreateToken]
	for i := range cands {
		if i != chosen && token != "" && TagMap(cands[i].Tags)[TagCreateToken] == token {
			res.Strays = append(res.Strays, cands[i])
		}
	}
	return res
}
