package ec2api

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// Identity is whose credentials these are, as STS names them.
type Identity struct{ Account, ARN string }

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
		return Identity{}, fmt.Errorf("asking STS in %s whose credentials %s are: %w", region, creds, err)
	}
	id = Identity{Account: aws.ToString(out.Account), ARN: aws.ToString(out.Arn)}
	f.mu.Lock()
	f.identities[key] = id
	f.mu.Unlock()
	return id, nil
}
