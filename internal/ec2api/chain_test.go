package ec2api

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// How credentials were obtained, as the SDK recorded it, said for people.
func TestChainOf(t *testing.T) {
	const (
		user    = "arn:aws:iam::111111111111:user/backup"
		session = "arn:aws:sts::222222222222:assumed-role/velero-vault/velero-vault"
		irsa    = "arn:aws:sts::111111111111:assumed-role/velero/botocore-session-1"
	)
	s := func(sources ...aws.CredentialSource) []aws.CredentialSource { return sources }
	tests := []struct {
		name    string
		sources []aws.CredentialSource
		arn     string
		want    string
	}{
		{"keys in a credentials file", s(aws.CredentialSourceProfile), user, "access keys in a credentials file"},
		{"keys in the environment", s(aws.CredentialSourceEnvVars), user, "access keys in the environment"},
		{"IRSA from the environment", s(aws.CredentialSourceEnvVarsSTSWebIDToken), irsa, "role velero via IRSA web identity"},
		{"EKS Pod Identity from the environment", s(aws.CredentialSourceHTTP), irsa, "role velero via EKS Pod Identity"},
		{"the node's role", s(aws.CredentialSourceIMDS), irsa, "role velero via the node's instance role"},
		{"a profile assuming a role from IRSA", s(aws.CredentialSourceProfileSourceProfile, aws.CredentialSourceProfileSTSWebIDToken, aws.CredentialSourceSTSAssumeRole),
			session, "assumed role velero-vault via IRSA web identity"},
		{"a profile assuming a role from EKS Pod Identity", s(aws.CredentialSourceProfileNamedProvider, aws.CredentialSourceHTTP, aws.CredentialSourceSTSAssumeRole),
			session, "assumed role velero-vault via EKS Pod Identity"},
		{"a profile assuming a role with keys of another profile", s(aws.CredentialSourceProfileSourceProfile, aws.CredentialSourceProfile, aws.CredentialSourceSTSAssumeRole),
			session, "assumed role velero-vault via access keys in a credentials file"},
		{"an assumed role of unknown origin", s(aws.CredentialSourceSTSAssumeRole), session, "assumed role velero-vault"},
		{"no record", nil, user, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chainOf(tt.sources, tt.arn); got != tt.want {
				t.Errorf("chainOf = %q, want %q", got, tt.want)
			}
		})
	}
}
