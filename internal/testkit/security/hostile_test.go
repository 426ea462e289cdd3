package security

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework/common"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
	plugin "github.com/velero-async/velero-plugin-for-aws/velero-plugin-for-aws"
)

// adapters are the plugin's three adapters in this process, reaching a simulator.
type adapters struct {
	sim *ec2sim.Simulator
	vs  *plugin.VolumeSnapshotter
	bia *plugin.SnapshotProgressAction
	ria *plugin.VolumeRestoreAction
}

// registry is a plugin server that keeps what plugin.Register registers, so that a test can
// make the plugins in this process exactly as the plugin binary serves them.
type registry struct {
	framework.Server
	made map[string]common.HandlerInitializer
}

func (r *registry) RegisterVolumeSnapshotter(name string, f common.HandlerInitializer) framework.Server {
	r.made[name] = f
	return r
}

func (r *registry) RegisterBackupItemActionV2(name string, f common.HandlerInitializer) framework.Server {
	r.made[name] = f
	return r
}

func (r *registry) RegisterRestoreItemActionV2(name string, f common.HandlerInitializer) framework.Server {
	r.made[name] = f
	return r
}

// instance returns the plugin registered as name, made with log.
func instance[T any](t *testing.T, r *registry, name string, log logrus.FieldLogger) T {
	t.Helper()
	p, err := r.made[name](log)
	if err != nil {
		t.Fatalf("making %s: %v", name, err)
	}
	v, ok := p.(T)
	if !ok {
		t.Fatalf("%s is a %T", name, p)
	}
	return v
}

// newAdapters starts a simulator and makes the adapters through plugin.Register, as main.go
// registers them.
func newAdapters(t *testing.T) *adapters {
	t.Helper()
	srv, err := rig.StartSimulator(rig.FastConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	reg := &registry{Server: framework.NewServer(), made: map[string]common.HandlerInitializer{}}
	plugin.Register(reg, ec2api.NewFactory())
	return &adapters{
		sim: srv.Sim,
		vs:  instance[*plugin.VolumeSnapshotter](t, reg, model.VolumeSnapshotterName, log),
		bia: instance[*plugin.SnapshotProgressAction](t, reg, model.BackupItemActionName, log),
		ria: instance[*plugin.VolumeRestoreAction](t, reg, model.RestoreItemActionName, log),
	}
}

// noPanic runs f and fails the test, naming what, if it panics.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s panicked: %v", what, r)
		}
	}()
	f()
}

// checkErr fails the test unless err is nil when want is "", or contains every "|"-separated
// part of want.
func checkErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error %v", what, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want one with %q", what, want)
	case want != "":
		for _, part := range strings.Split(want, "|") {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s: error %q lacks %q", what, err, part)
			}
		}
	}
}

const hostileVolume = "vol-0123456789abcdef0"

// pvObject builds an unstructured PV from a spec and labels.
func pvObject(spec any, labels map[string]any) *unstructured.Unstructured {
	obj := map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv-hostile", "labels": labels}}
	if spec != nil {
		obj["spec"] = spec
	}
	return &unstructured.Unstructured{Object: obj}
}

func inTree(volumeID any) map[string]any {
	return map[string]any{"awsElasticBlockStore": map[string]any{"volumeID": volumeID}}
}

func csiSpec(driver, handle string, zone string) map[string]any {
	spec := map[string]any{"csi": map[string]any{"driver": driver, "volumeHandle": handle}}
	if zone != "" {
		spec["nodeAffinity"] = map[string]any{"required": map[string]any{"nodeSelectorTerms": []any{map[string]any{
			"matchExpressions": []any{map[string]any{"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": []any{zone}}},
		}}}}
	}
	return spec
}

// TestHostilePersistentVolumes feeds odd PVs to GetVolumeID and both actions' Execute: each
// gets a clear error or a documented no-op (no volume ID, no operation), never a panic.
func TestHostilePersistentVolumes(t *testing.T) {
	a := newAdapters(t)
	tests := []struct {
		name      string
		pv        *unstructured.Unstructured
		awsRegion string
		// wantID is GetVolumeID's answer; wantErr the text its error must have ("" none).
		wantID, wantErr string
		// wantOp is the region of the backup operation ("" none); restoreOp whether the
		// restore action waits for the volume.
		wantOp    string
		restoreOp bool
	}{
		{name: "in-tree", pv: pvObject(inTree("aws://us-east-1a/"+hostileVolume), nil), wantID: hostileVolume, wantOp: "us-east-1", restoreOp: true},
		{name: "volume ID missing", pv: pvObject(map[string]any{"awsElasticBlockStore": map[string]any{}}, nil), wantErr: "pv-hostile|volumeID is missing"},
		{name: "volume ID empty", pv: pvObject(inTree(""), nil), wantErr: "volumeID is missing"},
		{name: "volume ID malformed", pv: pvObject(inTree("aws://us-east-1a/vol-XYZ"), nil), wantErr: `"aws://us-east-1a/vol-XYZ"|not an EBS volume ID`},
		{name: "volume ID a snapshot ID", pv: pvObject(inTree("snap-0123456789abcdef0"), nil), wantErr: "not an EBS volume ID"},
		{name: "volume ID not a string", pv: pvObject(inTree(42), nil), wantErr: "not a string"},
		{name: "source not an object", pv: pvObject(map[string]any{"awsElasticBlockStore": "vol-1"}, nil), wantErr: "not an object"},
		{name: "in-tree and CSI at once", pv: pvObject(map[string]any{"awsElasticBlockStore": map[string]any{"volumeID": hostileVolume},
			"csi": map[string]any{"driver": "ebs.csi.aws.com", "volumeHandle": hostileVolume}}, nil), wantErr: "both"},
		{name: "EBS CSI with a foreign handle", pv: pvObject(csiSpec("ebs.csi.aws.com", "fs-0123456789abcdef0", "us-east-1a"), nil), wantErr: `"fs-0123456789abcdef0"`},
		{name: "EFS CSI", pv: pvObject(csiSpec("efs.csi.aws.com", "fs-0123456789abcdef0::fsap-1", ""), nil)},
		{name: "other CSI with a vol- handle", pv: pvObject(csiSpec("disk.csi.azure.com", hostileVolume, "us-east-1a"), nil)},
		{name: "NFS", pv: pvObject(map[string]any{"nfs": map[string]any{"server": "10.0.0.1", "path": "/"}}, nil)},
		{name: "no spec", pv: pvObject(nil, nil)},
		{name: "spec not an object", pv: pvObject("garbage", nil)},
		{name: "Local Zone", pv: pvObject(inTree("aws://us-west-2-lax-1a/"+hostileVolume), nil), wantID: hostileVolume, wantOp: "us-west-2", restoreOp: true},
		{name: "Wavelength Zone", pv: pvObject(csiSpec("ebs.csi.aws.com", hostileVolume, "us-east-1-wl1-bos-wlz-1"), nil), wantID: hostileVolume, wantOp: "us-east-1", restoreOp: true},
		{name: "GovCloud", pv: pvObject(inTree(hostileVolume), map[string]any{"topology.kubernetes.io/zone": "us-gov-west-1a"}), wantID: hostileVolume, wantOp: "us-gov-west-1", restoreOp: true},
		{name: "China", pv: pvObject(inTree("aws://cn-north-1a/"+hostileVolume), nil), wantID: hostileVolume, wantOp: "cn-north-1", restoreOp: true},
		{name: "region label only", pv: pvObject(inTree(hostileVolume), map[string]any{"topology.kubernetes.io/region": "eu-central-2"}), wantID: hostileVolume, wantOp: "eu-central-2", restoreOp: true},
		{name: "unknown zone shape", pv: pvObject(inTree(hostileVolume), map[string]any{"topology.kubernetes.io/zone": "moon-base-1"}), wantID: hostileVolume},
		{name: "labels of the wrong type", pv: pvObject(inTree(hostileVolume), map[string]any{"topology.kubernetes.io/zone": 7}), wantID: hostileVolume},
		{name: "no zone or region, no AWS_REGION", pv: pvObject(csiSpec("ebs.csi.aws.com", hostileVolume, ""), nil), wantID: hostileVolume},
		{name: "no zone or region, AWS_REGION", pv: pvObject(csiSpec("ebs.csi.aws.com", hostileVolume, ""), nil), awsRegion: "ap-south-2", wantID: hostileVolume, wantOp: "ap-south-2"},
	}
	backup := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: harness.Namespace, Name: "hostile"}}
	restore := &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: harness.Namespace, Name: "hostile"}, Spec: velerov1.RestoreSpec{BackupName: "hostile"}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", tc.awsRegion)
			t.Setenv("AWS_DEFAULT_REGION", "")
			noPanic(t, "GetVolumeID", func() {
				id, err := a.vs.GetVolumeID(tc.pv)
				checkErr(t, "GetVolumeID", err, tc.wantErr)
				if id != tc.wantID {
					t.Errorf("GetVolumeID = %q, want %q", id, tc.wantID)
				}
			})
			noPanic(t, "backup Execute", func() {
				_, _, opID, _, err := a.bia.Execute(tc.pv, backup)
				checkErr(t, "backup Execute", err, "")
				if got := regionOfOp(opID); got != tc.wantOp {
					t.Errorf("backup Execute operation %q, want one in %q", opID, tc.wantOp)
				}
			})
			noPanic(t, "restore Execute", func() {
				fromBackup := pvObject(inTree("vol-0fedcba9876543210"), nil)
				out, err := a.ria.Execute(&velero.RestoreItemActionExecuteInput{Item: tc.pv, ItemFromBackup: fromBackup, Restore: restore})
				checkErr(t, "restore Execute", err, "")
				if out != nil && (out.OperationID != "") != tc.restoreOp {
					t.Errorf("restore Execute operation %q, want one: %v", out.OperationID, tc.restoreOp)
				}
			})
		})
	}
}

// regionOfOp returns the region of a backup operation ID, "" for none.
func regionOfOp(id string) string {
	if id == "" {
		return ""
	}
	op, err := model.ParseOperationID(id)
	if err != nil {
		return "unparsable " + id
	}
	return op.Region
}

// TestHostileOperationIDs calls Progress and Cancel of both actions with operation IDs that are
// not theirs: each gets an error naming the ID (which fails only that operation), never a panic.
func TestHostileOperationIDs(t *testing.T) {
	a := newAdapters(t)
	ids := []struct{ name, id string }{
		{"empty", ""},
		{"garbage", "hello world"},
		{"truncated", "ebs:v1:us-east-1:" + hostileVolume},
		{"truncated time", "ebs:v1:us-east-1:" + hostileVolume + ":"},
		{"extra field", "ebs:v1:us-east-1:" + hostileVolume + ":1:2"},
		{"older format without version", "ebs:us-east-1:" + hostileVolume + ":1764471600"},
		{"future format version", "ebs:v2:us-east-1:" + hostileVolume + ":1764471600"},
		{"CSI plugin's", "velero.io/csi-volumesnapshot-backup:ns/name"},
		{"upstream AWS plugin's snapshot ID", "snap-0123456789abcdef0"},
		{"bad region", "ebs:v1:US_EAST:" + hostileVolume + ":1"},
		{"snapshot ID for volume", "ebs:v1:us-east-1:snap-0123456789abcdef0:1"},
		{"negative time", "ebs:v1:us-east-1:" + hostileVolume + ":-5"},
		{"time overflow", "ebs:v1:us-east-1:" + hostileVolume + ":99999999999999999999"},
		{"NUL and newlines", "ebs:v1:us-east-1:\x00\n" + hostileVolume + ":1"},
		{"huge", strings.Repeat("ebs:", 100000)},
	}
	backup := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: harness.Namespace, Name: "hostile"}}
	restore := &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: harness.Namespace, Name: "hostile"}, Spec: velerov1.RestoreSpec{BackupName: "hostile"}}
	valid := map[string]string{
		"backup":  model.Operation{Region: "us-east-1", VolumeID: hostileVolume}.String(),
		"restore": model.VolumeOperation{Operation: model.Operation{Region: "us-east-1", VolumeID: hostileVolume}}.String(),
	}
	// Each action also gets the other's valid IDs: a backup operation ID is not a restore's.
	cases := append(ids, struct{ name, id string }{"the restore action's", valid["restore"]}, struct{ name, id string }{"the backup action's", valid["backup"]})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := "operation ID"
			if tc.id != valid["restore"] {
				noPanic(t, "backup Progress", func() {
					_, err := a.bia.Progress(tc.id, backup)
					checkErr(t, "backup Progress", err, want)
				})
				noPanic(t, "backup Cancel", func() {
					checkErr(t, "backup Cancel", a.bia.Cancel(tc.id, backup), want)
				})
			}
			if tc.id != valid["backup"] {
				noPanic(t, "restore Progress", func() {
					_, err := a.ria.Progress(tc.id, restore)
					checkErr(t, "restore Progress", err, want)
				})
				noPanic(t, "restore Cancel", func() {
					checkErr(t, "restore Cancel", a.ria.Cancel(tc.id, restore), "") // a documented no-op
				})
			}
		})
	}
}

// TestHostileLocationConfig initialises the VolumeSnapshotter with bad configs: each is an error
// naming the key and the value.
func TestHostileLocationConfig(t *testing.T) {
	newAdapters(t) // the simulator answers the restore-zone check
	tests := []struct {
		name    string
		config  map[string]string
		wantErr string
	}{
		{"valid", map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2", "copyCompletionDurationMinutes": "15"}, ""},
		{"nil", nil, `"region"|required`},
		{"unknown key", map[string]string{"region": "us-east-1", "bucket": "b"}, `"bucket"`},
		{"misspelt key", map[string]string{"region": "us-east-1", "copytoregion": "us-west-2"}, `"copytoregion"|unknown`},
		{"copy KMS key longer than a tag value", map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2", "copyKmsKeyId": strings.Repeat("k", 257)}, `"copyKmsKeyId"|257 characters|at most 256`},
		{"upstream BSL key", map[string]string{"region": "us-east-1", "s3ForcePathStyle": "true"}, `"s3ForcePathStyle"`},
		{"region empty", map[string]string{"region": ""}, `"region"`},
		{"region upper case", map[string]string{"region": "US-EAST-1"}, `"US-EAST-1"`},
		{"region a zone", map[string]string{"region": "us-east-1a"}, `"us-east-1a"`},
		{"region path", map[string]string{"region": "../../etc/passwd"}, `"../../etc/passwd"`},
		{"region huge", map[string]string{"region": strings.Repeat("us-east-", 1000) + "1"}, `"region"`},
		{"copy region bad", map[string]string{"region": "us-east-1", "copyToRegion": "west"}, `"copyToRegion"|"west"`},
		{"copy region same", map[string]string{"region": "us-east-1", "copyToRegion": "us-east-1"}, `"copyToRegion"|"us-east-1"`},
		{"copy KMS key without copy region", map[string]string{"region": "us-east-1", "copyKmsKeyId": "k"}, `"copyKmsKeyId"|"copyToRegion"`},
		{"duration without copy region", map[string]string{"region": "us-east-1", "copyCompletionDurationMinutes": "15"}, `"copyCompletionDurationMinutes"|"copyToRegion"`},
		{"duration not a number", map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2", "copyCompletionDurationMinutes": "soon"}, `"copyCompletionDurationMinutes"|"soon"`},
		{"duration not a step", map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2", "copyCompletionDurationMinutes": "14"}, `"14"`},
		{"duration too long", map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2", "copyCompletionDurationMinutes": "2895"}, `"2895"`},
		{"duration negative", map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2", "copyCompletionDurationMinutes": "-15"}, `"-15"`},
		{"duration fraction", map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2", "copyCompletionDurationMinutes": "15.0"}, `"15.0"`},
		{"duration overflow", map[string]string{"region": "us-east-1", "copyToRegion": "us-west-2", "copyCompletionDurationMinutes": "99999999999999999999"}, `"99999999999999999999"`},
		{"shared config not a bool", map[string]string{"region": "us-east-1", "enableSharedConfig": "maybe"}, `"enableSharedConfig"|"maybe"`},
		{"restore zone elsewhere", map[string]string{"region": "us-east-1", "restoreAvailabilityZone": "us-west-2a"}, `us-west-2a`},
		{"restore zone unknown", map[string]string{"region": "us-east-1", "restoreAvailabilityZone": "us-east-1z"}, `us-east-1z`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			noPanic(t, "Init", func() {
				vs := plugin.NewVolumeSnapshotter(ec2api.NewFactory(), nil, nil, logrus.New())
				checkErr(t, fmt.Sprintf("Init(%v)", tc.config), vs.Init(tc.config), tc.wantErr)
			})
		})
	}
}

// TestHostileTags snapshots volumes whose tags, and backups whose labels, EC2 would refuse or
// that collide with the plugin's own keys, through CreateSnapshot against the simulator (which
// refuses what EC2 refuses): the snapshot is made, with at most 50 tags, none reserved or too
// long, and the plugin's and Velero's tags intact.
func TestHostileTags(t *testing.T) {
	a := newAdapters(t)
	if err := a.vs.Init(map[string]string{"region": rig.SourceRegion, "copyToRegion": rig.CopyRegion}); err != nil {
		t.Fatal(err)
	}
	many := func(prefix string, n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("%s%02d", prefix, i)] = "v"
		}
		return m
	}
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	tests := []struct {
		name                   string
		volumeTags, labels     map[string]string
		wantTags               map[string]string // must be present with these values
		wantAbsent, wantPrefix []string          // keys that must be absent; wantPrefix: some key with this prefix kept
	}{
		{
			name:       "reserved aws: keys on the volume",
			volumeTags: map[string]string{"aws:cloudformation:stack-name": "s", "AWS:Mixed": "m", "team": "t"},
			wantTags:   map[string]string{"team": "t"},
			wantAbsent: []string{"aws:cloudformation:stack-name", "AWS:Mixed"},
		},
		{
			name:       "60 volume tags",
			volumeTags: many("vt-", 60),
			labels:     many("label-", 10),
			wantPrefix: []string{"label-"},
		},
		{
			name:       "over-long keys and values",
			volumeTags: map[string]string{long("k", 129): "v", "long-value": long("v", 257), "unicode-ok": long("é", 256), long("ü", 128): "ok"},
			labels:     map[string]string{long("l", 200): "v"},
			wantTags:   map[string]string{"unicode-ok": long("é", 256), long("ü", 128): "ok"},
			wantAbsent: []string{long("k", 129), "long-value", long("l", 200)},
		},
		{
			name:       "labels and volume tags colliding with the plugin's keys",
			volumeTags: map[string]string{model.TagCopyToRegion: "eu-west-1", model.TagVolumeType: "io2", model.TagSourceRegion: "ap-south-1"},
			labels:     map[string]string{model.TagCopyToRegion: "eu-west-1", model.TagSourceSnapshotID: "snap-0123456789abcdef0", model.TagCopyRequestedAt: "2020-01-01T00:00:00Z", model.TagBackup: "other"},
			wantTags:   map[string]string{model.TagCopyToRegion: rig.CopyRegion, model.TagVolumeType: "gp3"},
			wantAbsent: []string{model.TagSourceSnapshotID, model.TagSourceRegion, model.TagCopyRequestedAt},
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			backup, pvName := fmt.Sprintf("hostile-%d", i), fmt.Sprintf("pv-%d", i)
			vol := a.sim.AddVolumes(rig.SourceRegion, ec2sim.VolumeSpec{AvailabilityZone: rig.SourceRegion + "a", Type: "gp3", SizeGiB: 10, Tags: tc.volumeTags})[0]
			tags := map[string]string{}
			for k, v := range tc.labels {
				tags[k] = v
			}
			tags[model.TagBackup], tags[model.TagPV] = backup, pvName // core's, set last as core does
			var id string
			noPanic(t, "CreateSnapshot", func() {
				var err error
				id, err = a.vs.CreateSnapshot(vol, rig.SourceRegion+"a", tags)
				checkErr(t, "CreateSnapshot", err, "")
			})
			var got map[string]string
			for _, s := range a.sim.Snapshots(rig.SourceRegion) {
				if s.ID == id {
					got = s.Tags
				}
			}
			if got == nil {
				t.Fatalf("snapshot %q not in the simulator", id)
			}
			if len(got) > 50 {
				t.Errorf("%d tags, EC2 allows 50", len(got))
			}
			want := map[string]string{model.TagBackup: backup, model.TagPV: pvName, model.TagCopyToRegion: rig.CopyRegion}
			for k, v := range tc.wantTags {
				want[k] = v
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("tag %.40q = %.40q, want %.40q", k, got[k], v)
				}
			}
			for _, k := range tc.wantAbsent {
				if v, ok := got[k]; ok {
					t.Errorf("tag %.40q = %.40q present, want it left off", k, v)
				}
			}
			for _, p := range tc.wantPrefix {
				if !hasKeyPrefix(got, p) {
					t.Errorf("no tag starting %q kept", p)
				}
			}
		})
	}
}

func hasKeyPrefix(m map[string]string, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
