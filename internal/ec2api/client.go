package ec2api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/velero-async/velero-plugin-for-aws/internal/secretfile"
)

// Credentials selects where the SDK finds credentials beyond its default chain (environment,
// web identity / IRSA, EKS Pod Identity, instance metadata), as the upstream plugin's location
// config does.
type Credentials struct {
	// Profile is a profile in the shared config and credentials files.
	Profile string
	// File is a shared credentials file, or a shared config file, to read instead of the default
	// credentials file: its profiles may hold keys or assume a role (role_arn with
	// source_profile, credential_source or web_identity_token_file), written either way
	// ("[NAME]" as in a credentials file, "[profile NAME]" as in a config file).
	File string
	// pinned, when set by Factory.Pin, is the digest of File's content as read then: these
	// credentials stand for that content whatever File holds later.
	pinned string
	// unknown, when set by Unknown, says why the credentials cannot be known yet.
	unknown string
}

// Unknown returns credentials that are not known yet, because where they come from did not
// answer (the Kubernetes API holding a location and its Secret): every client asked for them
// fails with a CredentialsError saying why, which IsTransient reports as worth another try.
// Nothing is sent with other credentials meanwhile.
func Unknown(why string) Credentials { return Credentials{unknown: why} }

// defaultProfile is the profile of a credentials file read without a profile named.
const defaultProfile = "default"

// profile is the profile to load: the one named, else, with a credentials file, its default
// one. Naming it makes the SDK take the credentials from the files even when the environment
// holds keys (AWS_ACCESS_KEY_ID, a web identity), which it would otherwise prefer: a location's
// credentials always win over the process's.
func (c Credentials) profile() string {
	if c.Profile == "" && c.File != "" {
		return defaultProfile
	}
	return c.Profile
}

// String names where the credentials come from, for messages: never a secret, only the file's
// path or the profile's name.
func (c Credentials) String() string {
	if c.unknown != "" {
		return "credentials not known yet (" + c.unknown + ")"
	}
	var parts []string
	if c.File != "" {
		parts = append(parts, "credentials file "+c.File)
	}
	if c.Profile != "" {
		parts = append(parts, "profile "+c.Profile)
	}
	if len(parts) == 0 {
		return "the default credential chain"
	}
	return strings.Join(parts, ", ")
}

// GoString keeps %#v as free of secrets as %v.
func (c Credentials) GoString() string { return "ec2api.Credentials{" + c.String() + "}" }

// Factory hands out EC2 and STS clients, one per region and credentials, built once per process
// and reused, so that the retryer's and the limiter's view of EC2's rates is shared by every
// caller; and remembers whose credentials they are.
//
// Credentials are told apart by what they are, not by where they are: a credentials file is
// read at every use (it is small), and clients are keyed by a digest of its content, with the
// profile and the region. Two locations share clients only when their credentials are the same,
// and a file rewritten in place (a rotated key) takes effect at the next call; the SDK config is
// loaded once per content.
type Factory struct {
	mu sync.Mutex
	// contents are the credentials files' contents by digest, as read.
	contents   map[string][]byte
	clients    map[clientKey]*clients
	identities map[credentialsKey]Identity
}

// credentialsKey tells credentials apart: the profile loaded and the digest of the credentials
// file's content ("" without a file).
type credentialsKey struct{ profile, content string }

type clientKey struct {
	region string
	credentialsKey
}

// clients are the clients of one region and credentials, built from one AWS config.
type clients struct {
	ec2 *ec2.Client
	sts *sts.Client
	// credentials are the config's credentials provider: it knows how it obtains them.
	credentials aws.CredentialsProvider
	// config is the AWS config both were built from, for clients of other services.
	config aws.Config
}

// NewFactory returns an empty Factory.
func NewFactory() *Factory {
	return &Factory{
		contents:   map[string][]byte{},
		clients:    map[clientKey]*clients{},
		identities: map[credentialsKey]Identity{},
	}
}

// Pin reads creds' credentials file now and returns credentials that stand for this content
// whatever the file holds later: for a file another writer may rewrite with someone else's
// credentials (Velero names the file it hands the VolumeSnapshotter after the Secret and key,
// so two locations can share a path). Credentials without a file are returned as they are.
func (f *Factory) Pin(creds Credentials) (Credentials, error) {
	if creds.File == "" {
		return creds, nil
	}
	digest, err := f.read(creds.File)
	if err != nil {
		return Credentials{}, err
	}
	creds.pinned = digest
	return creds, nil
}

// read reads a credentials file and keeps its content under its digest, which it returns.
func (f *Factory) read(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", &CredentialsError{Err: fmt.Errorf("reading credentials file %s: %w", path, err)}
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.contents[digest]; !ok {
		f.contents[digest] = data
	}
	return digest, nil
}

// keyOf returns the key of creds: the pinned content, else the file's content now.
func (f *Factory) keyOf(creds Credentials) (credentialsKey, error) {
	if creds.unknown != "" {
		return credentialsKey{}, &CredentialsError{Err: errors.New(creds.unknown)}
	}
	key := credentialsKey{profile: creds.profile(), content: creds.pinned}
	if creds.File == "" || key.content != "" {
		return key, nil
	}
	digest, err := f.read(creds.File)
	key.content = digest
	return key, err
}

// Client returns the EC2 client for region. Endpoints come from the SDK's standard settings
// (AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL, the shared config), never from the plugin's config.
func (f *Factory) Client(ctx context.Context, region string, creds Credentials) (EC2, error) {
	c, err := f.clientsFor(ctx, region, creds)
	if err != nil {
		return nil, err
	}
	return c.ec2, nil
}

// Config returns the AWS config of region and creds, loaded as for the EC2 client and sharing its
// credentials cache: for a client of another service (S3) that must act with exactly the
// credentials the plugin uses there, an assumed role included. Endpoints come from the SDK's
// standard settings (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the shared config).
func (f *Factory) Config(ctx context.Context, region string, creds Credentials) (aws.Config, error) {
	c, err := f.clientsFor(ctx, region, creds)
	if err != nil {
		return aws.Config{}, err
	}
	return c.config, nil
}

// clientsFor returns the clients of region and creds, loading their AWS config the first time
// their content is seen.
func (f *Factory) clientsFor(ctx context.Context, region string, creds Credentials) (*clients, error) {
	ck, err := f.keyOf(creds)
	if err != nil {
		return nil, err
	}
	key := clientKey{region: region, credentialsKey: ck}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[key]; ok {
		return c, nil
	}
	content, read := f.contents[ck.content]
	if ck.content != "" && !read {
		return nil, fmt.Errorf("%s were pinned by another Factory", creds)
	}
	cfg, err := loadConfig(ctx, region, ck.profile, content, ck.content != "")
	if err != nil {
		return nil, fmt.Errorf("loading AWS config for region %s with %s: %w", region, creds, err)
	}
	limiter := newRequestLimiter()
	c := &clients{
		ec2: ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			o.APIOptions = append(o.APIOptions, limiter.addTo, nameEndpoint)
		}),
		sts: sts.NewFromConfig(cfg, func(o *sts.Options) {
			o.Retryer = boundedRetryer()
			o.APIOptions = append(o.APIOptions, nameEndpoint)
		}),
		credentials: cfg.Credentials,
		config:      cfg,
	}
	f.clients[key] = c
	return c, nil
}

// loadConfig loads the SDK's config for region and profile, with the shared credentials file
// content when hasFile. The SDK reads credentials files only by path, and only while loading:
// content is put in a file of its own that lives as long as the load (in memory where the
// system allows, secretfile), so what is loaded is exactly the content keyed, whatever the
// location's file holds by now.
//
// The content is read as a shared credentials file and also as a shared config file, after the
// process's own config file: the SDK takes "[NAME]" sections other than default only from
// credentials files and "[profile NAME]" sections only from config files, so a file written
// either way works, keys or an assumed role (role_arn, source_profile, credential_source,
// web_identity_token_file, external_id), which the SDK reads from both.
func loadConfig(ctx context.Context, region, profile string, content []byte, hasFile bool) (aws.Config, error) {
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithRetryer(newRetryer),
		config.WithHTTPClient(newHTTPClient()),
	}
	if profile != "" {
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(profile))
	}
	if hasFile {
		files := secretfile.New("velero-async-aws-config-", nil)
		defer files.Close()
		path, err := files.Put("credentials", content)
		if err != nil {
			return aws.Config{}, err
		}
		loadOpts = append(loadOpts, config.WithSharedCredentialsFiles([]string{path}),
			config.WithSharedConfigFiles([]string{processConfigFile(), path}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return aws.Config{}, err
	}
	if cfg.Credentials != nil {
		cfg.Credentials = aws.NewCredentialsCache(markCredentialFailures{cfg.Credentials})
	}
	return cfg, nil
}

// configFileEnv names the process's shared config file, as the SDK reads it.
const configFileEnv = "AWS_CONFIG_FILE"

// processConfigFile is the shared config file the SDK reads when told of no other: the process's
// AWS_CONFIG_FILE, else ~/.aws/config. A missing file is read as empty.
func processConfigFile() string {
	if f := os.Getenv(configFileEnv); f != "" {
		return f
	}
	return config.DefaultSharedConfigFilename()
}

// Regional is a source of EC2 clients by region, with the credentials already chosen.
type Regional func(ctx context.Context, region string) (EC2, error)

// ForCredentials binds creds to f.
func (f *Factory) ForCredentials(creds Credentials) Regional {
	return func(ctx context.Context, region string) (EC2, error) {
		return f.Client(ctx, region, creds)
	}
}

// Identity is whose credentials these are, as STS names them, and how they were obtained.
type Identity struct {
	Account, ARN string
	// Chain says how the SDK obtained the credentials, such as "access keys in a credentials
	// file" or "assumed role velero-vault via IRSA web identity" (chain.go).
	Chain string
}

// String names the identity for people: the account, the principal and how it was reached.
func (id Identity) String() string {
	if id.Chain == "" {
		return id.Account + " (" + id.ARN + ")"
	}
	return id.Account + " (" + id.ARN + "; " + id.Chain + ")"
}

// errNoAccount is an STS answer that names no account.
var errNoAccount = errors.New("STS named no account")

// Account returns the identity of creds (STS GetCallerIdentity in region), cached once per process and credentials.
// Credentials are their content, as for clients: a rotated file is asked about again.
// STS's endpoint comes from the SDK's standard settings (AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL,
// the shared config). A failure to reach STS or to obtain the credentials is transient to
// IsTransient; STS refusing them (InvalidClientTokenId, SignatureDoesNotMatch, ExpiredToken) is not.
func (f *Factory) Account(ctx context.Context, region string, creds Credentials) (Identity, error) {
	key, err := f.keyOf(creds)
	if err != nil {
		return Identity{}, err
	}
	f.mu.Lock()
	id, known := f.identities[key]
	f.mu.Unlock()
	if known {
		return id, nil
	}
	c, err := f.clientsFor(ctx, region, creds)
	if err != nil {
		return Identity{}, err
	}
	out, err := c.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err == nil && aws.ToString(out.Account) == "" {
		err = errNoAccount
	}
	if err != nil {
		return Identity{}, fmt.Errorf("asking STS in %s for the account of %s: %w", region, creds, err)
	}
	id = Identity{Account: aws.ToString(out.Account), ARN: aws.ToString(out.Arn)}
	id.Chain = chainOf(sourcesOf(c.credentials), id.ARN)
	f.mu.Lock()
	f.identities[key] = id
	f.mu.Unlock()
	return id, nil
}

// credentialsTimeout bounds one attempt to obtain credentials. The providers' own clients (STS
// for web identity) retry with the SDK's patient retryer, which would wait out an identity
// provider's outage inside one Progress call and hold Velero's reconcile; past this the caller
// hears a CredentialsError, reports it and tries again at its next call.
const credentialsTimeout = 5 * time.Second

// markCredentialFailures wraps every error of a credentials provider (STS, web identity / IRSA,
// EKS Pod Identity, container and instance-metadata credentials) in a CredentialsError, so that
// callers can tell "no credentials yet" from EC2's own answers, and bounds the time it may take.
type markCredentialFailures struct{ aws.CredentialsProvider }

// ProviderSources passes on the SDK's record of how the wrapped provider obtains credentials.
func (p markCredentialFailures) ProviderSources() []aws.CredentialSource {
	return sourcesOf(p.CredentialsProvider)
}

func (p markCredentialFailures) Retrieve(ctx context.Context) (aws.Credentials, error) {
	ctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
	defer cancel()
	c, err := p.CredentialsProvider.Retrieve(ctx)
	if err != nil {
		return c, &CredentialsError{Err: err}
	}
	return c, nil
}
