package ec2api

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// Accounts and keys of the simulated STS.
const (
	accountA = "111111111111"
	accountB = "222222222222"
)

var (
	keyA = ec2sim.AccessKey{AccessKeyID: "AKIAACCOUNTA", SecretAccessKey: "secret-of-a"}
	keyB = ec2sim.AccessKey{AccessKeyID: "AKIAACCOUNTB", SecretAccessKey: "secret-of-b"}
)

// keyFile writes a credentials file holding key as its default profile.
func keyFile(t *testing.T, key ec2sim.AccessKey) string {
	return credentialsFile(t, string(key.CredentialsFile()))
}

// stsAt points the SDK's STS endpoint at url.
func stsAt(t *testing.T, url string) {
	isolate(t)
	t.Setenv("AWS_ENDPOINT_URL_STS", url)
}

func TestAccountNamesTheAccountOfTheCredentials(t *testing.T) {
	srv, err := ec2sim.Start(ec2sim.Config{Accounts: []ec2sim.Account{
		{ID: accountA, AccessKeys: []ec2sim.AccessKey{keyA}},
		{ID: accountB, AccessKeys: []ec2sim.AccessKey{keyB}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	srv.OnlyThis(t)
	fileA, fileB := keyFile(t, keyA), keyFile(t, keyB)
	f := NewFactory()
	tests := []struct {
		name        string
		creds       Credentials
		wantAccount string
		wantRefusal string // STS's error code, a definite refusal
	}{
		{"account A's file", Credentials{File: fileA}, accountA, ""},
		{"account B's file", Credentials{File: fileB}, accountB, ""},
		{"account A's file again: cached", Credentials{File: fileA}, accountA, ""},
		{"a key STS does not know", Credentials{File: keyFile(t, ec2sim.AccessKey{AccessKeyID: "AKIANOBODY", SecretAccessKey: "x"})}, "", "InvalidClientTokenId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := f.Account(context.Background(), "us-east-1", tt.creds)
			if tt.wantRefusal != "" {
				if Code(err) != tt.wantRefusal || IsTransient(err) {
					t.Errorf("error %v (transient %v), want a definite %s", err, IsTransient(err), tt.wantRefusal)
				}
				return
			}
			if err != nil || id.Account != tt.wantAccount || id.ARN == "" {
				t.Errorf("identity %+v (%v), want account %s", id, err, tt.wantAccount)
			}
		})
	}
	if n := srv.Sim.Stats().Accounts[accountA].Total("GetCallerIdentity", "ok"); n != 1 {
		t.Errorf("%d GetCallerIdentity calls with A's credentials, want 1 (cached)", n)
	}
}

// A failure that says nothing about the credentials is transient, and not remembered.
func TestAccountFailuresThatAreTransient(t *testing.T) {
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(unavailable.Close)
	throttling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>`))
	}))
	t.Cleanup(throttling.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + closed.Addr().String()
	_ = closed.Close()
	tests := []struct {
		name     string
		endpoint string
		file     string
	}{
		{"STS answers 503", unavailable.URL, keyFile(t, keyA)},
		{"STS throttles", throttling.URL, keyFile(t, keyA)},
		{"STS refuses connections", refused, keyFile(t, keyA)},
		{"the credentials provider fails", unavailable.URL, credentialsFile(t, "[default]\ncredential_process = /bin/false\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stsAt(t, tt.endpoint)
			f := NewFactory()
			_, err := f.Account(context.Background(), "us-east-1", Credentials{File: tt.file})
			if err == nil || !IsTransient(err) {
				t.Fatalf("error %v, want a transient one", err)
			}
			if len(f.identities) != 0 {
				t.Errorf("a failure was remembered: %v", f.identities)
			}
		})
	}
}

// Roles of the simulated STS for assumed-role credentials: account B's IRSA and Pod Identity
// roles, and account A's vault role trusting both with an external ID.
const (
	roleIRSA     = "arn:aws:iam::" + accountB + ":role/velero"
	rolePods     = "arn:aws:iam::" + accountB + ":role/velero-pods"
	roleVault    = "arn:aws:iam::" + accountA + ":role/velero-vault"
	vaultExtID   = "velero-vault-copies"
	veleroSA     = "system:serviceaccount:velero:velero"
	vaultSession = "arn:aws:sts::" + accountA + ":assumed-role/velero-vault/velero-vault"
)

// A location's file may be a shared credentials file or a shared config file, with keys or a
// profile assuming a role from IRSA's web identity or EKS Pod Identity's endpoint: the
// identity names the account of the role assumed, and how it was reached.
func TestAccountNamesTheChainOfAssumedRoles(t *testing.T) {
	srv, err := ec2sim.Start(ec2sim.Config{
		Accounts: []ec2sim.Account{{ID: accountA, AccessKeys: []ec2sim.AccessKey{keyA}}, {ID: accountB, AccessKeys: []ec2sim.AccessKey{keyB}}},
		Roles: []ec2sim.Role{
			{ARN: roleIRSA, Trust: ec2sim.Trust{WebIdentitySubjects: []string{veleroSA}}},
			{ARN: rolePods, Trust: ec2sim.Trust{PodIdentity: true}},
			{ARN: roleVault, Trust: ec2sim.Trust{Principals: []string{roleIRSA, rolePods}, ExternalID: vaultExtID, TagSession: true}},
		},
		PodIdentityAssociations: []ec2sim.PodIdentityAssociation{{Namespace: "velero", ServiceAccount: "velero", RoleARN: rolePods}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	srv.OnlyThis(t)
	token := credentialsFile(t, ec2sim.WebIdentityToken(veleroSA))
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/v1/credentials")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token)
	vault := func(section, extID, source string) string {
		return section + "\nrole_arn = " + roleVault + "\nexternal_id = " + extID + "\nrole_session_name = velero-vault\n" + source
	}
	irsa := func(section string) string {
		return "source_profile = irsa\n\n" + section + "\nrole_arn = " + roleIRSA + "\nweb_identity_token_file = " + token + "\n"
	}
	const pods = "credential_source = EcsContainer\n"
	tests := []struct {
		name        string
		file        string
		profile     string
		wantARN     string
		wantChain   string
		wantRefusal bool
	}{
		{"keys in a credentials file", string(keyB.CredentialsFile()), "", "arn:aws:iam::" + accountB + ":user/" + keyB.AccessKeyID,
			"access keys in a credentials file", false},
		{"a config file: profile vault assumes the vault role from IRSA", vault("[profile vault]", vaultExtID, irsa("[profile irsa]")), "vault",
			vaultSession, "assumed role velero-vault via IRSA web identity", false},
		{"a credentials file: section vault assumes the vault role from IRSA", vault("[vault]", vaultExtID, irsa("[irsa]")), "vault",
			vaultSession, "assumed role velero-vault via IRSA web identity", false},
		{"the default profile assumes the vault role from IRSA", vault("[default]", vaultExtID, irsa("[profile irsa]")), "",
			vaultSession, "assumed role velero-vault via IRSA web identity", false},
		{"the default profile assumes the vault role from EKS Pod Identity", vault("[default]", vaultExtID, pods), "",
			vaultSession, "assumed role velero-vault via EKS Pod Identity", false},
		{"a profile straight to the IRSA role", "[default]\nrole_arn = " + roleIRSA + "\nweb_identity_token_file = " + token + "\nrole_session_name = s1\n", "",
			"arn:aws:sts::" + accountB + ":assumed-role/velero/s1", "role velero via IRSA web identity", false},
		{"the wrong external ID: STS refuses, which may still change", vault("[default]", "guess", pods), "", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFactory()
			creds := Credentials{File: credentialsFile(t, tt.file), Profile: tt.profile}
			id, err := f.Account(context.Background(), "us-east-1", creds)
			if tt.wantRefusal {
				if !IsCredentialsFailure(err) || !IsTransient(err) || !strings.Contains(err.Error(), "AccessDenied") || len(f.identities) != 0 {
					t.Errorf("error %v, want a transient credentials failure naming AccessDenied, not remembered", err)
				}
				return
			}
			if err != nil || id.ARN != tt.wantARN || id.Chain != tt.wantChain {
				t.Fatalf("identity %+v (%v), want %s, %q", id, err, tt.wantARN, tt.wantChain)
			}
			c, err := f.Client(context.Background(), "us-west-2", creds)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.DescribeSnapshots(context.Background(), &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}}); err != nil {
				t.Errorf("DescribeSnapshots in us-west-2 with these credentials: %v", err)
			}
		})
	}
}

// The credentials of each region's clients come from STS in that region: a private cluster
// needs STS's endpoint in every region the plugin reaches with assumed-role credentials.
func TestAssumedRoleCredentialsComeFromEachRegionsSTS(t *testing.T) {
	sim, err := ec2sim.Start(ec2sim.Config{
		Accounts: []ec2sim.Account{{ID: accountA, AccessKeys: []ec2sim.AccessKey{keyA}}, {ID: accountB, AccessKeys: []ec2sim.AccessKey{keyB}}},
		Roles:    []ec2sim.Role{{ARN: roleVault, Trust: ec2sim.Trust{Principals: []string{accountB}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	var mu sync.Mutex
	var scopes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth := r.Header.Get("Authorization"); strings.Contains(auth, "/sts/aws4_request") {
			mu.Lock()
			scopes = append(scopes, strings.Split(auth, "/")[2])
			mu.Unlock()
		}
		sim.Sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	stsAt(t, srv.URL)
	t.Setenv("AWS_ENDPOINT_URL_EC2", srv.URL)
	profile := "[default]\nrole_arn = " + roleVault + "\nsource_profile = keys\n\n[profile keys]\n" +
		"aws_access_key_id = " + keyB.AccessKeyID + "\naws_secret_access_key = " + keyB.SecretAccessKey + "\n"
	creds := Credentials{File: credentialsFile(t, profile)}
	f := NewFactory()
	for _, region := range []string{"us-west-2", "eu-central-1"} {
		c, err := f.Client(context.Background(), region, creds)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.DescribeSnapshots(context.Background(), &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}}); err != nil {
			t.Fatalf("DescribeSnapshots in %s: %v", region, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(scopes, ",") != "us-west-2,eu-central-1" {
		t.Errorf("AssumeRole signed for STS in %v, want us-west-2 then eu-central-1", scopes)
	}
}
