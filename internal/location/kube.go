package location

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// unavailableError says the Kubernetes API cannot be used: no config, Forbidden, Unauthorized,
// unreachable, or not serving Velero's API.
type unavailableError struct {
	what string
	err  error
}

func (e *unavailableError) Error() string { return e.what + ": " + e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// newDefaultReader builds a client from clientcmd's default loading rules: KUBECONFIG (or
// ~/.kube/config), else the in-cluster config, as Velero's client.Factory does.
func newDefaultReader() (client.Reader, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes client config in KUBECONFIG or in-cluster: %w", err)
	}
	cfg.UserAgent = "velero-plugin-for-aws-async"
	scheme := runtime.NewScheme()
	if err := velerov1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building Kubernetes client: %w", err)
	}
	return c, nil
}

// client returns the reader, building it on first use.
func (s *state) client() (client.Reader, error) {
	s.initOnce.Do(func() {
		if s.reader != nil {
			return
		}
		rd, err := s.newReader()
		if err != nil {
			s.initErr = &unavailableError{what: "building a Kubernetes client", err: err}
			return
		}
		s.reader = rd
	})
	if s.initErr != nil {
		return nil, s.initErr
	}
	return s.reader, nil
}

// lost logs, once until access comes back, that the API cannot be used.
func (s *state) lost(log logrus.FieldLogger, u *unavailableError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.downLogged {
		return
	}
	s.downLogged = true
	log.WithError(u).Warn("No Kubernetes API access: item actions use the default AWS credential chain, not the VolumeSnapshotLocations' credentials, until access returns")
}

// read runs one API call under the request timeout. It returns found=false for NotFound when
// notFoundOK, an *unavailableError for a lost API and the caller's context error as is. s.mu is
// held.
func (s *state) read(ctx context.Context, what string, notFoundOK bool, call func(context.Context) error) (bool, error) {
	if s.downErr != nil && s.clock.Now().Before(s.downUntil) {
		return false, s.downErr
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := call(cctx)
	switch {
	case err == nil:
		s.recovered()
		return true, nil
	case ctx.Err() != nil:
		return false, fmt.Errorf("%s: %w", what, ctx.Err())
	case notFoundOK && apierrors.IsNotFound(err):
		s.recovered()
		return false, nil
	}
	u := &unavailableError{what: what, err: err}
	s.downErr, s.downUntil = u, s.clock.Now().Add(s.ttl)
	return false, u
}

func (s *state) recovered() {
	if s.downLogged {
		s.log.Info("Kubernetes API access is back: item actions use the VolumeSnapshotLocations' credentials")
	}
	s.downErr, s.downLogged = nil, false
}

func (s *state) listLocations(ctx context.Context, rd client.Reader, ns string) ([]velerov1.VolumeSnapshotLocation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.vsls[ns]; ok && s.clock.Now().Before(e.expires) {
		return e.val, nil
	}
	var list velerov1.VolumeSnapshotLocationList
	what := "listing VolumeSnapshotLocations in namespace " + ns
	if _, err := s.read(ctx, what, false, func(ctx context.Context) error {
		return rd.List(ctx, &list, client.InNamespace(ns))
	}); err != nil {
		return nil, err
	}
	s.vsls[ns] = entry[[]velerov1.VolumeSnapshotLocation]{val: list.Items, found: true, expires: s.clock.Now().Add(s.ttl)}
	return list.Items, nil
}

func (s *state) getBackup(ctx context.Context, rd client.Reader, ns, name string) (*velerov1.Backup, bool, error) {
	return get(ctx, s, rd, s.backups, "Backup", types.NamespacedName{Namespace: ns, Name: name}, func() *velerov1.Backup { return &velerov1.Backup{} })
}

func (s *state) getSecret(ctx context.Context, rd client.Reader, ns, name string) (*corev1.Secret, bool, error) {
	return get(ctx, s, rd, s.secrets, "Secret", types.NamespacedName{Namespace: ns, Name: name}, func() *corev1.Secret { return &corev1.Secret{} })
}

// get reads one object through the cache; a NotFound is cached too.
func get[T client.Object](ctx context.Context, s *state, rd client.Reader, cache map[types.NamespacedName]entry[T], kind string, key types.NamespacedName, newObj func() T) (T, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero T
	if e, ok := cache[key]; ok && s.clock.Now().Before(e.expires) {
		return e.val, e.found, nil
	}
	obj := newObj()
	found, err := s.read(ctx, fmt.Sprintf("getting %s %s", kind, key), true, func(ctx context.Context) error {
		return rd.Get(ctx, key, obj)
	})
	if err != nil {
		return zero, false, err
	}
	if !found {
		obj = zero
	}
	cache[key] = entry[T]{val: obj, found: found, expires: s.clock.Now().Add(s.ttl)}
	return obj, found, nil
}
