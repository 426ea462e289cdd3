package explore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// The Kubernetes API the item actions read the backup's VolumeSnapshotLocation and its
// credentials Secret from, as the plugin's locator does (location.Resolver, one per plugin
// process), with injected faults: Forbidden (a definite refusal: the default credential chain
// is then used, by design), 503 and timeouts (blips: nothing may switch credentials).

// The Kubernetes objects of an exploration.
const (
	veleroNamespace = "velero"
	secretName      = "cloud-credentials"
	secretKey       = "cloud"
	// vaultProfile is the profile of the vault credentials in the location's credentials file.
	vaultProfile = "vault"
)

// credentialsDir is where the plugin's resolvers write the Secrets' credentials files; TestMain
// makes it and removes it. Empty: the system's temporary directory.
var credentialsDir string

// kubeEffect is what an injected fault does to a Kubernetes API read.
type kubeEffect int

const (
	// kubeForbidden answers 403: the plugin's ServiceAccount may not read.
	kubeForbidden kubeEffect = iota
	// kubeUnavailable answers 503.
	kubeUnavailable
	// kubeTimeout is a read without an answer within its time limit.
	kubeTimeout
	numKubeEffects
)

func (e kubeEffect) String() string {
	return [...]string{"Forbidden", "503", "timeout"}[e]
}

// kubeFault fails every every-th read of the Kubernetes API with effect.
type kubeFault struct {
	effect kubeEffect
	every  int
	seen   int
}

func (f *kubeFault) String() string { return fmt.Sprintf("%s (1 in %d)", f.effect, f.every) }

// kubeReader serves the world's objects to a location.Resolver, failing reads as the world's
// Kubernetes fault of the step says.
type kubeReader struct{ w *world }

// Get reads the credentials Secret (or a Backup, which the world does not have).
func (r kubeReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if err := r.fault("get", key.Name); err != nil {
		return err
	}
	s, ok := obj.(*corev1.Secret)
	if !ok || key.Namespace != veleroNamespace || key.Name != secretName {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "objects"}, key.Name)
	}
	s.Name, s.Namespace = secretName, veleroNamespace
	s.Data = map[string][]byte{secretKey: r.w.credentialsFile()}
	return nil
}

// List lists the namespace's VolumeSnapshotLocations: the world's one.
func (r kubeReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.fault("list", "volumesnapshotlocations"); err != nil {
		return err
	}
	l, ok := list.(*velerov1.VolumeSnapshotLocationList)
	if !ok {
		return fmt.Errorf("the explorer's Kubernetes API lists only VolumeSnapshotLocations, not %T", list)
	}
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	l.Items = nil
	if lo.Namespace != veleroNamespace {
		return nil
	}
	var v velerov1.VolumeSnapshotLocation
	v.Name, v.Namespace = locationName, veleroNamespace
	v.Spec.Provider = model.VolumeSnapshotterName
	v.Spec.Config = r.w.setup.config()
	v.Spec.Credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secretName}, Key: secretKey}
	l.Items = append(l.Items, v)
	return nil
}

// fault fails a read as the step's Kubernetes fault says.
func (r kubeReader) fault(verb, name string) error {
	f := r.w.kube
	if f == nil {
		return nil
	}
	f.seen++
	if (f.seen-1)%f.every != 0 {
		return nil
	}
	gr := schema.GroupResource{Group: "velero.io", Resource: name}
	switch f.effect {
	case kubeForbidden:
		r.w.kubeRefused = true
		return apierrors.NewForbidden(gr, name, errors.New("the ServiceAccount may not "+verb+" it"))
	case kubeUnavailable:
		return apierrors.NewServiceUnavailable("the API server is restarting")
	}
	return fmt.Errorf("%s %s: %w", verb, name, context.DeadlineExceeded)
}

// credentialsFile is the Secret's content: the source account's keys, and the vault
// credentials under the vault profile the location names.
func (w *world) credentialsFile() []byte {
	var b bytes.Buffer
	for _, p := range []struct{ profile, account string }{{"default", sourceAccount}, {vaultProfile, w.setup.vaultCredsOf}} {
		if k, ok := keys[p.account]; ok {
			fmt.Fprintf(&b, "[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n", p.profile, k.id, k.secret)
		}
	}
	return b.Bytes()
}

// kubeLocator is the plugin's locator in one plugin process: the location.Resolver's choice,
// with the world's EC2 clients for the credentials it names (ebs.NewLocator builds them from
// the same credentials with an ec2api.Factory).
type kubeLocator struct {
	w        *world
	resolver *location.Resolver
}

// newKubeLocator is a fresh plugin process's locator: nothing read yet.
func (w *world) newKubeLocator() kubeLocator {
	w.kubeRefused = false
	return kubeLocator{w: w, resolver: location.New(
		location.WithReader(kubeReader{w}), location.WithNamespace(veleroNamespace), location.WithProvider(model.VolumeSnapshotterName),
		location.WithClock(w.clk), location.WithLogger(w.log), location.WithTempDir(credentialsDir))}
}

// BackupPlaces returns the places of the backup's locations, as ebs.NewLocator does.
func (l kubeLocator) BackupPlaces(ctx context.Context, b *velerov1.Backup, region string) ([]ebs.Place, error) {
	c, err := l.resolver.ForBackup(ctx, b, region)
	return l.places(c), err
}

// RestorePlaces returns the places of the restore's locations, as ebs.NewLocator does.
func (l kubeLocator) RestorePlaces(ctx context.Context, r *velerov1.Restore, region string) ([]ebs.Place, error) {
	c, err := l.resolver.ForRestore(ctx, r, region)
	return l.places(c), err
}

func (l kubeLocator) places(c location.Choice) []ebs.Place {
	out := make([]ebs.Place, 0, len(c.Locations))
	for _, loc := range c.Locations {
		p := ebs.Place{Location: loc.Name, Clients: l.w.clientsOf(loc.Credentials, "source"), Note: c.Note, Config: loc.Config, Unread: loc.Unread}
		if loc.Vault != nil {
			creds := *loc.Vault
			p.Vault = l.w.clientsOf(creds, "vault")
			p.VaultIdentity = func(ctx context.Context) (string, error) {
				account, err := l.w.accountOfCredentials(creds)
				if err != nil {
					return "", err
				}
				return accountOf(&transport{w: l.w, role: "vault", signer: account, faulty: true}, keys[account])(ctx)
			}
		}
		out = append(out, p)
	}
	return out
}

// defaultChainRole is the role of requests signed with the Velero server's own credentials (its
// default credential chain: here the source account's, a same-account install).
const defaultChainRole = "default chain"

// clientsOf returns EC2 clients signing with creds for role, as an ec2api.Factory would:
// credentials not known yet fail every client with a CredentialsError; the default chain signs
// as the server's identity.
func (w *world) clientsOf(creds ec2api.Credentials, role string) ec2api.Regional {
	if creds.File == "" && creds.Profile == "" {
		if strings.HasPrefix(creds.String(), "credentials not known yet") {
			return func(context.Context, string) (ec2api.EC2, error) {
				return nil, &ec2api.CredentialsError{Err: errors.New(creds.String())}
			}
		}
		return w.regional(defaultChainRole, sourceAccount, true)
	}
	return func(ctx context.Context, region string) (ec2api.EC2, error) {
		account, err := w.accountOfCredentials(creds)
		if err != nil {
			return nil, err
		}
		return w.client(role, account, region, true), nil
	}
}

// accountOfCredentials reads creds' credentials file and names the account whose key its
// profile holds.
func (w *world) accountOfCredentials(creds ec2api.Credentials) (string, error) {
	if creds.File == "" {
		return sourceAccount, nil
	}
	data, err := os.ReadFile(creds.File)
	if err != nil {
		return "", &ec2api.CredentialsError{Err: err}
	}
	profile := creds.Profile
	if profile == "" {
		profile = "default"
	}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section != profile || strings.TrimSpace(k) != "aws_access_key_id" {
			continue
		}
		for account, key := range keys {
			if key.id == strings.TrimSpace(v) {
				return account, nil
			}
		}
	}
	return "", &ec2api.CredentialsError{Err: fmt.Errorf("no known key in profile %s of %s", profile, creds.File)}
}

// otherProviderCategory is the promise an operation of a PV another provider's location
// snapshotted breaks when it completes without its copy: whether the plugin could read the
// backup's location tells two findings apart.
func (w *world) otherProviderCategory() category {
	switch {
	case w.kubeRefused:
		return catOtherProviderUnread
	case w.setup.restoredVolumes:
		return catRestoredVolumeNoCopy
	}
	return catOtherProviderNoCopy
}

// checkFailedOnBlip checks an operation Velero has just failed: it does not fail for good for
// want of the Kubernetes API unless the API refused the plugin (a blip only makes it wait).
func (w *world) checkFailedOnBlip(op *operation) {
	if w.kubeRefused || op.state != opFailed {
		return
	}
	if strings.Contains(op.result, "Kubernetes API") || strings.Contains(op.result, "default AWS credentials") || strings.Contains(op.result, "credentials not known yet") {
		w.violate(catFailedOnBlip, "%s failed for good (%q) while the Kubernetes API only failed transiently", op.pv, op.result)
	}
}
