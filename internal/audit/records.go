package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/cmd/util/cacert"
	"github.com/vmware-tanzu/velero/pkg/cmd/util/downloadrequest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recordTimeout bounds the reading of one backup's record, as `velero backup describe` does.
const recordTimeout = time.Minute

// Records reads Velero's record of a backup's native snapshots.
type Records interface {
	VolumeSnapshots(ctx context.Context, backup *velerov1.Backup) ([]RecordedSnapshot, error)
}

// VeleroRecords reads the records as `velero backup describe --details` does: a DownloadRequest
// for the backup's volume snapshots (kind BackupVolumeSnapshots), answered by Velero's server
// with a URL of the file it keeps with the backup in object storage.
type VeleroRecords struct{ Client client.Client }

// volumeSnapshot is the part of Velero's record of one native snapshot the audit reads.
type volumeSnapshot struct {
	Spec struct {
		Location             string `json:"location"`
		PersistentVolumeName string `json:"persistentVolumeName"`
		VolumeType           string `json:"volumeType"`
		VolumeAZ             string `json:"volumeAZ"`
		VolumeIOPS           *int64 `json:"volumeIOPS"`
	} `json:"spec"`
	Status struct {
		ProviderSnapshotID string `json:"providerSnapshotID"`
	} `json:"status"`
}

// VolumeSnapshots returns the native snapshots Velero recorded for backup. A backup that
// attempted none has none; one whose file is missing is an error, never an empty record.
func (r VeleroRecords) VolumeSnapshots(ctx context.Context, backup *velerov1.Backup) ([]RecordedSnapshot, error) {
	if backup.Status.VolumeSnapshotsAttempted == 0 {
		return nil, nil
	}
	// Unlike velero backup describe, which goes on without it, a CA certificate the storage
	// location names but that cannot be read is an error: the download would fail for want of it,
	// saying less. A location that is not found has none.
	bslCACert, err := cacert.GetCACertFromBackup(ctx, r.Client, backup.Namespace, backup)
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificate of storage location %s: %w (grant get on backupstoragelocations)", backup.Spec.StorageLocation, err)
	}
	var buf bytes.Buffer
	err = downloadrequest.StreamWithBSLCACert(ctx, r.Client, backup.Namespace, backup.Name,
		velerov1.DownloadTargetKindBackupVolumeSnapshots, &buf, recordTimeout, false, "", bslCACert)
	if errors.Is(err, downloadrequest.ErrNotFound) {
		return nil, errors.New("the backup's volume snapshots file is not in its storage location")
	}
	if err != nil {
		return nil, err
	}
	return decodeRecord(buf.Bytes())
}

// decodeRecord decodes Velero's volume snapshots file.
func decodeRecord(data []byte) ([]RecordedSnapshot, error) {
	var snaps []volumeSnapshot
	if err := json.Unmarshal(data, &snaps); err != nil {
		return nil, err
	}
	out := make([]RecordedSnapshot, 0, len(snaps))
	for _, s := range snaps {
		if s.Status.ProviderSnapshotID == "" {
			continue // a failed CreateSnapshot: Velero recorded no snapshot
		}
		out = append(out, RecordedSnapshot{ID: s.Status.ProviderSnapshotID, Location: s.Spec.Location, PV: s.Spec.PersistentVolumeName,
			VolumeType: s.Spec.VolumeType, VolumeAZ: s.Spec.VolumeAZ, VolumeIOPS: s.Spec.VolumeIOPS})
	}
	return out, nil
}
