package restoring

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// decideRestore's rules, one row each: what a restore asks EC2 next, and how it ends.
func TestDecideRestore(t *testing.T) {
	pending := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStatePending)
	recorded := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted,
		mockec2.WithTags(model.TagVolumeType, "gp3", model.TagVolumeIOPS, "4000", model.TagVolumeAZ, "us-east-1c", model.TagPV, "pv-1"))
	pendingCopy := mockec2.CopyOfSnap("snap-0000000c", recorded, types.SnapshotStatePending, mockec2.Progress("45%"))
	doneCopy := mockec2.CopyOfSnap("snap-0000000b", recorded, types.SnapshotStateCompleted)
	east := restorePolicy{cfg: model.Config{Region: mockec2.SrcRegion, RestoreAvailabilityZone: "us-east-1b"}, patience: time.Minute}
	eastZones := []types.AvailabilityZone{
		zone("us-east-1a", types.AvailabilityZoneStateAvailable, "availability-zone"),
		zone("us-east-1c", types.AvailabilityZoneStateAvailable, "availability-zone"),
	}
	vaultCopyOf := func(id, account string) types.Snapshot {
		c := mockec2.CopyOfSnap(id, recorded, types.SnapshotStateCompleted)
		c.Tags = append(c.Tags, types.Tag{Key: aws.String(model.TagSourceAccount), Value: aws.String(account)})
		return c
	}
	ours, theirs := vaultCopyOf("snap-0000000d", "111111111111"), vaultCopyOf("snap-00000010", "333333333333")
	copiesOnly, vaultOnly := east, east
	copiesOnly.from = model.RestoreSource{CopiesOnly: true}
	vaultOnly.from = model.RestoreSource{CopiesOnly: true, VaultOf: "111111111111"}
	copiesRead := func(copies ...types.Snapshot) restoreSeen {
		return restoreSeen{session: "session", copiesRead: true, copies: copies}
	}
	withRate := east
	withVolumeTags := east
	withVolumeTags.volumeTags = map[string]string{"team": "drills"}
	withRate.cfg.Restore = model.RestoreConfig{InitializationRate: 300}
	withFallback := withRate
	withFallback.cfg.Restore.InitializationFallback = true
	req := restoreRequest{snapshotID: "snap-0000000a", volumeType: "gp3", volumeAZ: "us-east-1a"}
	read := restoreSeen{session: "session", recordedRead: true, recorded: &recorded}
	// sentOnce is read with the restore's first request sent and answered with err (the volume
	// when nil), looked up by its token when lookedUp.
	sentOnce := func(pol restorePolicy, err error, lookedUp bool, listed string) restoreSeen {
		in := decideRestore(read, req, pol, mockec2.T0).next[0].in
		s := read
		s.sent = []createSent{{in: in, at: mockec2.T0, err: err, lookedUp: lookedUp, listed: listed}}
		if err == nil {
			s.sent[0].volumeID = "vol-0000000e"
		}
		return s
	}
	// thenSent is s with its request sent again, answered with err and looked up.
	thenSent := func(s restoreSeen, err error) restoreSeen {
		again := s.sent[0]
		again.at, again.err = again.at.Add(restoreLookUpWait), err
		s.sent = append(slices.Clone(s.sent), again)
		return s
	}
	refused := mockec2.HTTPErr(400, "InvalidParameterValue")
	throttled := mockec2.HTTPErr(503, "RequestLimitExceeded")
	tests := []struct {
		name string
		seen restoreSeen
		req  restoreRequest
		pol  restorePolicy
		now  time.Time
		// wantSteps are the requests asked for next; wantVolume the volume the restore
		// returns; wantErr what its error says.
		wantSteps  []restoreStep
		wantVolume string
		wantErr    []string
		// wantNoErr is what the error must not say.
		wantNoErr string
		// wantIn checks the CreateVolume asked for; wantWarn what the restore warns.
		wantIn   func(t *testing.T, in *ec2.CreateVolumeInput)
		wantWarn string
	}{
		{name: "a malformed snapshot ID fails naming it", req: restoreRequest{snapshotID: "snap-nope"}, pol: east,
			wantErr: []string{`"snap-nope"`}},
		{name: "a restore first describes the snapshot Velero recorded", req: req, pol: east, wantSteps: []restoreStep{readRecorded}},
		{name: "a read EC2 refuses fails the restore with EC2's error", seen: restoreSeen{err: mockec2.HTTPErr(403, "UnauthorizedOperation")}, req: req, pol: east,
			wantErr: []string{"UnauthorizedOperation"}},
		{name: "a recorded snapshot not completed fails saying its state",
			seen: restoreSeen{recordedRead: true, recorded: &pending}, req: req, pol: east,
			wantErr: []string{"snap-0000000a in us-east-1 is pending, not completed"}},
		{name: "a region without the recorded snapshot looks for its copies", seen: restoreSeen{recordedRead: true}, req: req, pol: east,
			wantSteps: []restoreStep{readCopies}},
		{name: "a region without a copy fails saying so", seen: restoreSeen{recordedRead: true, copiesRead: true}, req: req, pol: east,
			wantErr: []string{"snap-0000000a is not in us-east-1 and has no copy there"}},
		{name: "a region whose copy is pending fails naming the copy and its progress",
			seen: restoreSeen{recordedRead: true, copiesRead: true, copies: []types.Snapshot{pendingCopy}}, req: req, pol: east,
			wantErr: []string{"no completed copy", "snap-0000000c is pending at 45%"}},
		{name: "a copy region restores from the completed copy",
			seen: restoreSeen{session: "session", recordedRead: true, copiesRead: true, copies: []types.Snapshot{pendingCopy, doneCopy}}, req: req, pol: east,
			wantSteps: []restoreStep{sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				wantField(t, "SnapshotId", aws.ToString(in.SnapshotId), "snap-0000000b")
			}},
		{name: "a drill of the copies never asks for the recorded snapshot: it lists the copies", req: req, pol: copiesOnly,
			wantSteps: []restoreStep{readCopies}},
		{name: "a drill of the copies passes over a vault copy in the region and restores from the regional copy",
			seen: copiesRead(ours, doneCopy), req: req, pol: copiesOnly, wantSteps: []restoreStep{sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				wantField(t, "SnapshotId", aws.ToString(in.SnapshotId), "snap-0000000b")
			}},
		{name: "a drill of the copies in a region without one fails saying so, whatever else the region holds",
			seen: restoreSeen{recordedRead: true, recorded: &recorded, copiesRead: true}, req: req, pol: copiesOnly,
			wantErr: []string{"snapshot snap-0000000a has no copy in us-east-1"}},
		{name: "a drill of the vault restores from the vault copy of its account's snapshot, not another account's",
			seen: copiesRead(theirs, ours), req: req, pol: vaultOnly, wantSteps: []restoreStep{sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				wantField(t, "SnapshotId", aws.ToString(in.SnapshotId), "snap-0000000d")
			}},
		{name: "a drill of the vault holding only another account's vault copy fails naming it and its source account",
			seen: copiesRead(theirs, doneCopy), req: req, pol: vaultOnly,
			wantErr: []string{"has no completed vault copy of account 111111111111's snapshot in us-east-1", "snap-00000010 is no vault copy", `"333333333333"`, "snap-0000000b is no vault copy"}},
		{name: "restoreAvailabilityZone wins without a look at the zones", seen: read, req: req, pol: east,
			wantSteps: []restoreStep{sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				wantField(t, "AvailabilityZone", aws.ToString(in.AvailabilityZone), "us-east-1b")
			}},
		{name: "without restoreAvailabilityZone the region's zones are listed", seen: read, req: req,
			pol: restorePolicy{cfg: model.Config{Region: mockec2.SrcRegion}}, wantSteps: []restoreStep{readZones}},
		{name: "Velero passing no zone restores in the zone recorded at backup",
			seen: restoreSeen{session: "session", recordedRead: true, recorded: &recorded, zonesRead: true, zones: eastZones},
			req:  restoreRequest{snapshotID: "snap-0000000a"}, pol: restorePolicy{cfg: model.Config{Region: mockec2.SrcRegion}},
			wantSteps: []restoreStep{sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				wantField(t, "AvailabilityZone", aws.ToString(in.AvailabilityZone), "us-east-1c")
				wantField(t, "VolumeType", string(in.VolumeType), "gp3")
				wantField(t, "Iops", aws.ToInt32(in.Iops), int32(4000))
			}},
		{name: "every CreateVolume carries its restore token as ClientToken and tag, and the snapshot's tags but the plugin's own", seen: read, req: req, pol: east,
			wantSteps: []restoreStep{sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				tags := model.TagMap(in.TagSpecifications[0].Tags)
				wantField(t, "ClientToken", aws.ToString(in.ClientToken), restoreTokenOf("session", mockec2.SrcRegion, in, nil))
				wantField(t, "restore token tag", tags[model.TagRestoreToken], aws.ToString(in.ClientToken))
				wantField(t, "PV tag", tags[model.TagPV], "pv-1")
				wantField(t, "volume type tag", tags[model.TagVolumeType], "")
			}},
		{name: "the tags every restored volume carries are in CreateVolume's own request and its token", seen: read, req: req, pol: withVolumeTags,
			wantSteps: []restoreStep{sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				wantField(t, "team tag", model.TagMap(in.TagSpecifications[0].Tags)["team"], "drills")
				wantField(t, "ClientToken", aws.ToString(in.ClientToken), restoreTokenOf("session", mockec2.SrcRegion, in, withVolumeTags.volumeTags))
			}},
		{name: "EC2's answer ends the restore with its volume", seen: sentOnce(east, nil, false, ""), req: req, pol: east,
			wantVolume: "vol-0000000e"},
		{name: "a lost CreateVolume answer looks the volume up by its token", seen: sentOnce(east, mockec2.NetErr(), false, ""), req: req, pol: east,
			wantSteps: []restoreStep{lookUpToken}, wantWarn: "looking for the volume by its token"},
		{name: "a volume its token's tag lists ends the restore with it", seen: sentOnce(east, mockec2.NetErr(), true, "vol-0000000f"), req: req, pol: east,
			wantVolume: "vol-0000000f"},
		{name: "a lost CreateVolume answer resends the same ClientToken", seen: sentOnce(east, mockec2.NetErr(), true, ""), req: req, pol: east, now: mockec2.T0.Add(time.Minute),
			wantSteps: []restoreStep{waitRound, sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				first := decideRestore(read, req, east, mockec2.T0).next[0].in
				wantField(t, "ClientToken", aws.ToString(in.ClientToken), aws.ToString(first.ClientToken))
			}},
		{name: "no answer for the whole patience fails naming the tag of the volume that may appear", seen: sentOnce(east, mockec2.NetErr(), true, ""), req: req, pol: east,
			now: mockec2.T0.Add(time.Minute + time.Second), wantErr: []string{"no volume from EC2 within 1m0s", model.TagRestoreToken, "a volume may still appear"}},
		{name: "a throttled CreateVolume looks the volume up by its token (an attempt the SDK retried may have made it)", seen: sentOnce(east, throttled, false, ""), req: req, pol: east,
			wantSteps: []restoreStep{lookUpToken}, wantWarn: "looking for the volume by its token"},
		{name: "a throttled CreateVolume whose volume is not listed is sent again, the same request", seen: sentOnce(east, throttled, true, ""), req: req, pol: east,
			wantSteps: []restoreStep{waitRound, sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				first := decideRestore(read, req, east, mockec2.T0).next[0].in
				wantField(t, "ClientToken", aws.ToString(in.ClientToken), aws.ToString(first.ClientToken))
			}},
		{name: "throttling for the whole patience fails saying so, naming the tag of a volume that may appear", seen: sentOnce(east, throttled, true, ""), req: req, pol: east,
			now: mockec2.T0.Add(time.Minute + time.Second), wantErr: []string{"no volume from EC2 within 1m0s", "RequestLimitExceeded", model.TagRestoreToken}},
		{name: "a refusal fails with EC2's error and no volume to look for", seen: sentOnce(east, mockec2.HTTPErr(403, "UnauthorizedOperation"), false, ""), req: req, pol: east,
			wantErr: []string{"UnauthorizedOperation"}, wantNoErr: model.TagRestoreToken},
		{name: "a lost answer, then throttling for the whole patience, fails naming the tag of the volume that may appear",
			seen: thenSent(sentOnce(east, mockec2.NetErr(), true, ""), throttled), req: req, pol: east,
			now: mockec2.T0.Add(time.Minute + time.Second), wantErr: []string{"RequestLimitExceeded", model.TagRestoreToken, "a volume may still appear"}},
		{name: "a lost answer, then a refusal, fails naming the tag of the volume that may appear",
			seen: thenSent(sentOnce(east, mockec2.NetErr(), true, ""), mockec2.HTTPErr(403, "UnauthorizedOperation")), req: req, pol: east,
			wantErr: []string{"UnauthorizedOperation", model.TagRestoreToken, "a volume may still appear"}},
		{name: "a refusal of the request fails the restore with EC2's error", seen: sentOnce(east, refused, false, ""), req: req, pol: east,
			wantErr: []string{"creating a volume from snapshot snap-0000000a in us-east-1b", "InvalidParameterValue"}},
		{name: "a rate EC2 refuses without the fallback fails naming the rate, its value and the fallback's key", seen: sentOnce(withRate, refused, false, ""), req: req, pol: withRate,
			wantErr: []string{`"volumeInitializationRate" (value "300")`, "InvalidParameterValue", `"volumeInitializationFallback"`}},
		{name: "a rate EC2 refuses with the fallback set makes the volume again without the rate", seen: sentOnce(withFallback, refused, false, ""), req: req, pol: withFallback,
			wantSteps: []restoreStep{sendCreate}, wantWarn: "restoring it at EBS's default rate", wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				first := decideRestore(read, req, withFallback, mockec2.T0).next[0].in
				wantField(t, "VolumeInitializationRate", aws.ToInt32(in.VolumeInitializationRate), int32(0))
				if aws.ToString(in.ClientToken) == aws.ToString(first.ClientToken) {
					t.Errorf("the request without the rate has the refused request's token %s, want its own", aws.ToString(in.ClientToken))
				}
			}},
		{name: "throttling is no refusal of the rate", seen: sentOnce(withFallback, throttled, true, ""), req: req, pol: withFallback,
			wantSteps: []restoreStep{waitRound, sendCreate}, wantIn: func(t *testing.T, in *ec2.CreateVolumeInput) {
				wantField(t, "VolumeInitializationRate", aws.ToInt32(in.VolumeInitializationRate), int32(300))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = mockec2.T0
			}
			plan := decideRestore(tt.seen, tt.req, tt.pol, now)
			mockec2.WantErr(t, plan.err, tt.wantErr...)
			if tt.wantNoErr != "" && plan.err != nil && strings.Contains(plan.err.Error(), tt.wantNoErr) {
				t.Errorf("error %q says %q", plan.err, tt.wantNoErr)
			}
			var steps []restoreStep
			for _, a := range plan.next {
				steps = append(steps, a.step)
			}
			if fmt.Sprint(steps) != fmt.Sprint(tt.wantSteps) || plan.volumeID != tt.wantVolume {
				t.Errorf("next %v, volume %q; want %v, %q", steps, plan.volumeID, tt.wantSteps, tt.wantVolume)
			}
			if tt.wantIn != nil && len(plan.next) > 0 {
				tt.wantIn(t, plan.next[len(plan.next)-1].in)
			}
			var warned string
			for _, w := range plan.warnings {
				warned += w.msg
			}
			if (tt.wantWarn == "") != (warned == "") || !strings.Contains(warned, tt.wantWarn) {
				t.Errorf("warned %q, want %q", warned, tt.wantWarn)
			}
		})
	}
}

// wantField reports a field of a request that differs from want.
func wantField[T comparable](t *testing.T, name string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}
