package ec2api

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// Credentials selects where the SDK finds credentials beyond its default chain (environment,
// web identity / IRSA, EKS Pod Identity, instance metadata), as the upstream plugin's location
// config does.
type Credentials struct {
	// Profile is a profile in the shared config and credentials files.
	Profile string
	// File is a shared credentials file to read instead of the default one.
	File string
}

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

// Factory hands out EC2 and STS clients, one per region and credentials, built once per process
// and reused, so that the retryer's and the limiter's view of EC2's rates is shared by every
// caller; and remembers whose credentials they are.
type Factory struct {
	mu         sync.Mutex
	clients    map[clientKey]*clients
	identities map[Credentials]Identity
}

type clientKey struct {
	region string
	creds  Credentials
}

// clients are the clients of one region and credentials, built from one AWS config.
type clients struct {
	ec2 *ec2.Client
	sts *sts.Client
}

// NewFactory returns an empty Factory.
func NewFactory() *Factory {
	return &Factory{clients: map[clientKey]*clients{}, identities: map[Credentials]Identity{}}
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

// clientsFor returns the clients of region and creds, loading their AWS config the first time.
func (f *Factory) clientsFor(ctx context.Context, region string, creds Credentials) (*clients, error) {
	key := clientKey{region: region, creds: creds}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[key]; ok {
		return c, nil
	}
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithRetryer(newRetryer),
	}
	if profile := creds.profile(); profile != "" {
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(profile))
	}
	if creds.File != "" {
		loadOpts = append(loadOpts, config.WithSharedCredentialsFiles([]string{creds.File}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS config for region %s: %w", region, err)
	}
	if cfg.Credentials != nil {
		cfg.Credentials = aws.NewCredentialsCache(markCredentialFailures{cfg.Credentials})
	}
	limiter := newRequestLimiter()
	c := &clients{
		ec2: ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			o.APIOptions = append(o.APIOptions, limiter.addTo)
		}),
		sts: sts.NewFromConfig(cfg, func(o *sts.Options) { o.Retryer = boundedRetryer() }),
	}
	f.clients[key] = c
	return c, nil
}

// Regional is a source of EC2 clients by region, with the credentials already chosen.
type Regional func(ctx context.Context, region string) (EC2, error)

// ForCredentials binds creds to f.
func (f *Factory) ForCredentials(creds Credentials) Regional {
	return func(ctx context.Context, region string) (EC2, error) {
		return f.Client(ctx, region, creds)
	}
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

func (p markCredentialFailures) Retrieve(ctx context.Context) (aws.Credentials, error) {
	ctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
	defer cancel()
	c, err := p.CredentialsProvider.Retrieve(ctx)
	if err != nil {
		return c, &CredentialsError{Err: err}
	}
	return c, nil
}
