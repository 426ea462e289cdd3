// Package kubeapi is a minimal read-only Kubernetes API server on loopback for the test rigs:
// what a controller-runtime client (as the plugin's location.Resolver builds it from
// KUBECONFIG) needs to Get and List Velero's Backups, Restores, VolumeSnapshotLocations and
// Schedules, core Secrets and apps/v1 Deployments (Velero's server, for the plugin's check), all
// namespaced, and nothing more.
//
// It serves JSON only, the plain (unaggregated) discovery documents /api, /api/v1, /apis, and
// /apis/GROUP and /apis/GROUP/VERSION of velero.io and apps, and Get and List (with label and field selectors on
// metadata.name and metadata.namespace) of the objects put in it. Everything else is answered
// with a Kubernetes Status: 404 NotFound for unknown paths and objects, 405 for other verbs
// and for watches. client-go asks for aggregated discovery first (Accept
// application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, then v2beta1, then
// application/json); a response of Content-Type application/json makes it fall back to plain
// discovery, as with an API server older than 1.26. Protobuf, which controller-runtime asks
// for for core types, is answered with JSON too, which client-go decodes by the response's
// Content-Type.
//
// Tests and the harness write objects with Put and Delete, as Velero's server and kubectl
// would; there is no authentication.
package kubeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// kubeconfigName names the cluster, user and context of WriteKubeconfig.
const kubeconfigName = "kubeapi"

// Resource is one kind the server serves.
type Resource struct {
	// GVK is the kind; Plural and Singular its resource names.
	GVK              schema.GroupVersionKind
	Plural, Singular string
	// Cluster marks a cluster-scoped kind (its objects have no namespace).
	Cluster bool
}

// Resources are the kinds the server serves, with verbs get and list: all namespaced but
// PersistentVolumes and Namespaces.
var Resources = []Resource{
	{GVK: velerov1.SchemeGroupVersion.WithKind("Backup"), Plural: "backups", Singular: "backup"},
	{GVK: velerov1.SchemeGroupVersion.WithKind("Restore"), Plural: "restores", Singular: "restore"},
	{GVK: velerov1.SchemeGroupVersion.WithKind("VolumeSnapshotLocation"), Plural: "volumesnapshotlocations", Singular: "volumesnapshotlocation"},
	{GVK: corev1.SchemeGroupVersion.WithKind("Secret"), Plural: "secrets", Singular: "secret"},
	{GVK: velerov1.SchemeGroupVersion.WithKind("Schedule"), Plural: "schedules", Singular: "schedule"},
	{GVK: appsv1.SchemeGroupVersion.WithKind("Deployment"), Plural: "deployments", Singular: "deployment"},
	{GVK: corev1.SchemeGroupVersion.WithKind("PersistentVolume"), Plural: "persistentvolumes", Singular: "persistentvolume", Cluster: true},
	{GVK: corev1.SchemeGroupVersion.WithKind("Namespace"), Plural: "namespaces", Singular: "namespace", Cluster: true},
}

// Scheme returns a scheme of the served kinds' API groups (velero.io/v1, core v1 and apps/v1),
// for clients of the server.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{velerov1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Request is one request the server answered.
type Request struct {
	// Method and Path are the request's; Query its raw query.
	Method, Path, Query string
	// UserAgent is the client's User-Agent.
	UserAgent string
	// Code is the HTTP status of the answer.
	Code int
	// Access is what the request asked for; zero for discovery.
	Access Access
}

// key names a stored object.
type key struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

// Server is a read-only Kubernetes API server on 127.0.0.1. It is safe for concurrent use.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	srv    *httptest.Server
	scheme *runtime.Scheme

	mu         sync.Mutex
	objects    map[key]client.Object
	version    int64
	requests   []Request
	rules      []Rule
	restricted bool
}

// Start starts a server on a free port of 127.0.0.1, serving no object yet. Close it when done.
func Start() (*Server, error) {
	s := &Server{scheme: Scheme(), objects: map[key]client.Object{}}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Start()
	s.URL = s.srv.URL
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		s.srv.Close()
		return nil, fmt.Errorf("kubeapi: listening on %s, not on 127.0.0.1", s.URL)
	}
	return s, nil
}

// Close stops the server and closes its connections.
func (s *Server) Close() { s.srv.Close() }

// RESTConfig is a client config of the server, without authentication.
func (s *Server) RESTConfig() *rest.Config {
	return &rest.Config{Host: s.URL, Timeout: 10 * time.Second}
}

// WriteKubeconfig writes a kubeconfig file (mode 0600) at path whose one context points at the
// server, without authentication. It creates path's directory if needed.
func (s *Server) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeconfigName] = &clientcmdapi.Cluster{Server: s.URL}
	cfg.AuthInfos[kubeconfigName] = &clientcmdapi.AuthInfo{}
	cfg.Contexts[kubeconfigName] = &clientcmdapi.Context{Cluster: kubeconfigName, AuthInfo: kubeconfigName}
	cfg.CurrentContext = kubeconfigName
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// resourceOf returns the served resource of gvk.
func resourceOf(gvk schema.GroupVersionKind) (Resource, bool) {
	for _, r := range Resources {
		if r.GVK == gvk {
			return r, true
		}
	}
	return Resource{}, false
}

// keyOf returns where obj is stored, or panics when the server does not serve its kind or it
// has no name or namespace: a mistake of the test.
func (s *Server) keyOf(obj client.Object) key {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		panic(fmt.Sprintf("kubeapi: %T: %v", obj, err))
	}
	r, ok := resourceOf(gvk)
	if !ok {
		panic(fmt.Sprintf("kubeapi: kind %s is not served", gvk))
	}
	if obj.GetName() == "" || (obj.GetNamespace() == "") != r.Cluster {
		panic(fmt.Sprintf("kubeapi: %s %q in namespace %q: every served object is named, and namespaced unless its kind is cluster-scoped", gvk.Kind, obj.GetName(), obj.GetNamespace()))
	}
	return key{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()}
}

// Put stores a copy of obj (an object of a served kind, with a name, and a namespace unless
// its kind is cluster-scoped), replacing the object of the same kind, namespace and name, as a
// create or update would. The copy gets apiVersion and kind, a new resourceVersion, the UID and
// creationTimestamp of the object it replaces (else obj's, else new ones); a Secret's
// stringData is merged into its data, as the API server does. obj itself is not changed. Put
// panics when obj is of another kind, has no name, or has a namespace its kind has not.
func (s *Server) Put(obj client.Object) {
	k := s.keyOf(obj)
	cp, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		panic(fmt.Sprintf("kubeapi: %T: copy is no client.Object", obj))
	}
	cp.GetObjectKind().SetGroupVersionKind(k.gvk)
	if sec, ok := cp.(*corev1.Secret); ok && len(sec.StringData) > 0 {
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		for name, v := range sec.StringData {
			sec.Data[name] = []byte(v)
		}
		sec.StringData = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.objects[k]; ok {
		cp.SetUID(old.GetUID())
		cp.SetCreationTimestamp(old.GetCreationTimestamp())
	}
	if cp.GetUID() == "" {
		cp.SetUID(uuid.NewUUID())
	}
	if ts := cp.GetCreationTimestamp(); ts.IsZero() {
		cp.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	}
	s.version++
	cp.SetResourceVersion(strconv.FormatInt(s.version, 10))
	s.objects[k] = cp
}

// Delete removes the object of obj's kind, namespace and name; it reports whether there was
// one. It panics as Put does.
func (s *Server) Delete(obj client.Object) bool {
	k := s.keyOf(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objects[k]
	delete(s.objects, k)
	if ok {
		s.version++
	}
	return ok
}

// Get copies the stored object of into's kind, namespace and name into into; it reports
// whether there is one. It panics as Put does.
func (s *Server) Get(namespace, name string, into client.Object) bool {
	probe, ok := into.DeepCopyObject().(client.Object)
	if !ok {
		panic(fmt.Sprintf("kubeapi: %T: copy is no client.Object", into))
	}
	probe.SetNamespace(namespace)
	probe.SetName(name)
	k := s.keyOf(probe)
	s.mu.Lock()
	stored, ok := s.objects[k]
	s.mu.Unlock()
	if !ok {
		return false
	}
	b, err := json.Marshal(stored)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		panic(err)
	}
	return true
}

// Requests returns the requests answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// CountRequests counts the GET requests answered 200 whose path is path.
func (s *Server) CountRequests(path string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == http.MethodGet && r.Path == path && r.Code == http.StatusOK {
			n++
		}
	}
	return n
}

// ObjectPath is the API path of the object of kind gvk, namespace and name, as Requests shows
// it. It panics for a kind the server does not serve.
func ObjectPath(gvk schema.GroupVersionKind, namespace, name string) string {
	r, ok := resourceOf(gvk)
	if !ok {
		panic(fmt.Sprintf("kubeapi: kind %s is not served", gvk))
	}
	return groupVersionPath(gvk.GroupVersion()) + "/namespaces/" + namespace + "/" + r.Plural + "/" + name
}

// groupVersionPath is /api/v1 for the core group, /apis/GROUP/VERSION otherwise.
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// serve answers one request and records it.
func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	code, body, access := s.answer(req)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, UserAgent: req.UserAgent(), Code: code, Access: access})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// answer returns the status code and the body of the answer to req, and what it asked for.
func (s *Server) answer(req *http.Request) (int, any, Access) {
	if r, namespace, name, ok := resourceRequest(req.URL.Path); ok && req.Method == http.MethodGet && !watching(req.URL.Query()) {
		verb := VerbGet
		if name == "" {
			verb = VerbList
		}
		a := Access{Group: r.GVK.Group, Resource: r.Plural, Verb: verb}
		if !s.granted(a, name) {
			code, body := forbidden(r, verb, name)
			return code, body, a
		}
		if verb == VerbList {
			code, body := s.list(req.URL.Query(), r, namespace)
			return code, body, a
		}
		code, body := s.get(r, namespace, name)
		return code, body, a
	}
	code, body := s.answerOther(req)
	return code, body, Access{}
}

// resourceRequest reads the resource, namespace and name (empty for a list) a path names.
func resourceRequest(path string) (r Resource, namespace, name string, ok bool) {
	path = strings.TrimSuffix(path, "/")
	for _, r := range Resources {
		rest, found := strings.CutPrefix(path, groupVersionPath(r.GVK.GroupVersion())+"/")
		if !found {
			continue
		}
		parts := strings.Split(rest, "/")
		switch {
		case len(parts) == 1 && parts[0] == r.Plural:
			return r, "", "", true
		case len(parts) == 2 && parts[0] == r.Plural && r.Cluster:
			return r, "", parts[1], true
		case len(parts) == 3 && parts[0] == "namespaces" && parts[2] == r.Plural:
			return r, parts[1], "", true
		case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == r.Plural:
			return r, parts[1], parts[3], true
		}
	}
	return Resource{}, "", "", false
}

// answerOther answers what is not a get or list of a served resource: discovery, the version,
// watches and other methods (refused), unknown paths.
func (s *Server) answerOther(req *http.Request) (int, any) {
	path := strings.TrimSuffix(req.URL.Path, "/")
	if req.Method != http.MethodGet {
		return failure(apierrors.NewMethodNotSupported(schema.GroupResource{}, req.Method))
	}
	switch path {
	case "/api":
		return http.StatusOK, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: strings.TrimPrefix(s.URL, "http://")},
			},
		}
	case "/apis":
		return http.StatusOK, &metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups:   apiGroups(),
		}
	case "/api/v1":
		return http.StatusOK, resourceList(corev1.SchemeGroupVersion)
	case "/version":
		return http.StatusOK, map[string]string{"major": "1", "minor": "33", "gitVersion": "v1.33.0-kubeapi", "platform": "linux/amd64"}
	}
	if code, doc, ok := groupDiscovery(path); ok {
		return code, doc
	}
	if r, _, _, ok := resourceRequest(path); ok {
		return failure(apierrors.NewMethodNotSupported(groupResource(r), "watch"))
	}
	return http.StatusNotFound, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: "the server could not find the requested resource",
		Reason: metav1.StatusReasonNotFound, Details: &metav1.StatusDetails{}, Code: http.StatusNotFound,
	}
}

func watching(q url.Values) bool {
	w := q.Get("watch")
	return w == "true" || w == "1"
}

func groupResource(r Resource) schema.GroupResource {
	return schema.GroupResource{Group: r.GVK.Group, Resource: r.Plural}
}

// failure is the code and Status of an API error.
func failure(err *apierrors.StatusError) (int, any) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return int(st.Code), &st
}

// resourceList is the discovery document of gv.
func resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, r := range Resources {
		if r.GVK.GroupVersion() != gv {
			continue
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: r.Plural, SingularName: r.Singular, Namespaced: !r.Cluster, Kind: r.GVK.Kind,
			Verbs: metav1.Verbs{"get", "list"},
		})
	}
	return l
}

// get answers a Get.
func (s *Server) get(r Resource, namespace, name string) (int, any) {
	s.mu.Lock()
	obj, ok := s.objects[key{gvk: r.GVK, namespace: namespace, name: name}]
	s.mu.Unlock()
	if !ok {
		return failure(apierrors.NewNotFound(groupResource(r), name))
	}
	return http.StatusOK, obj
}

// list answers a List in namespace, every namespace when "".
func (s *Server) list(q url.Values, r Resource, namespace string) (int, any) {
	if watching(q) {
		return failure(apierrors.NewMethodNotSupported(groupResource(r), "watch"))
	}
	labelSel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return failure(apierrors.NewBadRequest("labelSelector: " + err.Error()))
	}
	fieldSel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return failure(apierrors.NewBadRequest("fieldSelector: " + err.Error()))
	}
	for _, req := range fieldSel.Requirements() {
		if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
			return failure(apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field)))
		}
	}
	s.mu.Lock()
	var keys []key
	for k, obj := range s.objects {
		if k.gvk != r.GVK || namespace != "" && k.namespace != namespace {
			continue
		}
		if !labelSel.Matches(labels.Set(obj.GetLabels())) ||
			!fieldSel.Matches(fields.Set{"metadata.name": k.name, "metadata.namespace": k.namespace}) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
	items := make([]client.Object, len(keys))
	for i, k := range keys {
		items[i] = s.objects[k]
	}
	version := s.version
	s.mu.Unlock()
	return http.StatusOK, &objectList{
		TypeMeta: metav1.TypeMeta{APIVersion: r.GVK.GroupVersion().String(), Kind: r.GVK.Kind + "List"},
		ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatInt(version, 10)},
		Items:    items,
	}
}

// objectList is the JSON of a list of any served kind.
type objectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []client.Object `json:"items"`
}
