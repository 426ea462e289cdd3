package ec2api

import (
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// sourcesOf is the SDK's record of how provider obtains credentials, first source first: what
// its config resolution chose (a profile's source, web identity, a container endpoint), then
// each role it assumes. Empty when the provider keeps none.
func sourcesOf(provider aws.CredentialsProvider) []aws.CredentialSource {
	if p, ok := provider.(aws.CredentialProviderSource); ok {
		return p.ProviderSources()
	}
	return nil
}

// originNames name the first step of a credentials chain: where the SDK obtained the
// credentials it signs with or assumes a role with.
var originNames = []struct {
	sources []aws.CredentialSource
	name    string
}{
	{[]aws.CredentialSource{aws.CredentialSourceEnvVarsSTSWebIDToken, aws.CredentialSourceProfileSTSWebIDToken, aws.CredentialSourceSTSAssumeRoleWebID}, "IRSA web identity"},
	{[]aws.CredentialSource{aws.CredentialSourceHTTP}, "EKS Pod Identity"},
	{[]aws.CredentialSource{aws.CredentialSourceIMDS}, "the node's instance role"},
	{[]aws.CredentialSource{aws.CredentialSourceEnvVars}, "access keys in the environment"},
	{[]aws.CredentialSource{aws.CredentialSourceProfile}, "access keys in a credentials file"},
	{[]aws.CredentialSource{aws.CredentialSourceProfileProcess, aws.CredentialSourceProcess}, "credential_process"},
	{[]aws.CredentialSource{aws.CredentialSourceSSO, aws.CredentialSourceSSOLegacy, aws.CredentialSourceProfileSSO}, "an SSO session"},
	{[]aws.CredentialSource{aws.CredentialSourceLogin, aws.CredentialSourceProfileLogin}, "an aws login session"},
}

// assumedRolePrefix starts the resource of an assumed role session's ARN:
// arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION.
const assumedRolePrefix = "assumed-role/"

// roleOfSession is the name of the role an assumed-role session ARN is of; "" for any other ARN.
func roleOfSession(arn string) string {
	_, resource, _ := strings.Cut(arn, ":"+assumedRolePrefix)
	name, _, found := strings.Cut(resource, "/")
	if !found {
		return ""
	}
	return name
}

// chainOf says, for people, how credentials whose SDK sources are sources and whose principal
// is arn were obtained: "access keys in a credentials file", "role velero via IRSA web
// identity", "assumed role velero-vault via EKS Pod Identity" (its container credentials
// endpoint). "" when the SDK kept no record.
func chainOf(sources []aws.CredentialSource, arn string) string {
	origin := ""
	for _, o := range originNames {
		if slices.ContainsFunc(sources, func(s aws.CredentialSource) bool { return slices.Contains(o.sources, s) }) {
			origin = o.name
			break
		}
	}
	role := roleOfSession(arn)
	switch {
	case origin == "" && !slices.Contains(sources, aws.CredentialSourceSTSAssumeRole):
		return ""
	case slices.Contains(sources, aws.CredentialSourceSTSAssumeRole) && origin == "":
		return "assumed role " + role
	case slices.Contains(sources, aws.CredentialSourceSTSAssumeRole):
		return "assumed role " + role + " via " + origin
	case role != "":
		return "role " + role + " via " + origin
	}
	return origin
}
