package ebs

import (
	"context"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
)

const restoredVol = "vol-0fedcba9876543210"

func restoredVolume(id string, state types.VolumeState) types.Volume {
	return types.Volume{
		VolumeId:         aws.String(id),
		State:            state,
		AvailabilityZone: aws.String("us-west-2a"),
		CreateTime:       aws.Time(t0.Add(-time.Minute)),
	}
}

func TestVolumeWatcherProgress(t *testing.T) {
	op := VolumeOperation{Operation{Region: dstRegion, VolumeID: restoredVol, Issued: t0}}.String()
	tests := []struct {
		name       string
		tagged     []types.Volume // the backup's volumes, found by its tag
		byID       []types.Volume // answer to the lookup by ID, when the tagged list lacks it
		byIDErr    error
		taggedErr  error
		after      time.Duration
		opID       string
		want       string // Description or Err
		completed  bool
		failed     bool
		wantCalled bool // looked up by ID
		wantErr    []string
	}{
		{name: "creating", tagged: []types.Volume{restoredVolume(restoredVol, types.VolumeStateCreating)}, want: "volume " + restoredVol + " in us-west-2a: creating"},
		{name: "available", tagged: []types.Volume{restoredVolume(restoredVol, types.VolumeStateAvailable)}, want: "is available", completed: true},
		{name: "in use", tagged: []types.Volume{restoredVolume(restoredVol, types.VolumeStateInUse)}, want: "is in-use", completed: true},
		{name: "error", tagged: []types.Volume{restoredVolume(restoredVol, types.VolumeStateError)}, want: "restored volume " + restoredVol + " in us-west-2a is error", completed: true, failed: true},
		{name: "untagged volume found by ID", byID: []types.Volume{restoredVolume(restoredVol, types.VolumeStateAvailable)}, want: "is available", completed: true, wantCalled: true},
		{name: "not listed yet", byIDErr: httpErr(400, "InvalidVolume.NotFound"), want: "waiting for EC2 to list volume", wantCalled: true},
		{name: "not listed after the grace period", byIDErr: httpErr(400, "InvalidVolume.NotFound"), after: time.Hour, want: "does not exist in us-west-2", completed: true, failed: true, wantCalled: true},
		{name: "throttled", taggedErr: httpErr(503, "RequestLimitExceeded"), want: "waiting for EC2"},
		{name: "not authorized", taggedErr: httpErr(403, "UnauthorizedOperation"), wantErr: []string{"UnauthorizedOperation", "us-west-2"}},
		{name: "malformed operation", opID: "ebs:v1:us-east-1:" + volA + ":1", wantErr: []string{"not one of this plugin's"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			m := f.dst().m
			if tt.opID == "" {
				m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
					func(_ context.Context, in *ec2.DescribeVolumesInput, _ ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
						if len(in.Filters) != 1 || aws.ToString(in.Filters[0].Name) != "tag:"+TagBackup || in.Filters[0].Values[0] != backupName {
							t.Errorf("first DescribeVolumes filters %+v, want the backup's tag", in.Filters)
						}
						return &ec2.DescribeVolumesOutput{Volumes: tt.tagged}, tt.taggedErr
					})
			}
			if tt.wantCalled {
				m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
					func(_ context.Context, in *ec2.DescribeVolumesInput, _ ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
						if len(in.VolumeIds) != 1 || in.VolumeIds[0] != restoredVol {
							t.Errorf("second DescribeVolumes IDs %v, want [%s]", in.VolumeIds, restoredVol)
						}
						return &ec2.DescribeVolumesOutput{Volumes: tt.byID}, tt.byIDErr
					})
			}
			f.clk.Step(tt.after)
			id := tt.opID
			if id == "" {
				id = op
			}
			p, err := NewVolumeWatcher(f.clients(), f.opts()...).Progress(context.Background(), id, restoreOf(backupName))
			if len(tt.wantErr) > 0 {
				wantErr(t, err, tt.wantErr...)
				return
			}
			wantErr(t, err)
			got := p.Description
			if tt.failed {
				got = p.Err
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("progress %+v, want %q", p, tt.want)
			}
			if p.Completed != tt.completed || (p.Err != "") != tt.failed {
				t.Errorf("Completed=%v Err=%q, want completed=%v failed=%v", p.Completed, p.Err, tt.completed, tt.failed)
			}
			if p.Completed && !tt.failed && (p.NCompleted != 1 || p.NTotal != 1) {
				t.Errorf("completed volume reports %d of %d", p.NCompleted, p.NTotal)
			}
		})
	}
}

func TestVolumeWatcherDescribesOncePerCacheLifetime(t *testing.T) {
	f := newFixture(t)
	vols := []types.Volume{restoredVolume(restoredVol, types.VolumeStateCreating), restoredVolume("vol-0aaaaaaaaaaaaaaaa", types.VolumeStateAvailable)}
	f.dst().m.EXPECT().DescribeVolumes(gomock.Any(), gomock.Any(), gomock.Any()).
		Return(&ec2.DescribeVolumesOutput{Volumes: vols}, nil).Times(2)
	w := NewVolumeWatcher(f.clients(), f.opts(WithCacheTTL(5*time.Second))...)
	for round := 0; round < 2; round++ {
		for _, v := range vols {
			op := VolumeOperation{Operation{Region: dstRegion, VolumeID: aws.ToString(v.VolumeId), Issued: t0}}.String()
			if _, err := w.Progress(context.Background(), op, restoreOf(backupName)); err != nil {
				t.Fatal(err)
			}
		}
		f.clk.Step(5 * time.Second)
	}
}

// restoreOf is a restore from the named backup.
func restoreOf(backup string) *velerov1.Restore {
	r := &velerov1.Restore{}
	r.Spec.BackupName = backup
	return r
}
