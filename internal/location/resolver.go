// Package location finds, for the plugin's item actions, the VolumeSnapshotLocations Velero used
// for a backup and exactly the AWS credentials the VolumeSnapshotter got for them.
//
// Only the VolumeSnapshotter receives a location's config from Velero. Core adds the key
// credentialsFile to it when the location has spec.credential: it reads the Secret key and
// writes it to <os.TempDir()>/credentials/<namespace>/<secret>-<key>, overriding any
// credentialsFile the user set (internal/volume/snapshotlocation.go and
// internal/credentials/file_store.go in Velero). The item actions get only the Backup or
// Restore, so a Resolver reads the locations, the Backup and the Secrets from the Kubernetes API
// and does the same, writing the Secret key to a private file of its own, named by a digest of
// the namespace, the Secret and the key, so that no two Secret keys share a file.
//
// Only a definite answer of the API (Forbidden, Unauthorized, not serving Velero's API, no
// client config) makes the item actions use the default credential chain. An API that does not
// answer, or answers "not now" (timeouts, 429, 5xx), keeps what was read last; with nothing
// read yet the locations' credentials are ec2api.Unknown, and the operations wait.
//
// Velero fills a Backup's spec.volumeSnapshotLocations with the location it chose for each
// provider (the one named, the server's default or the only one) and persists it before any
// item action runs, so the Backup an action receives in Execute, Progress and Cancel names the
// location its snapshots were taken with.
//
// Create one Resolver per plugin process and share it between the actions (WithLogger gives a
// view with another logger sharing the cache): it caches what it reads for a short TTL, so the
// many Progress calls of one reconcile cost one API read, and it logs a lost API access once.
package location

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// Defaults.
const (
	// DefaultProvider is the plugin's VolumeSnapshotter name, the provider of its locations.
	DefaultProvider = "velero-async.io/aws"
	// DefaultCacheTTL is how long what the Resolver read from the API is reused.
	DefaultCacheTTL = 30 * time.Second
	// DefaultRequestTimeout bounds each API read.
	DefaultRequestTimeout = 10 * time.Second
)

// Location config keys the Resolver reads (the VolumeSnapshotter's keys).
const (
	ConfigRegion          = "region"
	ConfigProfile         = "profile"
	ConfigCredentialsFile = "credentialsFile"
	ConfigCopyToRegion    = "copyToRegion"
)

// Location config keys naming the credentials of a location's vault account.
const (
	ConfigVaultAccountID        = "vaultAccountId"
	ConfigVaultCredentialSecret = "vaultCredentialSecret"
	ConfigVaultCredentialKey    = "vaultCredentialKey"
	ConfigVaultProfile          = "vaultProfile"
	// DefaultVaultCredentialKey is the Secret key read when vaultCredentialKey is not set.
	DefaultVaultCredentialKey = "cloud"
)

const defaultChainSuffix = ": using the default AWS credential chain"

// Location is one VolumeSnapshotLocation as the VolumeSnapshotter sees it. The zero Location
// stands for the SDK's default credential chain.
type Location struct {
	// Name is the VolumeSnapshotLocation's name; empty for the default chain.
	Name string
	// Config is a copy of the location's config as Velero passes it to the VolumeSnapshotter's
	// Init: with credentialsFile set to the Secret's file when the location has spec.credential.
	Config map[string]string
	// Credentials are the location's profile and credentials file.
	Credentials ec2api.Credentials
	// Vault, when the location names a vault account, are the credentials the plugin uses there.
	Vault *ec2api.Credentials
	// Unread is true for the default chain standing in for locations the Kubernetes API refused
	// to show: whether the backup's location asks for copies cannot be told.
	Unread bool
}

// DefaultChain reports whether l stands for the SDK's default credential chain.
func (l Location) DefaultChain() bool { return l.Name == "" }

// Choice is the locations an operation may belong to, most likely first. It always holds at
// least one Location; the caller looks in each for its resource.
type Choice struct {
	Locations []Location
	// Note, when not empty, says why the choice is not simply the backup's location, e.g. why
	// the default credential chain is used. It never holds secret contents.
	Note string
}

// CredentialError says a location's spec.credential cannot be read: the Secret does not exist
// or has no such key.
type CredentialError struct {
	// Kind is the location's kind; "" for a VolumeSnapshotLocation.
	Kind      string
	Location  string
	Namespace string
	Secret    string
	Key       string
	Err       error
}

func (e *CredentialError) Error() string {
	return fmt.Sprintf("%s %q: credential Secret %s/%s key %q: %v", cmp.Or(e.Kind, "VolumeSnapshotLocation"), e.Location, e.Namespace, e.Secret, e.Key, e.Err)
}

func (e *CredentialError) Unwrap() error { return e.Err }

// Errors a CredentialError wraps.
var (
	ErrSecretNotFound = errors.New("secret not found")
	ErrKeyNotFound    = errors.New("secret has no such key")
	ErrBadSelector    = errors.New("secret name or key cannot name a file")
)

// Option configures a Resolver.
type Option func(*state)

// WithReader makes the Resolver read through rd instead of a client built from KUBECONFIG or
// the in-cluster config.
func WithReader(rd client.Reader) Option { return func(s *state) { s.reader = rd } }

// WithNamespace sets Velero's namespace; by default VELERO_NAMESPACE, else "velero". It is used
// when the Backup or Restore has no namespace of its own.
func WithNamespace(ns string) Option { return func(s *state) { s.namespace = ns } }

// WithTempDir sets the directory under which CredentialsDirName is created; by default
// os.TempDir().
func WithTempDir(dir string) Option { return func(s *state) { s.tempDir = dir } }

// Files holds credentials files at paths the AWS SDK reads (*secretfile.Files).
type Files interface {
	Put(name string, data []byte) (path string, err error)
}

// WithFiles makes the Resolver put the Secret keys it resolves in files instead of writing
// them under the temp dir: a command's in-memory files, which never touch disk.
func WithFiles(files Files) Option { return func(s *state) { s.files = files } }

// WithLogger sets the logger; by default logrus's standard logger.
func WithLogger(log logrus.FieldLogger) Option { return func(s *state) { s.log = log } }

// WithClock sets the clock of the cache; by default the real clock.
func WithClock(c clock.PassiveClock) Option { return func(s *state) { s.clock = c } }

// WithCacheTTL sets how long API reads are reused; by default DefaultCacheTTL.
func WithCacheTTL(d time.Duration) Option { return func(s *state) { s.ttl = d } }

// WithRequestTimeout bounds each API read; by default DefaultRequestTimeout.
func WithRequestTimeout(d time.Duration) Option { return func(s *state) { s.timeout = d } }

// WithProvider sets the VolumeSnapshotLocation provider; by default DefaultProvider.
func WithProvider(p string) Option { return func(s *state) { s.provider = p } }

// WithDefaultLocations passes the server's --default-volume-snapshot-locations (provider to
// location name). Plugin processes get the server's flags: the framework server's
// GetConfig().DefaultVolumeSnapshotLocations.Data() holds them once Serve has parsed them. The
// provider's default is then tried first for a backup that names none of its locations.
func WithDefaultLocations(m map[string]string) Option {
	return func(s *state) {
		s.defaults = map[string]string{}
		for k, v := range m {
			s.defaults[k] = v
		}
	}
}

// Resolver finds the locations and credentials of backups and restores. It is safe for
// concurrent use.
type Resolver struct {
	*state
	log logrus.FieldLogger
}

// New returns a Resolver. Without WithReader it builds its Kubernetes client on first use from
// clientcmd's default loading rules (KUBECONFIG, else the in-cluster config).
func New(opts ...Option) *Resolver {
	s := &state{
		provider:        DefaultProvider,
		namespace:       os.Getenv(NamespaceEnv),
		credentialFiles: credentialFiles{tempDir: os.TempDir()},
		clock:           clock.RealClock{},
		ttl:             DefaultCacheTTL,
		timeout:         DefaultRequestTimeout,
		newReader:       newDefaultReader,
		vsls:            map[string]entry[[]velerov1.VolumeSnapshotLocation]{},
		backups:         map[types.NamespacedName]entry[*velerov1.Backup]{},
		secrets:         map[types.NamespacedName]entry[*corev1.Secret]{},
	}
	for _, o := range opts {
		o(s)
	}
	if s.namespace == "" {
		s.namespace = DefaultNamespace
	}
	if s.log == nil {
		s.log = logrus.StandardLogger()
	}
	return &Resolver{state: s, log: s.log}
}

// WithLogger returns a Resolver logging to log and sharing r's cache and state.
func (r *Resolver) WithLogger(log logrus.FieldLogger) *Resolver {
	return &Resolver{state: r.state, log: log}
}

// Namespace is the namespace used for objects that have none.
func (r *Resolver) Namespace() string { return r.namespace }

// ForBackup returns the locations the backup's operations in region may belong to.
func (r *Resolver) ForBackup(ctx context.Context, backup *velerov1.Backup, region string) (Choice, error) {
	if backup == nil {
		return Choice{}, errors.New("no backup")
	}
	ns := r.namespaceOf(backup.Namespace)
	rd, err := r.client()
	if err != nil {
		return r.fallback(err, backup.Spec.VolumeSnapshotLocations)
	}
	subject := fmt.Sprintf("backup %s/%s", ns, backup.Name)
	return r.choose(ctx, rd, ns, subject, backup.Spec.VolumeSnapshotLocations, region, "")
}

// ForRestore returns the locations the restore's operations in region may belong to: those of
// the Backup it restores, or, when that Backup cannot be found, every location of the provider.
func (r *Resolver) ForRestore(ctx context.Context, restore *velerov1.Restore, region string) (Choice, error) {
	if restore == nil {
		return Choice{}, errors.New("no restore")
	}
	ns := r.namespaceOf(restore.Namespace)
	rd, err := r.client()
	if err != nil {
		return r.fallback(err, nil)
	}
	name := restore.Spec.BackupName
	if name == "" {
		note := fmt.Sprintf("restore %s/%s names no backup", ns, restore.Name)
		return r.choose(ctx, rd, ns, "restore "+ns+"/"+restore.Name, nil, region, note)
	}
	backup, found, err := r.getBackup(ctx, rd, ns, name)
	if err != nil {
		return r.fallback(err, nil)
	}
	subject := fmt.Sprintf("backup %s/%s", ns, name)
	if !found {
		note := fmt.Sprintf("backup %s/%s of restore %s not found", ns, name, restore.Name)
		return r.choose(ctx, rd, ns, subject, nil, region, note)
	}
	return r.choose(ctx, rd, ns, subject, backup.Spec.VolumeSnapshotLocations, region, "")
}

func (r *Resolver) namespaceOf(ns string) string {
	if ns != "" {
		return ns
	}
	return r.namespace
}

// defaultChain is the Choice of the SDK's default credential chain.
func defaultChain(note string) Choice {
	return Choice{Locations: []Location{{}}, Note: note}
}

// fallback turns a lost API access into the default chain, and an API that does not answer
// into locations whose credentials are not known yet (those of named, when names are known):
// the operations wait, and nothing is sent with other credentials. Other errors are returned.
func (r *Resolver) fallback(err error, named []string) (Choice, error) {
	var u *unavailableError
	if !errors.As(err, &u) {
		return Choice{}, err
	}
	r.lost(r.log, u)
	if !u.transient {
		c := defaultChain("no Kubernetes API access (" + u.Error() + ")" + defaultChainSuffix)
		c.Locations[0].Unread = true
		return c, nil
	}
	if len(named) == 0 {
		named = []string{""}
	}
	var c Choice
	for _, name := range named {
		c.Locations = append(c.Locations, waitingFor(name, u))
	}
	return c, nil
}

// waitingFor is a location whose credentials the API did not answer with.
func waitingFor(name string, u *unavailableError) Location {
	return Location{Name: name, Credentials: ec2api.Unknown(waitingPrefix + u.Error())}
}

// waitingPrefix starts what an operation waiting for the API says.
const waitingPrefix = "waiting for the Kubernetes API: "

// choose picks among the namespace's locations: the named ones of the provider, else all of
// the provider; then those of region. unknown, when set, says why no names are known.
func (r *Resolver) choose(ctx context.Context, rd client.Reader, ns, subject string, named []string, region, unknown string) (Choice, error) {
	var notes []string
	all, err := r.listLocations(ctx, rd, ns)
	if err != nil {
		return r.fallback(err, named)
	}
	byName := map[string]*velerov1.VolumeSnapshotLocation{}
	var mine []*velerov1.VolumeSnapshotLocation
	for i := range all {
		v := &all[i]
		byName[v.Name] = v
		if v.Spec.Provider == r.provider {
			mine = append(mine, v)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].Name < mine[j].Name })
	if len(mine) == 0 {
		if unknown != "" {
			notes = append(notes, unknown)
		}
		notes = append(notes, fmt.Sprintf("no VolumeSnapshotLocation of provider %s in namespace %s", r.provider, ns))
		return defaultChain(strings.Join(notes, "; ") + defaultChainSuffix), nil
	}

	var cands []*velerov1.VolumeSnapshotLocation
	var missing []string
	seen := map[string]bool{}
	for _, n := range named {
		if seen[n] {
			continue
		}
		seen[n] = true
		v, ok := byName[n]
		if !ok {
			missing = append(missing, n)
			continue
		}
		if v.Spec.Provider == r.provider {
			cands = append(cands, v)
		}
	}
	// unnamed is why the backup's own location is not known, when it is not.
	unnamed, named0 := "", len(cands) == 0
	if named0 {
		switch {
		case unknown != "":
			unnamed = unknown
		case len(missing) > 0:
			unnamed = fmt.Sprintf("VolumeSnapshotLocation %s named by %s not found", strings.Join(missing, ", "), subject)
		default:
			unnamed = fmt.Sprintf("%s names no VolumeSnapshotLocation of provider %s", subject, r.provider)
		}
		cands = r.withDefaultFirst(mine)
	}

	regionNote := ""
	if region != "" {
		var own, copies []*velerov1.VolumeSnapshotLocation
		for _, v := range cands {
			switch {
			case v.Spec.Config[ConfigRegion] == region:
				own = append(own, v)
			case v.Spec.Config[ConfigCopyToRegion] == region:
				copies = append(copies, v)
			}
		}
		if matched := append(own, copies...); len(matched) > 0 {
			cands = matched
		} else {
			var desc []string
			for _, v := range cands {
				desc = append(desc, fmt.Sprintf("%s (%s)", v.Name, v.Spec.Config[ConfigRegion]))
			}
			regionNote = fmt.Sprintf("no VolumeSnapshotLocation of provider %s has region %s: trying %s", r.provider, region, strings.Join(desc, ", "))
		}
	}
	if named0 {
		several := len(cands) > 1 && cands[0].Name != r.defaults[r.provider]
		switch {
		case several && regionNote == "":
			notes = append(notes, unnamed+": trying "+names(cands))
		case several || len(named) > 0 || unknown != "":
			// Velero would have named the only location of the provider: no note then.
			notes = append(notes, unnamed)
		}
	}
	if regionNote != "" {
		notes = append(notes, regionNote)
	}

	choice := Choice{Note: strings.Join(notes, "; ")}
	for _, v := range cands {
		loc, err := r.location(ctx, rd, ns, v)
		var ce *CredentialError
		var u *unavailableError
		switch {
		case errors.As(err, &ce):
			return Choice{}, err
		case errors.As(err, &u) && u.transient:
			r.lost(r.log, u)
			loc = waitingFor(v.Name, u)
			if v.Spec.Config[ConfigVaultAccountID] != "" {
				vault := loc.Credentials
				loc.Vault = &vault
			}
		case err != nil:
			return r.fallback(err, nil)
		}
		choice.Locations = append(choice.Locations, loc)
	}
	return choice, nil
}

// withDefaultFirst moves the provider's server default, when configured and present, first.
func (r *Resolver) withDefaultFirst(mine []*velerov1.VolumeSnapshotLocation) []*velerov1.VolumeSnapshotLocation {
	def := r.defaults[r.provider]
	out := make([]*velerov1.VolumeSnapshotLocation, 0, len(mine))
	for _, v := range mine {
		if v.Name == def {
			out = append(out, v)
		}
	}
	for _, v := range mine {
		if v.Name != def {
			out = append(out, v)
		}
	}
	return out
}

func names(vs []*velerov1.VolumeSnapshotLocation) string {
	var n []string
	for _, v := range vs {
		n = append(n, v.Name)
	}
	return strings.Join(n, ", ")
}

// location builds v's Location as Velero builds the VolumeSnapshotter's config: a credential
// always overrides the config's credentialsFile.
func (r *Resolver) location(ctx context.Context, rd client.Reader, ns string, v *velerov1.VolumeSnapshotLocation) (Location, error) {
	cfg := make(map[string]string, len(v.Spec.Config)+1)
	for k, val := range v.Spec.Config {
		cfg[k] = val
	}
	if sel := v.Spec.Credential; sel != nil {
		path, err := r.credentialsFile(ctx, rd, ns, v.Name, sel)
		if err != nil {
			return Location{}, err
		}
		cfg[ConfigCredentialsFile] = path
	}
	vault, err := r.vaultCredentials(ctx, rd, ns, v.Name, cfg)
	if err != nil {
		return Location{}, err
	}
	return Location{
		Name:        v.Name,
		Config:      cfg,
		Credentials: ec2api.Credentials{Profile: cfg[ConfigProfile], File: cfg[ConfigCredentialsFile]},
		Vault:       vault,
	}, nil
}

// VaultCredentials returns the credentials the config of location (as Velero passes it to the
// VolumeSnapshotter) names for its vault account: the file in the Secret vaultCredentialSecret
// of Velero's namespace (key vaultCredentialKey, default "cloud"), a shared credentials or config
// file with keys or a profile assuming a role (ec2api.Credentials.File), or the location's own
// credentials, with the profile vaultProfile. It returns nil when the config names no vault
// account.
func (r *Resolver) VaultCredentials(ctx context.Context, location string, cfg map[string]string) (*ec2api.Credentials, error) {
	if cfg[ConfigVaultAccountID] == "" {
		return nil, nil
	}
	rd, err := r.client()
	if err != nil && cfg[ConfigVaultCredentialSecret] != "" {
		return nil, err
	}
	return r.vaultCredentials(ctx, rd, r.namespace, location, cfg)
}

// vaultCredentials is VaultCredentials with the reader and namespace chosen.
func (r *Resolver) vaultCredentials(ctx context.Context, rd client.Reader, ns, location string, cfg map[string]string) (*ec2api.Credentials, error) {
	if cfg[ConfigVaultAccountID] == "" {
		return nil, nil
	}
	creds := &ec2api.Credentials{Profile: cfg[ConfigVaultProfile], File: cfg[ConfigCredentialsFile]}
	if name := cfg[ConfigVaultCredentialSecret]; name != "" {
		key := cfg[ConfigVaultCredentialKey]
		if key == "" {
			key = DefaultVaultCredentialKey
		}
		path, err := r.credentialsFile(ctx, rd, ns, location, &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key,
		})
		if err != nil {
			return nil, err
		}
		creds.File = path
	}
	return creds, nil
}

// StorageCredentialsFile writes the Secret key a BackupStorageLocation's spec.credential selects
// to a private file, as Velero's server does for the location's object-store plugin, and
// returns its path.
func (r *Resolver) StorageCredentialsFile(ctx context.Context, bsl string, sel *corev1.SecretKeySelector) (string, error) {
	rd, err := r.client()
	if err != nil {
		return "", err
	}
	return r.secretFile(ctx, rd, r.namespace, "BackupStorageLocation", bsl, sel)
}

// credentialsFile writes the selected Secret key to the location's private file.
func (r *Resolver) credentialsFile(ctx context.Context, rd client.Reader, ns, location string, sel *corev1.SecretKeySelector) (string, error) {
	return r.secretFile(ctx, rd, ns, "", location, sel)
}

// secretFile writes the Secret key sel selects for the location of kind to a private file.
func (r *Resolver) secretFile(ctx context.Context, rd client.Reader, ns, kind, location string, sel *corev1.SecretKeySelector) (string, error) {
	cerr := func(err error) error {
		return &CredentialError{Kind: kind, Location: location, Namespace: ns, Secret: sel.Name, Key: sel.Key, Err: err}
	}
	if !fileNamePart(sel.Name) || !fileNamePart(sel.Key) {
		return "", cerr(ErrBadSelector)
	}
	secret, found, err := r.getSecret(ctx, rd, ns, sel.Name)
	if err != nil {
		return "", err
	}
	if !found {
		return "", cerr(ErrSecretNotFound)
	}
	data, ok := secret.Data[sel.Key]
	if !ok {
		return "", cerr(ErrKeyNotFound)
	}
	path, err := r.writeFile(ns, credentialsFileName(ns, sel.Name, sel.Key), data)
	if err != nil {
		return "", cerr(err)
	}
	return path, nil
}
