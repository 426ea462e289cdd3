package restoring

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// decideVolumeProgress's rules, one row each: what velero restore describe shows of a restored
// volume's operation.
func TestDecideVolumeProgress(t *testing.T) {
	op := model.VolumeOperation{Operation: model.Operation{Region: mockec2.DstRegion, VolumeID: restoredVol, Issued: mockec2.T0}}
	waits := ebs.Place{Location: "dr", Config: waitingLocation}
	doesNotWait := ebs.Place{Location: "dr", Config: map[string]string{model.ConfigRegion: mockec2.DstRegion}}
	// seen is a read at t0 that found the volume in state through place.
	seen := func(place ebs.Place, state types.VolumeState) volumeSeen {
		return volumeSeen{at: mockec2.T0, located: true, place: place, vol: restoredFrom(restoredVol, state, "snap-0000000b"), found: true}
	}
	// initialized is a read of an available volume through a waiting location, whose
	// initialization EC2 reports at pct percent (not reported when negative).
	initialized := func(pct int64) volumeSeen {
		s := seen(waits, types.VolumeStateAvailable)
		s.initRead = true
		if pct >= 0 {
			s.reported = true
			s.initialization = statusOf(restoredVol, types.InitializationTypeProvisionedRate, pct, 10).InitializationStatusDetails
		}
		return s
	}
	withInitErr := func(err error) volumeSeen {
		s := initialized(-1)
		s.initErr = err
		return s
	}
	notListed := func(after time.Duration) volumeSeen {
		return volumeSeen{at: mockec2.T0.Add(after), located: true, place: waits}
	}
	throttled := mockec2.HTTPErr(503, "RequestLimitExceeded")
	tests := []struct {
		name string
		seen volumeSeen
		// want is "n/total units", then what the description (the error, when failed) says.
		want, says       string
		completed        bool
		failed           bool
		readInit         bool
		wantOperationErr string
	}{
		{name: "a restore whose locations cannot be read fails saying why", seen: volumeSeen{at: mockec2.T0, placesErr: errors.New("location dr: no such location")},
			want: "0/1 volume", says: "no such location", completed: true, failed: true},
		{name: "a location whose wait key is wrong fails naming the location and key",
			seen: seen(ebs.Place{Location: "dr", Config: map[string]string{model.ConfigWaitForVolumeInitialization: "soon"}}, types.VolumeStateAvailable),
			want: "0/1 volume", says: `location dr: config key "waitForVolumeInitialization"`, completed: true, failed: true},
		{name: "a volume read EC2 throttles shows no figure and waits", seen: volumeSeen{at: mockec2.T0, located: true, place: waits, err: throttled},
			want: "0/0 ", says: "waiting for EC2: "},
		{name: "a volume read EC2 refuses fails the operation", seen: volumeSeen{at: mockec2.T0, located: true, place: waits, err: mockec2.HTTPErr(403, "UnauthorizedOperation")},
			wantOperationErr: "UnauthorizedOperation"},
		{name: "a volume EC2 does not list yet is waited for", seen: notListed(time.Minute),
			want: "0/1 volume", says: "waiting for EC2 to list volume " + restoredVol},
		{name: "a volume EC2 does not list after the grace period fails", seen: notListed(time.Hour),
			want: "0/1 volume", says: "restored volume " + restoredVol + " does not exist in us-west-2", completed: true, failed: true},
		{name: "a volume being created shows 0 of 100 while the restore waits for initialization", seen: seen(waits, types.VolumeStateCreating),
			want: "0/100 % initialized", says: ": creating"},
		{name: "a volume in error fails", seen: seen(waits, types.VolumeStateError),
			want: "0/100 % initialized", says: "is error", completed: true, failed: true},
		{name: "an available volume completes when the restore does not wait", seen: seen(doesNotWait, types.VolumeStateAvailable),
			want: "1/1 volume", says: "EBS goes on initializing it", completed: true},
		{name: "an available volume of a restore that waits asks EC2 for its initialization", seen: seen(waits, types.VolumeStateAvailable),
			readInit: true},
		{name: "an initializing volume shows EC2's percent", seen: initialized(70),
			want: "70/100 % initialized", says: "initializing at 300 MiB/s (provisioned), 70%, about 10s left"},
		{name: "a volume EC2 reports 100% initialized completes", seen: initialized(100),
			want: "100/100 % initialized", says: "fully initialized", completed: true},
		{name: "a status EC2 does not list yet is waited for", seen: initialized(-1),
			want: "0/100 % initialized", says: "waiting for EC2 to report its initialization"},
		{name: "an initialization read EC2 throttles shows no figure, not 0%", seen: withInitErr(throttled),
			want: "0/0 ", says: "waiting for EC2 to report its initialization: "},
		{name: "an initialization read EC2 refuses fails the operation", seen: withInitErr(mockec2.HTTPErr(403, "UnauthorizedOperation")),
			wantOperationErr: "UnauthorizedOperation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideVolumeProgress(tt.seen, op, ebs.DefaultNotFoundGrace)
			if tt.wantOperationErr != "" {
				mockec2.WantErr(t, d.err, tt.wantOperationErr)
				return
			}
			mockec2.WantErr(t, d.err)
			if d.readInitialization != tt.readInit {
				t.Fatalf("reads the initialization: %v, want %v", d.readInitialization, tt.readInit)
			}
			if tt.readInit {
				return
			}
			p := d.progress
			if got := fmt.Sprintf("%d/%d %s", p.NCompleted, p.NTotal, p.OperationUnits); got != tt.want {
				t.Errorf("progress %s, want %s", got, tt.want)
			}
			says := p.Description
			if tt.failed {
				says = p.Err
			}
			if !strings.Contains(says, tt.says) || p.Completed != tt.completed || (p.Err != "") != tt.failed || !p.Updated.Equal(tt.seen.at) {
				t.Errorf("progress %+v, want it to say %q, completed %v, failed %v, updated at the read", p, tt.says, tt.completed, tt.failed)
			}
		})
	}
}
