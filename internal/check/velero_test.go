package check

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// fakeKube is a cluster holding objs, read as the check reads it.
func fakeKube(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{velerov1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func deployment(args ...string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "velero"}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "velero", Command: []string{"/velero"}, Args: append([]string{"server"}, args...)}}
	return d
}

func TestVeleroSettingsFromItsDeployment(t *testing.T) {
	tests := []struct {
		name       string
		objs       []client.Object
		timeout    time.Duration
		sync       time.Duration
		workers    int
		ttl        time.Duration
		failed     []string
		notChecked bool
	}{
		{"Velero's defaults", []client.Object{deployment()}, 4 * time.Hour, 10 * time.Second, 1, 720 * time.Hour, nil, false},
		{"flags with =", []client.Object{deployment("--default-item-operation-timeout=12h", "--item-operation-sync-frequency=5s", "--item-block-worker-count=2", "--default-backup-ttl=24h")},
			12 * time.Hour, 5 * time.Second, 2, 24 * time.Hour, nil, false},
		{"flags and values apart", []client.Object{deployment("--default-item-operation-timeout", "8h", "--features=EnableCSI", "--item-block-worker-count", "4")},
			8 * time.Hour, 10 * time.Second, 4, 720 * time.Hour, nil, false},
		{"a sync period too short", []client.Object{deployment("--item-operation-sync-frequency=100ms")}, 4 * time.Hour, 100 * time.Millisecond, 1, 720 * time.Hour,
			[]string{"--item-operation-sync-frequency"}, false},
		{"malformed values", []client.Object{deployment("--default-item-operation-timeout=soon", "--item-block-worker-count=0")}, 4 * time.Hour, 10 * time.Second, 1, 720 * time.Hour,
			[]string{"--default-item-operation-timeout", "--item-block-worker-count"}, false},
		{"no Deployment", nil, 4 * time.Hour, 10 * time.Second, 1, 720 * time.Hour, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Checker{Kube: fakeKube(t, tt.objs...), Namespace: "velero"}
			s := readSettings(t.Context(), c.Kube, c.Namespace)
			if s.itemOperationTimeout != tt.timeout || s.syncPeriod != tt.sync || s.itemBlockWorkers != tt.workers || s.defaultTTL != tt.ttl || s.known() == tt.notChecked {
				t.Errorf("settings %+v", s)
			}
			var failed []string
			sec := s.section()
			for _, f := range sec.Findings {
				if f.Status == Fail {
					failed = append(failed, f.Check)
				}
				if tt.notChecked && f.Status != NotChecked {
					t.Errorf("%+v, want not checked without the Deployment", f)
				}
			}
			if strings.Join(failed, ",") != strings.Join(tt.failed, ",") {
				t.Errorf("failed %v, want %v", failed, tt.failed)
			}
		})
	}
}

func TestItemOperationTimeoutAgainstTheCopies(t *testing.T) {
	schedule := func(name string, timeout time.Duration, locations ...string) velerov1.Schedule {
		s := velerov1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.Spec.Template.ItemOperationTimeout = metav1.Duration{Duration: timeout}
		s.Spec.Template.VolumeSnapshotLocations = locations
		return s
	}
	tests := []struct {
		name      string
		volumes   int
		times     []copyTime
		timeout   time.Duration
		schedules []velerov1.Schedule
		want      []Status
		detail    string
	}{
		{"covered", 40, []copyTime{{where: "us-west-2", each: time.Hour}}, 4 * time.Hour, nil, []Status{Pass}, "expected 2h"},
		{"too short", 41, []copyTime{{where: "us-west-2", each: time.Hour}}, 2 * time.Hour, nil, []Status{Fail}, "is shorter than the copies' expected 3h"},
		{"the longest destination counts", 10, []copyTime{{where: "us-west-2", each: time.Minute}, {where: "eu-west-1", each: 5 * time.Hour}}, 4 * time.Hour, nil,
			[]Status{Fail}, "into eu-west-1"},
		{"a Schedule's own timeout of this location", 10, []copyTime{{where: "us-west-2", each: time.Hour}}, 4 * time.Hour,
			[]velerov1.Schedule{schedule("nightly", 30*time.Minute, "ebs"), schedule("other", time.Minute, "elsewhere")}, []Status{Fail}, "Schedule velero/nightly 30m"},
		{"the last copies would start past the plugin's last start of a copy", 150, []copyTime{{where: "us-west-2", each: 5 * time.Minute}}, 45 * time.Minute, nil,
			[]Status{Fail}, "leaves the last copies no time to start: they would start 35m after their sources, and the plugin starts no copy within 11m15s of a source's timeout"},
		{"the last copies start in time", 150, []copyTime{{where: "us-west-2", each: 5 * time.Minute}}, time.Hour, nil, []Status{Pass}, "expected 40m"},
		{"no copy timed yet", 10, nil, 4 * time.Hour, nil, []Status{NotChecked}, "no completed copy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := &locationCheck{Checker: &Checker{Namespace: "velero"}, sourcesKnown: true, copyTimes: tt.times,
				cfg: model.Config{Region: "us-east-1", CopyToRegion: "us-west-2"}}
			lc.vsl.Name = "ebs"
			lc.sources = make([]types.Volume, tt.volumes)
			lc.cluster.settings = settings{itemOperationTimeout: tt.timeout}
			lc.cluster.schedules = tt.schedules
			judgeOperationTimeouts(lc)
			if len(lc.findings) != len(tt.want) {
				t.Fatalf("%+v, want %v", lc.findings, tt.want)
			}
			for i, f := range lc.findings {
				if f.Status != tt.want[i] || !strings.Contains(f.Detail, tt.detail) || (f.Status == Fail) != (f.Fix != "") {
					t.Errorf("%+v, want %s with %q", f, tt.want[i], tt.detail)
				}
			}
		})
	}
}

func backup(name, location string, ttl time.Duration) velerov1.Backup {
	b := velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name}}
	b.Spec.TTL = metav1.Duration{Duration: ttl}
	b.Spec.VolumeSnapshotLocations = []string{location}
	return b
}

func TestBackupTTLAgainstTheVaultLock(t *testing.T) {
	schedule := func(name string, ttl time.Duration) velerov1.Schedule {
		s := velerov1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.Spec.Template.TTL = metav1.Duration{Duration: ttl}
		return s
	}
	tests := []struct {
		name       string
		defaultTTL time.Duration
		schedules  []velerov1.Schedule
		backups    []velerov1.Backup
		failed     []string
		want       Status
	}{
		{"longer than the lock", 720 * time.Hour, []velerov1.Schedule{schedule("weekly", 60*24*time.Hour)}, []velerov1.Backup{backup("kept", "ebs", 60*24*time.Hour)}, nil, Pass},
		{"the default shorter", 24 * time.Hour, nil, nil, []string{"--default-backup-ttl 24h"}, Fail},
		{"a Schedule shorter", 720 * time.Hour, []velerov1.Schedule{schedule("hourly", 2*time.Hour), schedule("weekly", 0)}, nil, []string{"Schedule velero/hourly's TTL 2h"}, Fail},
		{"Backups of the location shorter", 720 * time.Hour, nil,
			[]velerov1.Backup{backup("short-1", "ebs", time.Hour), backup("short-2", "ebs", 2*time.Hour), backup("elsewhere", "other", time.Hour)},
			[]string{"2 Backups of the location (short-1, short-2)"}, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := &locationCheck{Checker: &Checker{Namespace: "velero"},
				cfg: model.Config{Vault: model.VaultConfig{AccountID: "222222222222", Lock: model.Lock{Mode: model.LockModeCompliance, Days: 30}}}}
			lc.cluster.settings = settings{defaultTTL: tt.defaultTTL}
			lc.cluster.schedules, lc.cluster.backups = tt.schedules, tt.backups
			lc.vsl.Name = "ebs"
			lockAgainstTTL(lc)
			var failed []string
			for _, f := range lc.findings {
				if f.Status == Fail {
					failed = append(failed, f.Detail)
					if !strings.Contains(f.Detail, "keeps their locked vault copies") || f.Fix == "" {
						t.Errorf("%+v does not say what deletion keeps, or how to fix it", f)
					}
				}
			}
			if len(failed) != len(tt.failed) || tt.want == Pass && (len(lc.findings) != 1 || lc.findings[0].Status != Pass) {
				t.Errorf("%+v, want failures %v", lc.findings, tt.failed)
			}
			for i := range failed {
				if !strings.HasPrefix(failed[i], tt.failed[i]) {
					t.Errorf("failure %q, want it to start %q", failed[i], tt.failed[i])
				}
			}
		})
	}
}

func TestHumanDurations(t *testing.T) {
	for d, want := range map[time.Duration]string{4 * time.Hour: "4h", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s", 720 * time.Hour: "720h", 100 * time.Millisecond: "100ms"} {
		if got := human(d); got != want {
			t.Errorf("human(%v) = %q, want %q", d, got, want)
		}
	}
}

// Several locations of the provider need a default, or Velero fails every backup that names
// none of them.
func TestDefaultLocationOfTheProvider(t *testing.T) {
	const provider = "velero-async.io/aws"
	loc := func(name string) *velerov1.VolumeSnapshotLocation {
		return &velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: name},
			Spec: velerov1.VolumeSnapshotLocationSpec{Provider: provider, Config: map[string]string{"region": "us-east-1"}}}
	}
	tests := []struct {
		name      string
		locations []string
		kube      func(t *testing.T, objs ...client.Object) client.Reader
		args      []string
		status    Status
		detail    string
		fix       string
	}{
		{"one location: backups use it", []string{"ebs"}, fakeKube, nil, Pass, "ebs is the only location of velero-async.io/aws", ""},
		{"several, one the default: backups use it", []string{"ebs", "dr"}, fakeKube, []string{"--default-volume-snapshot-locations=aws:default,velero-async.io/aws:ebs"},
			Pass, "velero-async.io/aws:ebs", ""},
		{"several and no default: a warning with the patch", []string{"ebs", "dr", "vault"}, fakeKube, []string{"--default-volume-snapshot-locations=aws:default"},
			Warn, "3 locations of velero-async.io/aws (dr, ebs, vault) and none is the default: Velero fails every backup that names none of them",
			`kubectl -n velero patch deployment velero --type json -p '[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--default-volume-snapshot-locations=velero-async.io/aws:NAME"}]'`},
		{"a default that names no location: fails", []string{"ebs", "dr"}, fakeKube, []string{"--default-volume-snapshot-locations", "velero-async.io/aws:gone"},
			Fail, "velero-async.io/aws:gone names no VolumeSnapshotLocation", "--default-volume-snapshot-locations=velero-async.io/aws:NAME"},
		{"several and the Deployment refused: incomplete", []string{"ebs", "dr"},
			func(t *testing.T, objs ...client.Object) client.Reader {
				return refusing{fakeKube(t, objs...), []string{"Deployment"}}
			}, nil, Incomplete, "whether one is the default is not known", "grant get on deployments.apps in namespace velero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{deployment(tt.args...)}
			for _, n := range tt.locations {
				objs = append(objs, loc(n))
			}
			c := &Checker{Kube: tt.kube(t, objs...), Namespace: "velero", Provider: provider, Resolver: location.New(location.WithReader(fakeKube(t)))}
			rep, err := c.Run(t.Context(), "none") // no location checked: the settings only
			if err != nil {
				t.Fatal(err)
			}
			f := findingOf(t, rep, "--default-volume-snapshot-locations")
			if f.Status != tt.status || !strings.Contains(f.Detail, tt.detail) || !strings.Contains(f.Fix, tt.fix) {
				t.Errorf("%s: %s (%s) — fix: %s; want %s with %q and fix %q", f.Check, f.Status, f.Detail, f.Fix, tt.status, tt.detail, tt.fix)
			}
		})
	}
}
