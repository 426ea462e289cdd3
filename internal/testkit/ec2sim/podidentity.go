package ec2sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// PodIdentityAssociation gives the pods of a Kubernetes service account the sessions of a role,
// as an EKS Pod Identity association does.
type PodIdentityAssociation struct {
	Namespace      string `json:"namespace"`
	ServiceAccount string `json:"serviceAccount"`
	RoleARN        string `json:"roleArn"`
}

// The EKS Pod Identity endpoint: the path the node's agent serves (at 169.254.170.23, given to
// pods as AWS_CONTAINER_CREDENTIALS_FULL_URI), the region key Stats counts it under, and the EKS
// Auth action behind it.
const (
	podIdentityPath        = "/v1/credentials"
	podIdentityStatsRegion = "eks-auth"
	actionPodIdentity      = "AssumeRoleForPodIdentity"
	// serviceAccountPrefix starts the subject of a service account's token.
	serviceAccountPrefix = "system:serviceaccount:"
)

// containerCredentials is the container credentials endpoint's answer, as the SDK reads it.
type containerCredentials struct {
	AccessKeyID     string `json:"AccessKeyId"`
	SecretAccessKey string `json:"SecretAccessKey"`
	Token           string `json:"Token"`
	Expiration      string `json:"Expiration"`
	AccountID       string `json:"AccountId"`
}

// containerCredentialsError is the endpoint's refusal, as the SDK reads it.
type containerCredentialsError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// servePodIdentity answers GET /v1/credentials as the EKS Pod Identity agent does: the
// Authorization header holds the pod's service account token; the association of that service
// account names a role whose trust must allow pods.eks.amazonaws.com; the answer is a session of
// the role, which carries EKS Pod Identity's transitive session tags.
func (s *Simulator) servePodIdentity(w http.ResponseWriter, r *http.Request) {
	sub, ok := tokenSubject(r.Header.Get("Authorization"))
	ns, sa, isSA := strings.Cut(strings.TrimPrefix(sub, serviceAccountPrefix), ":")
	s.mu.Lock()
	defer s.mu.Unlock()
	role, associated := s.ids.roles[s.ids.pods[ns+"/"+sa]]
	account := unknownAccount
	if associated {
		account = role.Account
	}
	refuse := func(status int, code, message string) {
		s.count(account, podIdentityStatsRegion, actionPodIdentity, code)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(containerCredentialsError{Code: code, Message: message})
	}
	switch {
	case r.Method != http.MethodGet:
		refuse(http.StatusMethodNotAllowed, "InvalidRequest", "GET only")
		return
	case !ok || !strings.HasPrefix(sub, serviceAccountPrefix) || !isSA:
		refuse(http.StatusBadRequest, "InvalidTokenException", "the Authorization header holds no service account token")
		return
	case !associated:
		refuse(http.StatusBadRequest, "ResourceNotFoundException", "no Pod Identity association for service account "+ns+"/"+sa)
		return
	case !role.Trust.PodIdentity:
		refuse(http.StatusBadRequest, "AccessDeniedException", "role "+role.ARN+" does not trust pods.eks.amazonaws.com with sts:AssumeRole and sts:TagSession")
		return
	}
	keyID, cred := s.issueSession(role, "eks-pod-identity-"+ns+"-"+sa, s.cfg.SessionDuration.Duration, true)
	s.count(account, podIdentityStatsRegion, actionPodIdentity, "ok")
	writeJSON(w, containerCredentials{AccessKeyID: keyID, SecretAccessKey: cred.secret, Token: cred.token,
		Expiration: cred.expires.Format(time.RFC3339), AccountID: cred.account})
}
