package ec2api

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

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
	stsAt(t, srv.URL)
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
