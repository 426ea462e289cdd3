package model_test

import (
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

func TestOperationIDRoundTrip(t *testing.T) {
	tests := []model.Operation{
		{Region: mockec2.SrcRegion, VolumeID: mockec2.VolA, Issued: mockec2.T0},
		{Region: "ap-southeast-2", VolumeID: "vol-01234567", Issued: time.Unix(0, 0).UTC()},
		{Region: "us-gov-west-1", VolumeID: mockec2.VolA, Issued: mockec2.T0.Add(365 * 24 * time.Hour)},
		{Region: mockec2.SrcRegion, VolumeID: mockec2.VolA, Issued: mockec2.T0, PV: "pvc-0a1b2c3d-4e5f.data"},
	}
	for _, op := range tests {
		t.Run(op.String(), func(t *testing.T) {
			got, err := model.ParseOperationID(op.String())
			mockec2.WantErr(t, err)
			if got != op {
				t.Errorf("round trip of %s: got %+v, want %+v", op, got, op)
			}
		})
	}
	// Sub-second precision is not kept, and the time comes back in UTC.
	local := time.Date(2026, 11, 30, 4, 0, 0, 999, time.FixedZone("X", 3600))
	got, err := model.ParseOperationID(model.Operation{Region: mockec2.SrcRegion, VolumeID: mockec2.VolA, Issued: local}.String())
	mockec2.WantErr(t, err)
	if !got.Issued.Equal(local.Truncate(time.Second)) || got.Issued.Location() != time.UTC {
		t.Errorf("issued %v, want %v in UTC", got.Issued, local.Truncate(time.Second))
	}
}

func TestParseOperationIDErrors(t *testing.T) {
	tests := []struct {
		name, id string
		wantErr  []string
	}{
		{"empty", "", []string{`""`, "not one of this plugin's"}},
		{"garbage", "hello", []string{`"hello"`}},
		{"truncated", "ebs:v1:us-east-1:" + mockec2.VolA, []string{"not one of this plugin's"}},
		{"extra field", "ebs:v1:us-east-1:" + mockec2.VolA + ":1:2", []string{"not one of this plugin's"}},
		{"other plugin", "csi:v1:us-east-1:" + mockec2.VolA + ":1", []string{"not one of this plugin's"}},
		{"other version", "ebs:v3:us-east-1:" + mockec2.VolA + ":1:pv-1", []string{`"v3"`, `"v1"`, `"v2"`}},
		{"v2 without its PV", "ebs:v2:us-east-1:" + mockec2.VolA + ":1", []string{"not one of this plugin's"}},
		{"v1 with a PV", "ebs:v1:us-east-1:" + mockec2.VolA + ":1:pv-1", []string{"not one of this plugin's"}},
		{"bad PV name", "ebs:v2:us-east-1:" + mockec2.VolA + ":1:PV_1", []string{`"PV_1"`, "PersistentVolume name"}},
		{"empty PV name", "ebs:v2:us-east-1:" + mockec2.VolA + ":1:", []string{"PersistentVolume name"}},
		{"bad region", "ebs:v1:mars-1:" + mockec2.VolA + ":1", []string{`"mars-1"`, "region"}},
		{"empty region", "ebs:v1::" + mockec2.VolA + ":1", []string{"region"}},
		{"bad volume", "ebs:v1:us-east-1:vol-XYZ:1", []string{`"vol-XYZ"`, "volume"}},
		{"snapshot as volume", "ebs:v1:us-east-1:snap-0123456789abcdef0:1", []string{"volume"}},
		{"negative time", "ebs:v1:us-east-1:" + mockec2.VolA + ":-5", []string{`"-5"`, "Unix seconds"}},
		{"non-numeric time", "ebs:v1:us-east-1:" + mockec2.VolA + ":soon", []string{`"soon"`}},
		{"empty time", "ebs:v1:us-east-1:" + mockec2.VolA + ":", []string{"Unix seconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := model.ParseOperationID(tt.id)
			mockec2.WantErr(t, err, tt.wantErr...)
		})
	}
}

// Backup and restore operation IDs round-trip, and neither parses as the other.
func TestVolumeOperationID(t *testing.T) {
	op := model.Operation{Region: mockec2.SrcRegion, VolumeID: mockec2.VolA, Issued: mockec2.T0}
	vop := model.VolumeOperation{op}
	got, err := model.ParseVolumeOperationID(vop.String())
	mockec2.WantErr(t, err)
	if got != vop {
		t.Errorf("round trip: got %+v, want %+v", got, vop)
	}
	if vop.String() == op.String() {
		t.Errorf("restore and backup operations share the ID %s", op)
	}
	if _, err := model.ParseOperationID(vop.String()); err == nil {
		t.Errorf("restore operation %s parsed as a backup operation", vop)
	}
	if _, err := model.ParseVolumeOperationID(op.String()); err == nil {
		t.Errorf("backup operation %s parsed as a restore operation", op)
	}
}
