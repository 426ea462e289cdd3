package kubeapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

const (
	ns       = "velero"
	provider = "velero-async.io/aws"
)

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func newClient(t *testing.T, s *Server) client.Client {
	t.Helper()
	c, err := client.New(s.RESTConfig(), client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func vsl(name string, cfg map[string]string, secret string) *velerov1.VolumeSnapshotLocation {
	v := &velerov1.VolumeSnapshotLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       velerov1.VolumeSnapshotLocationSpec{Provider: provider, Config: cfg},
	}
	if secret != "" {
		v.Spec.Credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "cloud"}
	}
	return v
}

func secret(name, cloud string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"cloud": []byte(cloud)}}
}

func backup(name string, locations ...string) *velerov1.Backup {
	return &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": name}},
		Spec:       velerov1.BackupSpec{VolumeSnapshotLocations: locations},
		Status:     velerov1.BackupStatus{Phase: velerov1.BackupPhaseWaitingForPluginOperations},
	}
}

// TestClientGetAndList reads every served kind through a controller-runtime client, as the
// plugin builds it: its REST mapper's discovery, Get, NotFound and List.
func TestClientGetAndList(t *testing.T) {
	s := start(t)
	s.Put(vsl("primary", map[string]string{"region": "us-east-1"}, "creds"))
	s.Put(vsl("other", map[string]string{"region": "us-west-2"}, ""))
	s.Put(&velerov1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "far"}})
	s.Put(secret("creds", "[default]\n"))
	s.Put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "strings"}, StringData: map[string]string{"cloud": "from stringData"}})
	s.Put(backup("nightly", "primary"))
	s.Put(&velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "again"}, Spec: velerov1.RestoreSpec{BackupName: "nightly"}})
	c := newClient(t, s)
	ctx := context.Background()

	gets := []struct {
		name  string
		obj   client.Object
		key   string
		found bool
		check func(t *testing.T, obj client.Object)
	}{
		{name: "location", obj: &velerov1.VolumeSnapshotLocation{}, key: "primary", found: true, check: func(t *testing.T, obj client.Object) {
			v := obj.(*velerov1.VolumeSnapshotLocation)
			if v.Spec.Config["region"] != "us-east-1" || v.Spec.Credential == nil || v.Spec.Credential.Name != "creds" {
				t.Errorf("location %+v", v.Spec)
			}
		}},
		{name: "secret", obj: &corev1.Secret{}, key: "creds", found: true, check: func(t *testing.T, obj client.Object) {
			if got := string(obj.(*corev1.Secret).Data["cloud"]); got != "[default]\n" {
				t.Errorf("secret data %q", got)
			}
		}},
		{name: "secret from stringData", obj: &corev1.Secret{}, key: "strings", found: true, check: func(t *testing.T, obj client.Object) {
			sec := obj.(*corev1.Secret)
			if got := string(sec.Data["cloud"]); got != "from stringData" || len(sec.StringData) != 0 {
				t.Errorf("secret data %q, stringData %v", got, sec.StringData)
			}
		}},
		{name: "backup", obj: &velerov1.Backup{}, key: "nightly", found: true, check: func(t *testing.T, obj client.Object) {
			b := obj.(*velerov1.Backup)
			if b.UID != "uid-nightly" || b.ResourceVersion == "" || b.Status.Phase != velerov1.BackupPhaseWaitingForPluginOperations ||
				len(b.Spec.VolumeSnapshotLocations) != 1 || b.Spec.VolumeSnapshotLocations[0] != "primary" {
				t.Errorf("backup %+v", b)
			}
		}},
		{name: "restore", obj: &velerov1.Restore{}, key: "again", found: true, check: func(t *testing.T, obj client.Object) {
			if r := obj.(*velerov1.Restore); r.Spec.BackupName != "nightly" || r.UID == "" {
				t.Errorf("restore %+v", r)
			}
		}},
		{name: "missing secret", obj: &corev1.Secret{}, key: "missing"},
		{name: "missing backup", obj: &velerov1.Backup{}, key: "missing"},
		{name: "missing restore", obj: &velerov1.Restore{}, key: "missing"},
		{name: "missing location", obj: &velerov1.VolumeSnapshotLocation{}, key: "missing"},
		{name: "location of another namespace", obj: &velerov1.VolumeSnapshotLocation{}, key: "far"},
	}
	for _, tt := range gets {
		t.Run("get "+tt.name, func(t *testing.T) {
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tt.key}, tt.obj)
			if !tt.found {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("Get = %v, want NotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, tt.obj)
		})
	}

	lists := []struct {
		name string
		opts []client.ListOption
		want []string
	}{
		{name: "namespace", opts: []client.ListOption{client.InNamespace(ns)}, want: []string{"other", "primary"}},
		{name: "every namespace", want: []string{"far", "other", "primary"}},
		{name: "empty namespace", opts: []client.ListOption{client.InNamespace("none")}, want: nil},
		{name: "field selector", opts: []client.ListOption{client.InNamespace(ns), client.MatchingFields{"metadata.name": "other"}}, want: []string{"other"}},
	}
	for _, tt := range lists {
		t.Run("list "+tt.name, func(t *testing.T) {
			var l velerov1.VolumeSnapshotLocationList
			if err := c.List(ctx, &l, tt.opts...); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range l.Items {
				got = append(got, v.Name)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("listed %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("listed %v, want %v", got, tt.want)
				}
			}
		})
	}
	t.Run("list by label", func(t *testing.T) {
		var l velerov1.BackupList
		if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{"app": "nightly"}); err != nil || len(l.Items) != 1 {
			t.Fatalf("List = %d items, %v; want the backup", len(l.Items), err)
		}
		if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{"app": "other"}); err != nil || len(l.Items) != 0 {
			t.Fatalf("List = %d items, %v; want none", len(l.Items), err)
		}
	})
}

// TestPutReplacesAndDelete checks resourceVersions, kept UIDs and deletion.
func TestPutReplacesAndDelete(t *testing.T) {
	s := start(t)
	c := newClient(t, s)
	ctx := context.Background()
	b := backup("nightly", "primary")
	b.UID = ""
	s.Put(b)
	if b.ResourceVersion != "" || b.UID != "" {
		t.Errorf("Put changed its argument: resourceVersion %q, UID %q", b.ResourceVersion, b.UID)
	}
	var first, second velerov1.Backup
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, &first); err != nil {
		t.Fatal(err)
	}
	b.Status.Phase = velerov1.BackupPhaseCompleted
	s.Put(b)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, &second); err != nil {
		t.Fatal(err)
	}
	if first.UID == "" || second.UID != first.UID || second.ResourceVersion == first.ResourceVersion || second.Status.Phase != velerov1.BackupPhaseCompleted {
		t.Errorf("after two Puts: UIDs %q %q, resourceVersions %q %q, phase %s", first.UID, second.UID, first.ResourceVersion, second.ResourceVersion, second.Status.Phase)
	}
	var local velerov1.Backup
	if !s.Get(ns, "nightly", &local) || local.ResourceVersion != second.ResourceVersion {
		t.Errorf("Server.Get = %+v", local.ObjectMeta)
	}
	if !s.Delete(b) || s.Delete(b) {
		t.Error("Delete should find the backup once")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, &first); !apierrors.IsNotFound(err) {
		t.Errorf("Get after Delete = %v, want NotFound", err)
	}
}

// TestHTTP checks what plain HTTP clients see: Status objects, JSON to aggregated-discovery
// requests, no watches, no writes.
func TestHTTP(t *testing.T) {
	s := start(t)
	s.Put(secret("creds", "x"))
	tests := []struct {
		name, method, path, accept string
		code                       int
		reason                     metav1.StatusReason
	}{
		{name: "missing secret", method: "GET", path: "/api/v1/namespaces/velero/secrets/missing", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unknown path", method: "GET", path: "/apis/example.com/v1", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unknown resource", method: "GET", path: "/api/v1/namespaces/velero/configmaps/x", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "write", method: "DELETE", path: "/api/v1/namespaces/velero/secrets/creds", code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "watch", method: "GET", path: "/api/v1/namespaces/velero/secrets?watch=true", code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "bad selector", method: "GET", path: "/api/v1/namespaces/velero/secrets?fieldSelector=type%3Dx", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "secret", method: "GET", path: "/api/v1/namespaces/velero/secrets/creds", code: 200},
		{name: "aggregated discovery asked", method: "GET", path: "/apis", code: 200,
			accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, s.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.code)
			}
			if tt.code == 200 {
				return
			}
			var st metav1.Status
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				t.Fatal(err)
			}
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Reason != tt.reason || int(st.Code) != tt.code {
				t.Errorf("status %+v, want a Failure Status %s %d", st, tt.reason, tt.code)
			}
		})
	}
	t.Run("discovery", func(t *testing.T) {
		d, err := discovery.NewDiscoveryClientForConfig(s.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		_, lists, err := d.ServerGroupsAndResources()
		if err != nil {
			t.Fatal(err)
		}
		namespaced := map[string]bool{}
		for _, l := range lists {
			for _, r := range l.APIResources {
				namespaced[l.GroupVersion+"/"+r.Kind] = r.Namespaced
			}
		}
		for _, r := range Resources {
			if ns, ok := namespaced[r.GVK.GroupVersion().String()+"/"+r.GVK.Kind]; !ok || ns == r.Cluster {
				t.Errorf("discovery lacks %s, namespaced %v: %v", r.GVK, !r.Cluster, namespaced)
			}
		}
	})
}

// TestResolver resolves through a kubeconfig written by WriteKubeconfig, as a plugin process
// does: location.New without WithReader builds its client from KUBECONFIG.
func TestResolver(t *testing.T) {
	const (
		credsA = "[default]\naws_access_key_id = AKIALOCATION\naws_secret_access_key = location\n"
		credsV = "[default]\naws_access_key_id = AKIAVAULT\naws_secret_access_key = vault\n"
	)
	vault := map[string]string{"region": "us-east-1", location.ConfigVaultAccountID: "222222222222", location.ConfigVaultCredentialSecret: "vault-creds"}
	missingVault := map[string]string{"region": "us-east-1", location.ConfigVaultAccountID: "222222222222", location.ConfigVaultCredentialSecret: "gone"}
	s := start(t)
	s.Put(vsl("primary", map[string]string{"region": "us-east-1"}, "creds"))
	s.Put(vsl("vaulted", vault, "creds"))
	s.Put(vsl("no-secret", map[string]string{"region": "us-east-1"}, "gone"))
	s.Put(vsl("no-vault-secret", missingVault, ""))
	s.Put(secret("creds", credsA))
	s.Put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault-creds"}, Data: map[string][]byte{"cloud": []byte(credsV)}})
	s.Put(backup("nightly", "primary"))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}

	type want struct {
		location  string
		creds     string // content of the location's credentials file
		vault     string // content of the vault credentials file; "" for no vault
		noteEmpty bool
		err       error
	}
	tests := []struct {
		name    string
		backup  *velerov1.Backup
		restore *velerov1.Restore
		want    want
	}{
		{name: "backup's location and its credential Secret", backup: backup("nightly", "primary"),
			want: want{location: "primary", creds: credsA, noteEmpty: true}},
		{name: "restore reads its backup from the API", restore: &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"}, Spec: velerov1.RestoreSpec{BackupName: "nightly"}},
			want: want{location: "primary", creds: credsA, noteEmpty: true}},
		{name: "vault Secret", backup: backup("b", "vaulted"),
			want: want{location: "vaulted", creds: credsA, vault: credsV, noteEmpty: true}},
		{name: "missing credential Secret", backup: backup("b", "no-secret"), want: want{err: location.ErrSecretNotFound}},
		{name: "missing vault Secret", backup: backup("b", "no-vault-secret"), want: want{err: location.ErrSecretNotFound}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", kubeconfig)
			t.Setenv(location.NamespaceEnv, ns)
			r := location.New(location.WithProvider(provider), location.WithTempDir(t.TempDir()))
			var (
				c   location.Choice
				err error
			)
			if tt.restore != nil {
				c, err = r.ForRestore(context.Background(), tt.restore, "us-east-1")
			} else {
				c, err = r.ForBackup(context.Background(), tt.backup, "us-east-1")
			}
			if tt.want.err != nil {
				if !errors.Is(err, tt.want.err) {
					t.Fatalf("error %v, want %v", err, tt.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Locations) != 1 || c.Locations[0].Name != tt.want.location || (c.Note == "") != tt.want.noteEmpty {
				t.Fatalf("choice %+v, want location %s only (note %q)", c, tt.want.location, c.Note)
			}
			loc := c.Locations[0]
			if got := readFile(t, loc.Credentials.File); got != tt.want.creds {
				t.Errorf("credentials file %s holds %q, want %q", loc.Credentials.File, got, tt.want.creds)
			}
			if tt.want.vault == "" {
				if loc.Vault != nil {
					t.Errorf("vault credentials %+v, want none", loc.Vault)
				}
				return
			}
			if loc.Vault == nil {
				t.Fatal("no vault credentials")
			}
			if got := readFile(t, loc.Vault.File); got != tt.want.vault {
				t.Errorf("vault credentials file holds %q, want %q", got, tt.want.vault)
			}
			// The volume snapshotter's path: the location's config as Velero passes it.
			vc, err := r.VaultCredentials(context.Background(), loc.Name, loc.Config)
			if err != nil || vc == nil || readFile(t, vc.File) != tt.want.vault {
				t.Errorf("VaultCredentials = %+v, %v; want the vault Secret's file", vc, err)
			}
		})
	}
	t.Run("VaultCredentials of a missing Secret", func(t *testing.T) {
		t.Setenv("KUBECONFIG", kubeconfig)
		r := location.New(location.WithNamespace(ns), location.WithTempDir(t.TempDir()))
		if _, err := r.VaultCredentials(context.Background(), "no-vault-secret", missingVault); !errors.Is(err, location.ErrSecretNotFound) {
			t.Errorf("error %v, want ErrSecretNotFound", err)
		}
	})
	if n := s.CountRequests(ObjectPath(corev1.SchemeGroupVersion.WithKind("Secret"), ns, "creds")); n == 0 {
		t.Error("the resolvers never read the credential Secret through the server")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	if path == "" {
		t.Fatal("no credentials file")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// PersistentVolumes are cluster-scoped: listed and read without a namespace, refused without
// a rule that grants them.
func TestPersistentVolumesAreClusterScoped(t *testing.T) {
	s := start(t)
	c := newClient(t, s)
	s.Put(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}})
	var list corev1.PersistentVolumeList
	if err := c.List(t.Context(), &list); err != nil || len(list.Items) != 1 || list.Items[0].Name != "pv-1" {
		t.Fatalf("list: %v %+v", err, list.Items)
	}
	var pv corev1.PersistentVolume
	if err := c.Get(t.Context(), client.ObjectKey{Name: "pv-1"}, &pv); err != nil || pv.Name != "pv-1" {
		t.Fatalf("get: %v %+v", err, pv)
	}
	s.Restrict(Rule{Group: "", Resources: []string{"secrets"}, Verbs: []string{VerbGet}})
	if err := c.List(t.Context(), &list); !apierrors.IsForbidden(err) {
		t.Errorf("list without a rule: %v, want Forbidden", err)
	}
}
