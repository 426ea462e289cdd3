package ec2sim

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// Roles of the trust tests: B's IRSA role for velero/velero, B's Pod Identity role, and roles in
// A that B's roles may assume.
const (
	roleVault      = "arn:aws:iam::111111111111:role/vault"         // trusts B's roles, with the external ID and sts:TagSession
	roleVaultNoTag = "arn:aws:iam::111111111111:role/vault-no-tag"  // trusts B's roles, without sts:TagSession
	roleOfC        = "arn:aws:iam::111111111111:role/of-c"          // trusts account C
	rolePods       = "arn:aws:iam::222222222222:role/pods"          // EKS Pod Identity's
	roleNarrow     = "arn:aws:iam::222222222222:role/narrow"        // IRSA, may not call sts:AssumeRole
	roleOfNarrow   = "arn:aws:iam::111111111111:role/trusts-narrow" // trusts roleNarrow
	vaultExternal  = "velero-vault-copies"
	veleroSubject  = "system:serviceaccount:velero:velero"
)

func trustConfig() Config {
	cfg := accountsConfig()
	cfg.Roles = []Role{
		{ARN: roleB, Trust: Trust{WebIdentitySubjects: []string{veleroSubject}}},
		{ARN: rolePods, Trust: Trust{PodIdentity: true}},
		{ARN: roleNarrow, Trust: Trust{WebIdentitySubjects: []string{anySubject}}, AllowedActions: []string{"DescribeSnapshots"}},
		{ARN: roleVault, Trust: Trust{Principals: []string{roleB, rolePods}, ExternalID: vaultExternal, TagSession: true},
			AllowedActions: []string{"DescribeSnapshots"}},
		{ARN: roleVaultNoTag, Trust: Trust{Principals: []string{roleB, rolePods}}},
		{ARN: roleOfC, Trust: Trust{Principals: []string{acctC}}},
		{ARN: roleOfNarrow, Trust: Trust{Principals: []string{roleNarrow}}},
	}
	cfg.PodIdentityAssociations = []PodIdentityAssociation{
		{Namespace: "velero", ServiceAccount: "velero", RoleARN: rolePods},
		{Namespace: "velero", ServiceAccount: "irsa-only", RoleARN: roleB},
	}
	return cfg
}

// webIdentitySession assumes role with a token of subject sub, unsigned, as the SDK's web
// identity provider does.
func (f *fixture) webIdentitySession(role, sub string) (AccessKey, string) {
	f.t.Helper()
	out, err := f.stsClientAs(AccessKey{}, "").AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{
		RoleArn: aws.String(role), RoleSessionName: aws.String("velero"), WebIdentityToken: aws.String(WebIdentityToken(sub)),
	})
	if err != nil {
		f.t.Fatalf("AssumeRoleWithWebIdentity %s as %s: %v", role, sub, err)
	}
	c := out.Credentials
	return AccessKey{AccessKeyID: aws.ToString(c.AccessKeyId), SecretAccessKey: aws.ToString(c.SecretAccessKey)}, aws.ToString(c.SessionToken)
}

// podIdentity asks the Pod Identity endpoint with authorization, and decodes its answer.
func (f *fixture) podIdentity(method, authorization string) (int, containerCredentials, containerCredentialsError) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+podIdentityPath, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", authorization)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		f.t.Fatal(err)
	}
	var ok containerCredentials
	var refused containerCredentialsError
	_ = json.Unmarshal(raw, &ok)
	_ = json.Unmarshal(raw, &refused)
	return resp.StatusCode, ok, refused
}

// podSession is a Pod Identity session of the service account velero/velero.
func (f *fixture) podSession() (AccessKey, string) {
	f.t.Helper()
	status, c, refused := f.podIdentity(http.MethodGet, WebIdentityToken(veleroSubject))
	if status != http.StatusOK {
		f.t.Fatalf("Pod Identity: HTTP %d %+v", status, refused)
	}
	return AccessKey{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, c.Token
}

// TestAssumeRole: STS issues a role's session to whom its trust names, with the external ID it
// asks for and sts:TagSession for a session with transitive tags, when the caller's own
// permissions allow it; a chained session lasts at most an hour; the session acts as the role's
// account, within the role's permissions.
func TestAssumeRole(t *testing.T) {
	f := start(t, trustConfig())
	f.clock.Set(time.Now())
	irsaKey, irsaToken := f.webIdentitySession(roleB, veleroSubject)
	podKey, podToken := f.podSession()
	narrowKey, narrowToken := f.webIdentitySession(roleNarrow, veleroSubject)
	type caller struct {
		key   AccessKey
		token string
	}
	irsa, pod, narrow, keyOfC := caller{irsaKey, irsaToken}, caller{podKey, podToken}, caller{narrowKey, narrowToken}, caller{keyC, ""}
	tests := []struct {
		name       string
		caller     caller
		role       string
		externalID string
		duration   int32
		wantCode   string
		wantDenied string // the IAM action AccessDenied names
		wantARN    string
	}{
		{name: "an IRSA session the trust names, with the external ID", caller: irsa, role: roleVault, externalID: vaultExternal,
			wantARN: "arn:aws:sts::" + acctA + ":assumed-role/vault/vault-copies"},
		{name: "an IRSA session without the external ID", caller: irsa, role: roleVault, wantCode: "AccessDenied", wantDenied: iamAssumeRole},
		{name: "an IRSA session with another external ID", caller: irsa, role: roleVault, externalID: "guess", wantCode: "AccessDenied", wantDenied: iamAssumeRole},
		{name: "a Pod Identity session, the trust allowing sts:TagSession", caller: pod, role: roleVault, externalID: vaultExternal,
			wantARN: "arn:aws:sts::" + acctA + ":assumed-role/vault/vault-copies"},
		{name: "a Pod Identity session, the trust without sts:TagSession", caller: pod, role: roleVaultNoTag, wantCode: "AccessDenied", wantDenied: iamTagSession},
		{name: "an IRSA session, the trust without sts:TagSession", caller: irsa, role: roleVaultNoTag,
			wantARN: "arn:aws:sts::" + acctA + ":assumed-role/vault-no-tag/vault-copies"},
		{name: "another account's key", caller: keyOfC, role: roleVault, externalID: vaultExternal, wantCode: "AccessDenied", wantDenied: iamAssumeRole},
		{name: "a key of the account the trust names", caller: keyOfC, role: roleOfC,
			wantARN: "arn:aws:sts::" + acctA + ":assumed-role/of-c/vault-copies"},
		{name: "a role that does not exist", caller: irsa, role: "arn:aws:iam::111111111111:role/none", wantCode: "AccessDenied", wantDenied: iamAssumeRole},
		{name: "a caller whose own permissions lack sts:AssumeRole", caller: narrow, role: roleOfNarrow, wantCode: "AccessDenied", wantDenied: iamAssumeRole},
		{name: "role chaining for two hours", caller: irsa, role: roleVault, externalID: vaultExternal, duration: 7200, wantCode: "ValidationError"},
		{name: "unsigned", role: roleVault, externalID: vaultExternal, wantCode: "MissingAuthenticationToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &sts.AssumeRoleInput{RoleArn: aws.String(tt.role), RoleSessionName: aws.String("vault-copies")}
			if tt.externalID != "" {
				in.ExternalId = aws.String(tt.externalID)
			}
			if tt.duration != 0 {
				in.DurationSeconds = aws.Int32(tt.duration)
			}
			out, err := f.stsClientAs(tt.caller.key, tt.caller.token).AssumeRole(ctx, in)
			if errCode(err) != tt.wantCode {
				t.Fatalf("AssumeRole: %v, want %q", err, tt.wantCode)
			}
			if err != nil {
				if tt.wantDenied != "" && !strings.Contains(err.Error(), "not authorized to perform: "+tt.wantDenied+" on resource: "+tt.role) {
					t.Errorf("refusal %q does not name %s on %s", err, tt.wantDenied, tt.role)
				}
				return
			}
			c, user := out.Credentials, out.AssumedRoleUser
			if aws.ToString(user.Arn) != tt.wantARN || !strings.HasPrefix(aws.ToString(user.AssumedRoleId), "AROA") ||
				!strings.HasPrefix(aws.ToString(c.AccessKeyId), "ASIA") || aws.ToString(c.SessionToken) == "" {
				t.Fatalf("answer %+v %+v, want a session %s", user, c, tt.wantARN)
			}
			if left := aws.ToTime(c.Expiration).Sub(f.clock.Now()); tt.caller != keyOfC && left > maxChainedSessionDuration {
				t.Errorf("a chained session lasts %s, more than an hour", left)
			}
			session := AccessKey{AccessKeyID: aws.ToString(c.AccessKeyId), SecretAccessKey: aws.ToString(c.SecretAccessKey)}
			id, err := f.stsClientAs(session, aws.ToString(c.SessionToken)).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			if err != nil || aws.ToString(id.Arn) != tt.wantARN || aws.ToString(id.Account) != acctA {
				t.Errorf("GetCallerIdentity with the session = %+v, %v", id, err)
			}
			ec2c := f.clientAs("us-west-2", session, aws.ToString(c.SessionToken))
			if _, err := ec2c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}}); err != nil {
				t.Errorf("DescribeSnapshots with the session: %v", err)
			}
			_, err = ec2c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{})
			if limited := tt.role == roleVault; limited != (errCode(err) == "UnauthorizedOperation") {
				t.Errorf("DescribeVolumes with a session of %s: %v; the role allows only DescribeSnapshots: %v", tt.role, err, limited)
			}
		})
	}
	st := f.srv.Sim.Stats()
	if n := st.Accounts[acctA].Calls[stsStatsRegion][actionAssumeRole]["ok"]; n != 4 {
		t.Errorf("%d AssumeRole counted ok in the roles' account, want 4", n)
	}
	if n := st.Accounts[acctB].Calls[podIdentityStatsRegion][actionPodIdentity]["ok"]; n != 1 {
		t.Errorf("%d Pod Identity sessions counted in B, want 1", n)
	}
}

// TestWebIdentityTrust: AssumeRoleWithWebIdentity takes a role only for the subjects its trust
// names.
func TestWebIdentityTrust(t *testing.T) {
	f := start(t, trustConfig())
	tests := []struct {
		name, role, sub, wantCode string
	}{
		{"the subject the trust names", roleB, veleroSubject, ""},
		{"another service account", roleB, "system:serviceaccount:velero:velero-server", "AccessDenied"},
		{"a role trusting any subject", roleNarrow, "system:serviceaccount:kube-system:x", ""},
		{"a role trusting no web identity", roleVault, veleroSubject, "AccessDenied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.stsClientAs(AccessKey{}, "").AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{
				RoleArn: aws.String(tt.role), RoleSessionName: aws.String("velero"), WebIdentityToken: aws.String(WebIdentityToken(tt.sub)),
			})
			if errCode(err) != tt.wantCode {
				t.Errorf("error %v, want %q", err, tt.wantCode)
			}
		})
	}
}

// TestPodIdentityEndpoint: the endpoint gives the pods of an associated service account a
// session of the role its association names, when that role trusts pods.eks.amazonaws.com.
func TestPodIdentityEndpoint(t *testing.T) {
	f := start(t, trustConfig())
	tests := []struct {
		name, method, authorization string
		wantStatus                  int
		wantCode                    string
	}{
		{"an associated service account", http.MethodGet, WebIdentityToken(veleroSubject), http.StatusOK, ""},
		{"no association", http.MethodGet, WebIdentityToken("system:serviceaccount:velero:other"), http.StatusBadRequest, "ResourceNotFoundException"},
		{"a role that does not trust pods.eks.amazonaws.com", http.MethodGet, WebIdentityToken("system:serviceaccount:velero:irsa-only"),
			http.StatusBadRequest, "AccessDeniedException"},
		{"not a service account token", http.MethodGet, WebIdentityToken("velero"), http.StatusBadRequest, "InvalidTokenException"},
		{"no token", http.MethodGet, "", http.StatusBadRequest, "InvalidTokenException"},
		{"POST", http.MethodPost, WebIdentityToken(veleroSubject), http.StatusMethodNotAllowed, "InvalidRequest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, c, refused := f.podIdentity(tt.method, tt.authorization)
			if status != tt.wantStatus || refused.Code != tt.wantCode {
				t.Fatalf("HTTP %d %+v, want %d %q", status, refused, tt.wantStatus, tt.wantCode)
			}
			if tt.wantCode == "" && (!strings.HasPrefix(c.AccessKeyID, "ASIA") || c.AccountID != acctB || c.Token == "") {
				t.Errorf("credentials %+v, want a session of %s", c, rolePods)
			}
		})
	}
}

// TestSDKProfilesAssumeTheVaultRole: the SDK's shared config profiles that chain a web identity
// (IRSA) or the container credentials endpoint (EKS Pod Identity) into AssumeRole reach EC2 as
// the assumed role's account, against the simulator's STS and Pod Identity endpoint.
func TestSDKProfilesAssumeTheVaultRole(t *testing.T) {
	f := start(t, trustConfig())
	f.clock.Set(time.Now()) // the SDK judges expiry on the real clock
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(WebIdentityToken(veleroSubject)), 0o600); err != nil {
		t.Fatal(err)
	}
	const vault = "[profile vault]\nrole_arn = %s\nexternal_id = " + vaultExternal + "\nrole_session_name = velero-vault\n"
	irsa := "source_profile = irsa\n\n[profile irsa]\nrole_arn = " + roleB + "\nweb_identity_token_file = " + token + "\n"
	tests := []struct {
		name, config, wantCode string
	}{
		{"IRSA, then AssumeRole", strings.Replace(vault, "%s", roleVault, 1) + irsa, ""},
		{"EKS Pod Identity, then AssumeRole", strings.Replace(vault, "%s", roleVault, 1) + "credential_source = EcsContainer\n", ""},
		{"EKS Pod Identity, then a role without sts:TagSession", strings.Replace(vault, "%s", roleVaultNoTag, 1) + "credential_source = EcsContainer\n", "AccessDenied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config")
			if err := os.WriteFile(path, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{
				"AWS_ENDPOINT_URL_STS": f.srv.URL, "AWS_ENDPOINT_URL_EC2": f.srv.URL,
				"AWS_CONTAINER_CREDENTIALS_FULL_URI": f.srv.URL + podIdentityPath, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": token,
				"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "", "AWS_ROLE_ARN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
				"AWS_EC2_METADATA_DISABLED": "true",
			} {
				t.Setenv(k, v)
			}
			cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-west-2"), config.WithSharedConfigProfile("vault"),
				config.WithSharedConfigFiles([]string{path}), config.WithSharedCredentialsFiles([]string{filepath.Join(dir, "none")}))
			if err != nil {
				t.Fatal(err)
			}
			id, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			if errCode(err) != tt.wantCode {
				t.Fatalf("GetCallerIdentity: %v, want %q", err, tt.wantCode)
			}
			if err == nil && aws.ToString(id.Arn) != "arn:aws:sts::"+acctA+":assumed-role/vault/velero-vault" {
				t.Errorf("GetCallerIdentity = %s, want the vault role's session", aws.ToString(id.Arn))
			}
		})
	}
}
