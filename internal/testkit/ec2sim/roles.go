package ec2sim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Role is an IAM role STS issues sessions of: AssumeRoleWithWebIdentity (IRSA), AssumeRole
// (another principal, such as another account's role), and the EKS Pod Identity endpoint. Its
// sessions act as its account, in every region enabled for it.
type Role struct {
	// ARN is the role's ARN, such as "arn:aws:iam::111111111111:role/velero".
	ARN string `json:"arn"`
	// Account owns the sessions; default the account in ARN.
	Account string `json:"account,omitempty"`
	// Trust is the role's trust policy: who may assume it, and how. The zero Trust trusts
	// nobody.
	Trust Trust `json:"trust"`
	// AllowedActions, when not empty, are the only actions the role's sessions may call (its
	// permission policy), on top of the account's: EC2 actions by name, STS actions as
	// "sts:AssumeRole" and "sts:TagSession", S3 actions as "s3:ListBucket".
	AllowedActions []string `json:"allowedActions,omitempty"`
}

// Trust is a role's trust policy, as the simulator models it.
type Trust struct {
	// WebIdentitySubjects are the subjects (the web identity token's "sub" claim, such as
	// "system:serviceaccount:velero:velero") AssumeRoleWithWebIdentity accepts, as an IRSA
	// role's condition on its OIDC provider's ":sub"; "*" accepts any subject. The token must be a
	// JWT with a subject; its signature, issuer and audience are not checked.
	WebIdentitySubjects []string `json:"webIdentitySubjects,omitempty"`
	// Principals may AssumeRole the role: a role ARN (any session of that role), an IAM user ARN
	// ("arn:aws:iam::ACCOUNT:user/KEYID", the principal a configured key stands for), or an
	// account ID or "arn:aws:iam::ACCOUNT:root" (any principal of that account).
	Principals []string `json:"principals,omitempty"`
	// ExternalID, when set, is the condition sts:ExternalId on Principals: AssumeRole must pass
	// exactly this ExternalId.
	ExternalID string `json:"externalId,omitempty"`
	// TagSession: the trust also allows Principals sts:TagSession, which STS asks for when the
	// caller's session carries transitive session tags (EKS Pod Identity's do).
	TagSession bool `json:"tagSession,omitempty"`
	// PodIdentity: the service principal pods.eks.amazonaws.com may assume the role (with
	// sts:AssumeRole and sts:TagSession), for the EKS Pod Identity associations naming it.
	PodIdentity bool `json:"podIdentity,omitempty"`
}

// anySubject in WebIdentitySubjects accepts any web identity token's subject.
const anySubject = "*"

// The STS actions an allow-list names, and the IAM action of each way to assume a role.
const (
	iamAssumeRole                = "sts:AssumeRole"
	iamTagSession                = "sts:TagSession"
	iamAssumeRoleWithWebIdentity = "sts:AssumeRoleWithWebIdentity"
)

// account is the account a role's sessions belong to: Account, or the one in the ARN.
func (r Role) account() (string, error) {
	fromARN, name, err := parseRoleARN(r.ARN)
	switch {
	case err != nil:
		return "", err
	case name == "":
		return "", fmt.Errorf("role %s: the ARN names no role", r.ARN)
	case r.Account != "" && r.Account != fromARN:
		return "", fmt.Errorf("role %s: account %s is not the ARN's account", r.ARN, r.Account)
	}
	return fromARN, nil
}

// validate reports the first malformed principal of the role's trust.
func (r Role) validate() error {
	for _, p := range r.Trust.Principals {
		if !validAccountID(p) && !strings.HasPrefix(p, "arn:aws:iam::") {
			return fmt.Errorf("role %s: trusted principal %q: want an account ID or an IAM ARN (role, user or root)", r.ARN, p)
		}
	}
	return nil
}

// parseRoleARN splits "arn:PARTITION:iam::ACCOUNT:role/[PATH/]NAME" into the account and NAME.
func parseRoleARN(arn string) (account, name string, err error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "iam" || !validAccountID(parts[4]) ||
		!strings.HasPrefix(parts[5], "role/") {
		return "", "", fmt.Errorf("role %q: not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", arn)
	}
	return parts[4], parts[5][strings.LastIndex(parts[5], "/")+1:], nil
}

// callerPrincipal is the IAM principal a credential stands for, as a trust policy names it: the
// role's ARN for a session, the made-up IAM user of a long-term key.
func callerPrincipal(c credential, keyID string) string {
	if c.role != "" {
		return c.role
	}
	return "arn:aws:iam::" + c.account + ":user/" + keyID
}

// callerARN is the ARN STS names a caller by in its refusals: the session's, or the user's.
func callerARN(c credential, keyID string) string {
	if c.principal != "" {
		return c.principal
	}
	return callerPrincipal(c, keyID)
}

// trustsPrincipal reports whether the trust names the caller: its principal, or its account.
func (t Trust) trustsPrincipal(c credential, keyID string) bool {
	principal := callerPrincipal(c, keyID)
	for _, p := range t.Principals {
		if p == principal || p == c.account || p == "arn:aws:iam::"+c.account+":root" {
			return true
		}
	}
	return false
}

// assumeRoleDenial is why the trust refuses the caller AssumeRole with externalID: the IAM action
// it is not authorized to perform, or "" when it may. A caller whose session carries transitive
// tags also needs sts:TagSession.
func (t Trust) assumeRoleDenial(c credential, keyID, externalID string) string {
	switch {
	case !t.trustsPrincipal(c, keyID), t.ExternalID != "" && externalID != t.ExternalID:
		return iamAssumeRole
	case c.transitiveTags && !t.TagSession:
		return iamTagSession
	}
	return ""
}

// trustsSubject reports whether the trust accepts a web identity token of subject sub.
func (t Trust) trustsSubject(sub string) bool {
	return slices.Contains(t.WebIdentitySubjects, anySubject) || slices.Contains(t.WebIdentitySubjects, sub)
}

// tokenSubject returns the "sub" claim of a JWT (header.payload.signature, base64url), unverified.
func tokenSubject(token string) (string, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", false
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Sub == "" {
		return "", false
	}
	return claims.Sub, true
}

// WebIdentityToken returns an unsigned JWT whose subject is sub, such as
// "system:serviceaccount:velero:velero": what the simulator's STS and Pod Identity endpoint read
// from a Kubernetes service account token.
func WebIdentityToken(sub string) string {
	enc := base64.RawURLEncoding
	claims, _ := json.Marshal(map[string]string{"sub": sub, "aud": "sts.amazonaws.com", "iss": "https://oidc.ec2sim.invalid"})
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc.EncodeToString(claims) + "." + enc.EncodeToString([]byte("unsigned"))
}

// ServiceAccountSubject is the subject of a Kubernetes service account's token.
func ServiceAccountSubject(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}
