package audit

import "testing"

// Velero's record of a backup's native snapshots, as its server writes it to object storage.
func TestDecodeRecord(t *testing.T) {
	data := []byte(`[{"spec":{"backupName":"b1","backupUID":"u","location":"ebs","persistentVolumeName":"pv-1","providerVolumeID":"vol-1","volumeType":"gp3","volumeAZ":"us-east-1a"},"status":{"providerSnapshotID":"snap-1","phase":"Completed"}},
{"spec":{"backupName":"b1","location":"ebs","persistentVolumeName":"pv-2","providerVolumeID":"vol-2"},"status":{"phase":"Failed"}}]`)
	got, err := decodeRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := (RecordedSnapshot{ID: "snap-1", Location: "ebs", PV: "pv-1", VolumeType: "gp3", VolumeAZ: "us-east-1a"}); len(got) != 1 || got[0] != want {
		t.Errorf("record %+v, want %+v (a failed snapshot has no ID to keep)", got, want)
	}
}
