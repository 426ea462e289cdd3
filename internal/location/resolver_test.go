package location

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

const ns = "velero"

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := velerov1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

type vslOpt func(*velerov1.VolumeSnapshotLocation)

func withCred(secret, key string) vslOpt {
	return func(v *velerov1.VolumeSnapshotLocation) {
		v.Spec.Credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}
	}
}

func withConfig(kv ...string) vslOpt {
	return func(v *velerov1.VolumeSnapshotLocation) {
		for i := 0; i < len(kv); i += 2 {
			v.Spec.Config[kv[i]] = kv[i+1]
		}
	}
}

func withProvider(p string) vslOpt {
	return func(v *velerov1.VolumeSnapshotLocation) { v.Spec.Provider = p }
}

func vsl(name, region string, opts ...vslOpt) *velerov1.VolumeSnapshotLocation {
	v := &velerov1.VolumeSnapshotLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: velerov1.VolumeSnapshotLocationSpec{
			Provider: DefaultProvider,
			Config:   map[string]string{ConfigRegion: region},
		},
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func backup(name string, locations ...string) *velerov1.Backup {
	return &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       velerov1.BackupSpec{VolumeSnapshotLocations: locations},
	}
}

func restore(name, backupName string) *velerov1.Restore {
	return &velerov1.Restore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       velerov1.RestoreSpec{BackupName: backupName},
	}
}

func newFake(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).Build()
}

type fixture struct {
	r    *Resolver
	dir  string
	hook *logtest.Hook
	clk  *clocktesting.FakeClock
}

func newFixture(t *testing.T, rd client.Reader, opts ...Option) fixture {
	t.Helper()
	log, hook := logtest.NewNullLogger()
	dir := t.TempDir()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	all := append([]Option{WithReader(rd), WithNamespace(ns), WithTempDir(dir), WithLogger(log), WithClock(clk)}, opts...)
	return fixture{r: New(all...), dir: dir, hook: hook, clk: clk}
}

func (f fixture) credPath(secret, key string) string {
	return filepath.Join(f.dir, CredentialsDirName, ns, credentialsFileName(ns, secret, key))
}

// got is a Location reduced to what the tests compare.
type got struct {
	Name    string
	Profile string
	File    string
}

func reduce(c Choice) []got {
	var out []got
	for _, l := range c.Locations {
		out = append(out, got{l.Name, l.Credentials.Profile, l.Credentials.File})
	}
	return out
}

func TestForBackup(t *testing.T) {
	credA := secret("creds-a", map[string]string{"cloud": "[default]\naws_access_key_id=A\n"})
	credB := secret("creds-b", map[string]string{"cloud": "[default]\naws_access_key_id=B\n"})
	cases := []struct {
		name     string
		objs     []client.Object
		backup   *velerov1.Backup
		region   string
		opts     []Option
		want     []got // File "@secret-key" stands for the fixture's credentials file
		note     string
		noteNone bool
		err      string
	}{
		{
			name:     "named location",
			objs:     []client.Object{vsl("a", "us-east-1"), vsl("b", "us-east-1")},
			backup:   backup("bk", "b"),
			region:   "us-east-1",
			want:     []got{{Name: "b"}},
			noteNone: true,
		},
		{
			name:     "named locations of other providers ignored",
			objs:     []client.Object{vsl("core", "us-east-1", withProvider("velero.io/aws")), vsl("b", "us-east-1")},
			backup:   backup("bk", "core", "b"),
			region:   "us-east-1",
			want:     []got{{Name: "b"}},
			noteNone: true,
		},
		{
			name:     "none named, one of the provider",
			objs:     []client.Object{vsl("only", "us-east-1"), vsl("core", "us-east-1", withProvider("velero.io/aws"))},
			backup:   backup("bk"),
			region:   "us-east-1",
			want:     []got{{Name: "only"}},
			noteNone: true,
		},
		{
			name:   "none named, several, in name order",
			objs:   []client.Object{vsl("zeta", "us-east-1"), vsl("alpha", "us-east-1"), vsl("core", "us-east-1", withProvider("velero.io/aws"))},
			backup: backup("bk"),
			region: "us-east-1",
			want:   []got{{Name: "alpha"}, {Name: "zeta"}},
			note:   "backup velero/bk names no VolumeSnapshotLocation of provider velero-async.io/aws: trying alpha, zeta",
		},
		{
			name:     "none named, server default first",
			objs:     []client.Object{vsl("zeta", "us-east-1"), vsl("alpha", "us-east-1")},
			backup:   backup("bk"),
			region:   "us-east-1",
			opts:     []Option{WithDefaultLocations(map[string]string{DefaultProvider: "zeta", "velero.io/aws": "alpha"})},
			want:     []got{{Name: "zeta"}, {Name: "alpha"}},
			noteNone: true,
		},
		{
			name:   "only other providers named",
			objs:   []client.Object{vsl("core", "us-east-1", withProvider("velero.io/aws")), vsl("mine", "us-east-1")},
			backup: backup("bk", "core"),
			region: "us-east-1",
			want:   []got{{Name: "mine"}},
			note:   "backup velero/bk names no VolumeSnapshotLocation of provider velero-async.io/aws",
		},
		{
			name:   "other providers only: default chain",
			objs:   []client.Object{vsl("core", "us-east-1", withProvider("velero.io/aws"))},
			backup: backup("bk"),
			region: "us-east-1",
			want:   []got{{}},
			note:   "no VolumeSnapshotLocation of provider velero-async.io/aws in namespace velero: using the default AWS credential chain",
		},
		{
			name:   "no location at all: default chain",
			backup: backup("bk"),
			region: "us-east-1",
			want:   []got{{}},
			note:   "using the default AWS credential chain",
		},
		{
			name:   "named location missing: all of the provider",
			objs:   []client.Object{vsl("a", "us-east-1"), vsl("b", "us-east-1")},
			backup: backup("bk", "gone"),
			region: "us-east-1",
			want:   []got{{Name: "a"}, {Name: "b"}},
			note:   "VolumeSnapshotLocation gone named by backup velero/bk not found: trying a, b",
		},
		{
			name:     "region match among several",
			objs:     []client.Object{vsl("a", "us-east-1"), vsl("b", "eu-west-1"), vsl("c", "us-west-2")},
			backup:   backup("bk"),
			region:   "eu-west-1",
			want:     []got{{Name: "b"}},
			noteNone: true,
		},
		{
			name: "two in the same region: both, in name order, each with its own credentials",
			objs: []client.Object{
				vsl("acct-b", "us-east-1", withCred("creds-b", "cloud")),
				vsl("acct-a", "us-east-1", withCred("creds-a", "cloud")),
				vsl("other", "eu-west-1"),
				credA, credB,
			},
			backup: backup("bk"),
			region: "us-east-1",
			want:   []got{{Name: "acct-a", File: "@creds-a-cloud"}, {Name: "acct-b", File: "@creds-b-cloud"}},
			note:   "backup velero/bk names no VolumeSnapshotLocation of provider velero-async.io/aws: trying acct-a, acct-b",
		},
		{
			name:   "copy region matches after own region",
			objs:   []client.Object{vsl("src", "us-east-1", withConfig(ConfigCopyToRegion, "eu-west-1")), vsl("eu", "eu-west-1"), vsl("x", "ap-south-1")},
			backup: backup("bk"),
			region: "eu-west-1",
			want:   []got{{Name: "eu"}, {Name: "src"}},
			note:   "backup velero/bk names no VolumeSnapshotLocation of provider velero-async.io/aws: trying eu, src",
		},
		{
			name:   "no region match: all candidates with a note",
			objs:   []client.Object{vsl("a", "us-east-1"), vsl("b", "eu-west-1")},
			backup: backup("bk"),
			region: "ap-south-1",
			want:   []got{{Name: "a"}, {Name: "b"}},
			note:   "no VolumeSnapshotLocation of provider velero-async.io/aws has region ap-south-1: trying a (us-east-1), b (eu-west-1)",
		},
		{
			name:     "named location in another region is kept",
			objs:     []client.Object{vsl("a", "us-east-1"), vsl("b", "eu-west-1")},
			backup:   backup("bk", "a"),
			region:   "eu-west-1",
			want:     []got{{Name: "a"}},
			note:     "has region eu-west-1: trying a (us-east-1)",
			noteNone: false,
		},
		{
			name:   "missing Secret",
			objs:   []client.Object{vsl("a", "us-east-1", withCred("nope", "cloud"))},
			backup: backup("bk", "a"),
			region: "us-east-1",
			err:    `VolumeSnapshotLocation "a": credential Secret velero/nope key "cloud": secret not found`,
		},
		{
			name:   "Secret without the key",
			objs:   []client.Object{vsl("a", "us-east-1", withCred("creds-a", "other")), credA},
			backup: backup("bk", "a"),
			region: "us-east-1",
			err:    `VolumeSnapshotLocation "a": credential Secret velero/creds-a key "other": secret has no such key`,
		},
		{
			name:   "selector that cannot name a file",
			objs:   []client.Object{vsl("a", "us-east-1", withCred("creds-a", "../x")), credA},
			backup: backup("bk", "a"),
			region: "us-east-1",
			err:    `cannot name a file`,
		},
		{
			name:     "config credentialsFile and profile",
			objs:     []client.Object{vsl("a", "us-east-1", withConfig(ConfigCredentialsFile, "/etc/aws/creds", ConfigProfile, "acct"))},
			backup:   backup("bk", "a"),
			region:   "us-east-1",
			want:     []got{{Name: "a", Profile: "acct", File: "/etc/aws/creds"}},
			noteNone: true,
		},
		{
			name:     "credential overrides config credentialsFile, profile kept",
			objs:     []client.Object{vsl("a", "us-east-1", withCred("creds-a", "cloud"), withConfig(ConfigCredentialsFile, "/etc/aws/creds", ConfigProfile, "acct")), credA},
			backup:   backup("bk", "a"),
			region:   "us-east-1",
			want:     []got{{Name: "a", Profile: "acct", File: "@creds-a-cloud"}},
			noteNone: true,
		},
		{
			name:     "no region asked: no filtering",
			objs:     []client.Object{vsl("a", "us-east-1"), vsl("b", "eu-west-1")},
			backup:   backup("bk", "b"),
			want:     []got{{Name: "b"}},
			noteNone: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newFake(t, tc.objs...), tc.opts...)
			c, err := f.r.ForBackup(context.Background(), tc.backup, tc.region)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", err, tc.err)
				}
				var ce *CredentialError
				if !errors.As(err, &ce) || ce.Location != "a" {
					t.Fatalf("error %v is not a CredentialError for location a", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := make([]got, len(tc.want))
			for i, w := range tc.want {
				if strings.HasPrefix(w.File, "@") {
					parts := strings.SplitN(w.File[1:], "-cloud", 2)
					w.File = f.credPath(parts[0], "cloud")
				}
				want[i] = w
			}
			if fmt.Sprint(reduce(c)) != fmt.Sprint(want) {
				t.Fatalf("locations = %+v, want %+v", reduce(c), want)
			}
			if tc.noteNone && c.Note != "" {
				t.Fatalf("note = %q, want none", c.Note)
			}
			if !strings.Contains(c.Note, tc.note) {
				t.Fatalf("note = %q, want it to contain %q", c.Note, tc.note)
			}
			for _, l := range c.Locations {
				if l.DefaultChain() {
					if l.Config != nil || l.Credentials != (ec2api.Credentials{}) {
						t.Fatalf("default chain location not zero: %+v", l)
					}
					continue
				}
				if l.Config[ConfigCredentialsFile] != l.Credentials.File {
					t.Fatalf("config credentialsFile %q != Credentials.File %q", l.Config[ConfigCredentialsFile], l.Credentials.File)
				}
				if l.Config[ConfigRegion] == "" {
					t.Fatalf("config lost its region: %v", l.Config)
				}
			}
		})
	}
}

func TestCredentialFileContentAndMode(t *testing.T) {
	const content = "[default]\naws_access_key_id=AKIAEXAMPLE\naws_secret_access_key=s3cr3t\n"
	rd := newFake(t, vsl("a", "us-east-1", withCred("creds-a", "cloud")), secret("creds-a", map[string]string{"cloud": content}))
	f := newFixture(t, rd)
	c, err := f.r.ForBackup(context.Background(), backup("bk", "a"), "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	path := c.Locations[0].Credentials.File
	if path != f.credPath("creds-a", "cloud") {
		t.Fatalf("path = %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != content {
		t.Fatalf("content = %q, %v", b, err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode = %v, want 0600", fi.Mode().Perm())
	}
	for _, d := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
		di, _ := os.Stat(d)
		if di.Mode().Perm() != 0o700 {
			t.Fatalf("dir %s mode = %v, want 0700", d, di.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("credentials dir holds %d entries, want only the file", len(entries))
	}
	for _, e := range f.hook.AllEntries() {
		if strings.Contains(e.Message, "s3cr3t") || strings.Contains(fmt.Sprint(e.Data), "s3cr3t") {
			t.Fatalf("secret logged: %v", e)
		}
	}
}

func TestCredentialFileRewrittenOnlyOnChange(t *testing.T) {
	rd := newFake(t, vsl("a", "us-east-1", withCred("creds-a", "cloud")), secret("creds-a", map[string]string{"cloud": "v1"}))
	f := newFixture(t, rd)
	ctx := context.Background()
	path := f.credPath("creds-a", "cloud")

	resolve := func() {
		t.Helper()
		if _, err := f.r.ForBackup(ctx, backup("bk", "a"), "us-east-1"); err != nil {
			t.Fatal(err)
		}
	}
	resolve()
	first, _ := os.Stat(path)

	// Same content, after the cache expired: the file is left alone.
	f.clk.Step(time.Minute)
	resolve()
	same, _ := os.Stat(path)
	if !os.SameFile(first, same) {
		t.Fatal("unchanged content rewrote the file")
	}

	// New content: the file is replaced once the cache expires.
	s := &corev1.Secret{}
	if err := rd.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds-a"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data["cloud"] = []byte("v2")
	if err := rd.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	resolve() // within the TTL: cached Secret
	if b, _ := os.ReadFile(path); string(b) != "v1" {
		t.Fatalf("content within TTL = %q, want v1", b)
	}
	f.clk.Step(time.Minute)
	resolve()
	if b, _ := os.ReadFile(path); string(b) != "v2" {
		t.Fatalf("content = %q, want v2", b)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v", fi.Mode().Perm())
	}

	// A widened mode is repaired even when the content is the same.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	f.clk.Step(time.Minute)
	resolve()
	fi, _ = os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after repair = %v", fi.Mode().Perm())
	}
}

func TestUmaskDoesNotWidenAndDirIsRepaired(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	rd := newFake(t, vsl("a", "us-east-1", withCred("creds-a", "cloud")), secret("creds-a", map[string]string{"cloud": "x"}))
	f := newFixture(t, rd)
	root := filepath.Join(f.dir, CredentialsDirName)
	if err := os.MkdirAll(filepath.Join(root, ns), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.ForBackup(context.Background(), backup("bk", "a"), ""); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, filepath.Join(root, ns)} {
		fi, _ := os.Stat(d)
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s mode = %v", d, fi.Mode().Perm())
		}
	}
}

// countingReader counts the API reads and can fail them.
type countingReader struct {
	client.Reader
	gets, lists atomic.Int32
	err         atomic.Pointer[error]
}

func (c *countingReader) fail(err error) {
	if err == nil {
		c.err.Store(nil)
		return
	}
	c.err.Store(&err)
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	if e := c.err.Load(); e != nil {
		return *e
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists.Add(1)
	if e := c.err.Load(); e != nil {
		return *e
	}
	return c.Reader.List(ctx, list, opts...)
}

func TestCacheTTL(t *testing.T) {
	rd := &countingReader{Reader: newFake(t,
		vsl("a", "us-east-1", withCred("creds-a", "cloud")),
		secret("creds-a", map[string]string{"cloud": "x"}),
		backup("bk", "a"),
	)}
	f := newFixture(t, rd)
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if _, err := f.r.ForRestore(ctx, restore("rs", "bk"), "us-east-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.r.WithLogger(logrus.New()).ForBackup(ctx, backup("bk", "a"), "us-east-1"); err != nil {
			t.Fatal(err)
		}
	}
	if rd.lists.Load() != 1 || rd.gets.Load() != 2 {
		t.Fatalf("lists = %d, gets = %d; want 1 and 2 (Backup, Secret)", rd.lists.Load(), rd.gets.Load())
	}
	f.clk.Step(DefaultCacheTTL)
	if _, err := f.r.ForRestore(ctx, restore("rs", "bk"), "us-east-1"); err != nil {
		t.Fatal(err)
	}
	if rd.lists.Load() != 2 || rd.gets.Load() != 4 {
		t.Fatalf("after TTL lists = %d, gets = %d; want 2 and 4", rd.lists.Load(), rd.gets.Load())
	}
}

func warnings(h *logtest.Hook) int {
	n := 0
	for _, e := range h.AllEntries() {
		if e.Level == logrus.WarnLevel {
			n++
		}
	}
	return n
}

func TestNoAPIAccess(t *testing.T) {
	gr := schema.GroupResource{Group: "velero.io", Resource: "volumesnapshotlocations"}
	cases := []struct {
		name string
		err  error
		note string
	}{
		{"forbidden", apierrors.NewForbidden(gr, "", errors.New("RBAC: access denied")), "forbidden"},
		{"unauthorized", apierrors.NewUnauthorized("token expired"), "token expired"},
		{"not serving Velero's API", apierrors.NewNotFound(gr, ""), "not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rd := &countingReader{Reader: newFake(t, vsl("a", "us-east-1"), backup("bk", "a"))}
			rd.fail(tc.err)
			f := newFixture(t, rd)
			ctx := context.Background()
			for i := 0; i < 5; i++ {
				c, err := f.r.ForBackup(ctx, backup("bk", "a"), "us-east-1")
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Locations) != 1 || !c.Locations[0].DefaultChain() {
					t.Fatalf("locations = %+v, want the default chain", c.Locations)
				}
				if !strings.HasPrefix(c.Note, "no Kubernetes API access (") ||
					!strings.HasSuffix(c.Note, "): using the default AWS credential chain") ||
					!strings.Contains(c.Note, tc.note) {
					t.Fatalf("note = %q", c.Note)
				}
				if _, err := f.r.ForRestore(ctx, restore("rs", "bk"), "us-east-1"); err != nil {
					t.Fatal(err)
				}
			}
			if n := warnings(f.hook); n != 1 {
				t.Fatalf("%d warnings, want 1", n)
			}
			if rd.lists.Load()+rd.gets.Load() != 1 {
				t.Fatalf("%d reads while the API is known down, want 1", rd.lists.Load()+rd.gets.Load())
			}

			// Access returns: locations again, logged as back, and a new loss is logged again.
			rd.fail(nil)
			f.clk.Step(DefaultCacheTTL)
			c, err := f.r.ForBackup(ctx, backup("bk", "a"), "us-east-1")
			if err != nil || c.Locations[0].Name != "a" {
				t.Fatalf("after recovery: %+v, %v", c, err)
			}
			rd.fail(tc.err)
			f.clk.Step(DefaultCacheTTL)
			if _, err := f.r.ForBackup(ctx, backup("bk", "a"), "us-east-1"); err != nil {
				t.Fatal(err)
			}
			if n := warnings(f.hook); n != 2 {
				t.Fatalf("%d warnings after a second loss, want 2", n)
			}
		})
	}
}

func TestSecretForbidden(t *testing.T) {
	base := newFake(t, vsl("a", "us-east-1", withCred("creds-a", "cloud")), secret("creds-a", map[string]string{"cloud": "x"}))
	rd := &secretForbidden{Reader: base}
	f := newFixture(t, rd)
	c, err := f.r.ForBackup(context.Background(), backup("bk", "a"), "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Locations[0].DefaultChain() || !strings.Contains(c.Note, "getting Secret velero/creds-a") {
		t.Fatalf("choice = %+v", c)
	}
	if _, err := os.Stat(f.credPath("creds-a", "cloud")); !os.IsNotExist(err) {
		t.Fatalf("credentials file written without the Secret: %v", err)
	}
}

type secretForbidden struct{ client.Reader }

func (s *secretForbidden) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("no"))
	}
	return s.Reader.Get(ctx, key, obj, opts...)
}

func TestCanceledContextIsAnError(t *testing.T) {
	rd := &countingReader{Reader: newFake(t, vsl("a", "us-east-1"))}
	rd.fail(context.Canceled)
	f := newFixture(t, rd)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.r.ForBackup(ctx, backup("bk", "a"), "us-east-1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if warnings(f.hook) != 0 {
		t.Fatal("a canceled call was logged as lost API access")
	}
}

func TestNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	log, hook := logtest.NewNullLogger()
	r := New(WithTempDir(t.TempDir()), WithLogger(log))
	for i := 0; i < 3; i++ {
		c, err := r.ForBackup(context.Background(), backup("bk", "a"), "us-east-1")
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Locations) != 1 || !c.Locations[0].DefaultChain() {
			t.Fatalf("locations = %+v", c.Locations)
		}
		if !strings.HasPrefix(c.Note, "no Kubernetes API access (building a Kubernetes client: ") ||
			!strings.HasSuffix(c.Note, defaultChainSuffix) {
			t.Fatalf("note = %q", c.Note)
		}
		if _, err := r.ForRestore(context.Background(), restore("rs", "bk"), ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := warnings(hook); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
}

// An API server that does not answer makes the operations wait: never the default chain.
func TestUnreachableAPIWaits(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "config")
	const cfg = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: t
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	log, hook := logtest.NewNullLogger()
	r := New(WithTempDir(t.TempDir()), WithLogger(log), WithRequestTimeout(5*time.Second))
	c, err := r.ForBackup(context.Background(), backup("bk", "a"), "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Locations[0]; len(c.Locations) != 1 || l.Name != "a" ||
		!strings.Contains(l.Credentials.String(), "waiting for the Kubernetes API: listing VolumeSnapshotLocations in namespace velero") {
		t.Fatalf("choice = %+v, want location a waiting for the API", c)
	}
	if n := warnings(hook); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
}

func TestNamespaceFromEnv(t *testing.T) {
	t.Setenv(NamespaceEnv, "backup-system")
	if got := New().Namespace(); got != "backup-system" {
		t.Fatalf("namespace = %q", got)
	}
	t.Setenv(NamespaceEnv, "")
	if got := New().Namespace(); got != DefaultNamespace {
		t.Fatalf("namespace = %q", got)
	}
	if got := New(WithNamespace("x")).Namespace(); got != "x" {
		t.Fatalf("namespace = %q", got)
	}
}

func TestObjectWithoutNamespaceUsesResolverNamespace(t *testing.T) {
	f := newFixture(t, newFake(t, vsl("a", "us-east-1")))
	b := backup("bk", "a")
	b.Namespace = ""
	c, err := f.r.ForBackup(context.Background(), b, "us-east-1")
	if err != nil || c.Locations[0].Name != "a" {
		t.Fatalf("%+v, %v", c, err)
	}
}

func TestForRestore(t *testing.T) {
	cred := secret("creds-b", map[string]string{"cloud": "b"})
	locs := []client.Object{vsl("a", "us-east-1"), vsl("b", "us-east-1", withCred("creds-b", "cloud")), cred}
	cases := []struct {
		name    string
		objs    []client.Object
		restore *velerov1.Restore
		want    []string
		note    string
	}{
		{
			name:    "backup present: its location",
			objs:    append([]client.Object{backup("bk", "b")}, locs...),
			restore: restore("rs", "bk"),
			want:    []string{"b"},
		},
		{
			name:    "backup absent: every location of the provider",
			objs:    locs,
			restore: restore("rs", "bk"),
			want:    []string{"a", "b"},
			note:    "backup velero/bk of restore rs not found: trying a, b",
		},
		{
			name:    "restore names no backup",
			objs:    locs,
			restore: restore("rs", ""),
			want:    []string{"a", "b"},
			note:    "restore velero/rs names no backup: trying a, b",
		},
		{
			name:    "backup present, naming no location",
			objs:    append([]client.Object{backup("bk")}, locs...),
			restore: restore("rs", "bk"),
			want:    []string{"a", "b"},
			note:    "backup velero/bk names no VolumeSnapshotLocation of provider velero-async.io/aws: trying a, b",
		},
		{
			name:    "backup absent, no location: default chain",
			restore: restore("rs", "bk"),
			want:    []string{""},
			note:    "backup velero/bk of restore rs not found; no VolumeSnapshotLocation of provider velero-async.io/aws in namespace velero: using the default AWS credential chain",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newFake(t, tc.objs...))
			c, err := f.r.ForRestore(context.Background(), tc.restore, "us-east-1")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, l := range c.Locations {
				names = append(names, l.Name)
				if l.Name == "b" && l.Credentials.File != f.credPath("creds-b", "cloud") {
					t.Fatalf("b credentials = %+v", l.Credentials)
				}
			}
			if fmt.Sprint(names) != fmt.Sprint(tc.want) {
				t.Fatalf("locations = %v, want %v", names, tc.want)
			}
			if tc.note == "" && c.Note != "" || !strings.Contains(c.Note, tc.note) {
				t.Fatalf("note = %q, want %q", c.Note, tc.note)
			}
		})
	}
}

func TestNilArguments(t *testing.T) {
	f := newFixture(t, newFake(t))
	if _, err := f.r.ForBackup(context.Background(), nil, ""); err == nil {
		t.Fatal("nil backup accepted")
	}
	if _, err := f.r.ForRestore(context.Background(), nil, ""); err == nil {
		t.Fatal("nil restore accepted")
	}
}
