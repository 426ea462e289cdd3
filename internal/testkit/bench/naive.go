package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	biav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/backupitemaction/v2"
	riav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v2"
	vsv1 "github.com/vmware-tanzu/velero/pkg/plugin/velero/volumesnapshotter/v1"
	corev1api "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// naive is the naive asynchronous baseline, in process: a VolumeSnapshotter whose
// CreateSnapshot returns at once, and a BackupItemAction v2 whose Progress does one
// DescribeSnapshots for its own operation and copies only its own snapshot.
type naive struct {
	sc       Scenario
	src, dst *ec2.Client

	mu        sync.Mutex
	snapshots map[string]string // backup/pv -> source snapshot ID
	copies    map[string]string // source snapshot ID -> copy ID
}

func newNaive(url string, sc Scenario) *naive {
	return &naive{sc: sc, src: newEC2(url, sc.SourceRegion), dst: newEC2(url, sc.CopyRegion),
		snapshots: map[string]string{}, copies: map[string]string{}}
}

// manager serves the naive plugins to the harness in place of Velero's plugin manager.
func (n *naive) manager() harness.PluginManager { return naiveManager{n} }

type naiveManager struct{ n *naive }

func (m naiveManager) GetVolumeSnapshotter(string) (vsv1.VolumeSnapshotter, error) {
	return naiveSnapshotter{m.n}, nil
}
func (m naiveManager) GetBackupItemActionsV2() ([]biav2.BackupItemAction, error) {
	return []biav2.BackupItemAction{naiveAction{m.n}}, nil
}
func (m naiveManager) GetBackupItemActionV2(string) (biav2.BackupItemAction, error) {
	return naiveAction{m.n}, nil
}
func (naiveManager) GetRestoreItemActionsV2() ([]riav2.RestoreItemAction, error) { return nil, nil }
func (naiveManager) GetRestoreItemActionV2(name string) (riav2.RestoreItemAction, error) {
	return nil, fmt.Errorf("no restore item action %s", name)
}
func (naiveManager) CleanupClients() {}

var errNotSupported = errors.New("not supported by the naive baseline")

// naiveSnapshotter is the VolumeSnapshotter half.
type naiveSnapshotter struct{ n *naive }

func (naiveSnapshotter) Init(map[string]string) error { return nil }

func (naiveSnapshotter) CreateVolumeFromSnapshot(string, string, string, *int64) (string, error) {
	return "", errNotSupported
}

func (s naiveSnapshotter) GetVolumeInfo(volumeID, _ string) (string, *int64, error) {
	out, err := s.n.src.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{VolumeIds: []string{volumeID}})
	if err != nil {
		return "", nil, err
	}
	if len(out.Volumes) == 0 {
		return "", nil, fmt.Errorf("volume %s not found", volumeID)
	}
	v := out.Volumes[0]
	var iops *int64
	if v.Iops != nil {
		i := int64(*v.Iops)
		iops = &i
	}
	return string(v.VolumeType), iops, nil
}

func (s naiveSnapshotter) CreateSnapshot(volumeID, _ string, tags map[string]string) (string, error) {
	var ts []types.Tag
	for k, v := range tags {
		ts = append(ts, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out, err := s.n.src.CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{VolumeId: aws.String(volumeID),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: ts}}})
	if err != nil {
		return "", err
	}
	s.n.mu.Lock()
	s.n.snapshots[tags["velero.io/backup"]+"/"+tags["velero.io/pv"]] = aws.ToString(out.SnapshotId)
	s.n.mu.Unlock()
	return aws.ToString(out.SnapshotId), nil
}

func (naiveSnapshotter) GetVolumeID(pv runtime.Unstructured) (string, error) {
	spec := new(corev1api.PersistentVolume)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pv.UnstructuredContent(), spec); err != nil {
		return "", err
	}
	return fixture.VolumeIDOf(spec), nil
}

func (naiveSnapshotter) SetVolumeID(runtime.Unstructured, string) (runtime.Unstructured, error) {
	return nil, errNotSupported
}

func (naiveSnapshotter) DeleteSnapshot(string) error { return errNotSupported }

// naiveAction is the BackupItemAction v2 half; its operation ID is the PV's name.
type naiveAction struct{ n *naive }

func (naiveAction) Name() string { return "bench.io/naive-snapshot-progress" }

func (naiveAction) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"persistentvolumes"}}, nil
}

func (naiveAction) Execute(item runtime.Unstructured, _ *velerov1api.Backup) (runtime.Unstructured, []velero.ResourceIdentifier, string, []velero.ResourceIdentifier, error) {
	u := item.UnstructuredContent()
	meta, _ := u["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return item, nil, name, nil, nil
}

// Progress: one DescribeSnapshots of the copy once there is one, else of the source; a
// CopySnapshot of its own source once that is completed (ResourceLimitExceeded: next poll).
func (a naiveAction) Progress(pv string, backup *velerov1api.Backup) (velero.OperationProgress, error) {
	ctx := context.Background()
	a.n.mu.Lock()
	src := a.n.snapshots[backup.Name+"/"+pv]
	cp := a.n.copies[src]
	a.n.mu.Unlock()
	p := velero.OperationProgress{NTotal: 2, OperationUnits: "snapshots", Updated: time.Now()}
	if src == "" {
		return p, nil
	}
	p.Started = backup.Status.StartTimestamp.Time
	if cp != "" {
		state, msg, err := describe(ctx, a.n.dst, cp)
		if err != nil || state == "" {
			return p, err
		}
		p.NCompleted, p.Description = 1, "copy "+string(state)
		if state == types.SnapshotStateError {
			p.Completed, p.Err = true, msg
		} else if state == types.SnapshotStateCompleted {
			p.NCompleted, p.Completed = 2, true
		}
		return p, nil
	}
	state, msg, err := describe(ctx, a.n.src, src)
	if err != nil || state == "" {
		return p, err
	}
	p.Description = "snapshot " + string(state)
	switch state {
	case types.SnapshotStateError:
		p.Completed, p.Err = true, msg
	case types.SnapshotStateCompleted:
		p.NCompleted = 1
		out, err := a.n.dst.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String(a.n.sc.SourceRegion), SourceSnapshotId: aws.String(src)})
		if ec2api.Code(err) == ec2api.CodeResourceLimitExceeded {
			p.Description = "copy queued"
			return p, nil
		}
		if err != nil {
			return p, err
		}
		a.n.mu.Lock()
		a.n.copies[src] = aws.ToString(out.SnapshotId)
		a.n.mu.Unlock()
		p.Description = "copy started"
	}
	return p, nil
}

func (naiveAction) Cancel(string, *velerov1api.Backup) error { return nil }

// describe returns a snapshot's state and message; "" while EC2 does not show it yet.
func describe(ctx context.Context, c *ec2.Client, id string) (types.SnapshotState, string, error) {
	out, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{id}})
	if ec2api.IsNotFound(err) || err == nil && len(out.Snapshots) == 0 {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return out.Snapshots[0].State, aws.ToString(out.Snapshots[0].StateMessage), nil
}
