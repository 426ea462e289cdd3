package location

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// unavailableError says the Kubernetes API cannot be used. It is definite when the API answered
// that the plugin may not read (Forbidden, Unauthorized), does not serve Velero's API, or no
// client can be built (no config): the item actions then use the default credential chain.
// It is transient when the API did not answer, or answered that it cannot now (a timeout,
// 429, 5xx, a refused or dropped connection): the operations then wait, keeping what was read
// last, and never switch credentials.
type unavailableError struct {
	what      string
	err       error
	transient bool
}

func (e *unavailableError) Error() string { return e.what + ": " + e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// transientAPIError reports whether err says nothing definite about the plugin's access: no
// answer at all (a network error, the request's time limit), or an answer saying "not now".
func transientAPIError(err error) bool {
	if meta.IsNoMatchError(err) {
		return false // the API answered: it does not serve Velero's kinds
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	code := status.Status().Code
	return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// newDefaultReader builds a client from clientcmd's default loading rules: KUBECONFIG (or
// ~/.kube/config), else the in-cluster config, as Velero's client.Factory does.
func newDefaultReader() (client.Reader, error) { return NewClient("", "velero-plugin-for-aws-async") }

// client returns the reader, building it on first use.
func (s *state) client() (client.Reader, error) {
	s.initOnce.Do(func() {
		if s.reader != nil {
			return
		}
		rd, err := s.newReader()
		if err != nil { // no config: as definite as an answer
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
	if u.transient {
		log.WithError(u).Warn("The Kubernetes API does not answer: item actions keep the VolumeSnapshotLocations' credentials read last, and operations whose credentials are not known yet wait")
		return
	}
	log.WithError(u).Warn("No Kubernetes API access: item actions use the default AWS credential chain, not the VolumeSnapshotLocations' credentials, until access returns")
}

// read runs one API call under the request timeout. It returns found=false for NotFound when
// notFoundOK, an *unavailableError for a lost API and the caller's context error as is. A
// failure is remembered for the cache TTL, so the other calls of a reconcile do not each wait
// for the API again. s.mu is held.
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
	case errors.Is(ctx.Err(), context.Canceled): // the caller is gone; its deadline is an API too slow
		return false, fmt.Errorf("%s: %w", what, ctx.Err())
	case notFoundOK && apierrors.IsNotFound(err):
		s.recovered()
		return false, nil
	}
	u := &unavailableError{what: what, err: err, transient: transientAPIError(err)}
	s.downErr, s.downUntil = u, s.clock.Now().Add(s.ttl)
	return false, u
}

// blip reports whether err is a transient failure of the API: what was read last is kept
// then, expired or not, rather than switching credentials.
func blip(err error) bool {
	var u *unavailableError
	return errors.As(err, &u) && u.transient
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
	last, cached := s.vsls[ns]
	if cached && s.clock.Now().Before(last.expires) {
		return last.val, nil
	}
	var list velerov1.VolumeSnapshotLocationList
	what := "listing VolumeSnapshotLocations in namespace " + ns
	if _, err := s.read(ctx, what, false, func(ctx context.Context) error {
		return rd.List(ctx, &list, client.InNamespace(ns))
	}); err != nil {
		if cached && blip(err) {
			return last.val, nil
		}
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
	last, cached := cache[key]
	if cached && s.clock.Now().Before(last.expires) {
		return last.val, last.found, nil
	}
	obj := newObj()
	found, err := s.read(ctx, fmt.Sprintf("getting %s %s", kind, key), true, func(ctx context.Context) error {
		return rd.Get(ctx, key, obj)
	})
	if err != nil {
		if cached && blip(err) {
			return last.val, last.found, nil
		}
		return zero, false, err
	}
	if !found {
		obj = zero
	}
	cache[key] = entry[T]{val: obj, found: found, expires: s.clock.Now().Add(s.ttl)}
	return obj, found, nil
}

// state is what Resolvers sharing a cache share.
type state struct {
	provider  string
	namespace string
	log       logrus.FieldLogger
	clock     clock.PassiveClock
	ttl       time.Duration
	timeout   time.Duration
	defaults  map[string]string
	newReader func() (client.Reader, error)

	initOnce sync.Once
	reader   client.Reader
	initErr  error

	mu         sync.Mutex
	vsls       map[string]entry[[]velerov1.VolumeSnapshotLocation]
	backups    map[types.NamespacedName]entry[*velerov1.Backup]
	secrets    map[types.NamespacedName]entry[*corev1.Secret]
	downErr    *unavailableError
	downUntil  time.Time
	downLogged bool

	// credentialFiles are where the Secret keys are written.
	credentialFiles
}

type entry[T any] struct {
	val     T
	found   bool
	expires time.Time
}
