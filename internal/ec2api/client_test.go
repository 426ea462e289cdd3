package ec2api

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// isolate keeps the SDK's default chain away from the machine's own AWS settings.
func isolate(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_ACCESS_KEY_ID":           "AKIDTEST",
		"AWS_SECRET_ACCESS_KEY":       "secret",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_PROFILE":                 "",
		"AWS_REGION":                  "",
	} {
		t.Setenv(k, v)
	}
}

func TestFactoryReusesClients(t *testing.T) {
	isolate(t)
	ctx := context.Background()
	f := NewFactory()
	a, err := f.Client(ctx, "us-east-1", Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		get      func() (EC2, error)
		wantSame bool
	}{
		{"same region", func() (EC2, error) { return f.Client(ctx, "us-east-1", Credentials{}) }, true},
		{"through ForCredentials", func() (EC2, error) { return f.ForCredentials(Credentials{})(ctx, "us-east-1") }, true},
		{"other region", func() (EC2, error) { return f.Client(ctx, "us-west-2", Credentials{}) }, false},
		{"other credentials file", func() (EC2, error) {
			return f.Client(ctx, "us-east-1", Credentials{File: credentialsFile(t, "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n")})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.get()
			if err != nil {
				t.Fatal(err)
			}
			if (a == b) != tt.wantSame {
				t.Errorf("same client: %v, want %v", a == b, tt.wantSame)
			}
		})
	}
}

func TestFactoryUnknownProfile(t *testing.T) {
	isolate(t)
	_, err := NewFactory().Client(context.Background(), "eu-west-1", Credentials{Profile: "nope"})
	if err == nil || !strings.Contains(err.Error(), "eu-west-1") {
		t.Errorf("error %v, want one naming the region", err)
	}
}

// credentialsFile writes a shared credentials file and returns its path.
func credentialsFile(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "creds")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A location's credentials file wins over keys in the process's environment, which the SDK
// would otherwise prefer.
func TestLocationCredentialsWinOverTheEnvironment(t *testing.T) {
	isolate(t) // AWS_ACCESS_KEY_ID=AKIDTEST in the environment
	file := credentialsFile(t, "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n"+
		"[other]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = s\n")
	tests := []struct {
		name  string
		creds Credentials
		want  string
	}{
		{"no location credentials: the environment", Credentials{}, "AKIDTEST"},
		{"the location's file", Credentials{File: file}, "AKIDFILE"},
		{"a profile of the location's file", Credentials{File: file, Profile: "other"}, "AKIDOTHER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewFactory().Client(context.Background(), "us-east-1", tt.creds)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.(*ec2.Client).Options().Credentials.Retrieve(context.Background())
			if err != nil || got.AccessKeyID != tt.want {
				t.Errorf("access key %q (%v), want %q", got.AccessKeyID, err, tt.want)
			}
		})
	}
}

// signsWith is the access key c signs with.
func signsWith(t *testing.T, c EC2) string {
	t.Helper()
	got, err := c.(*ec2.Client).Options().Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got.AccessKeyID
}

// keys is a credentials file's content with one key as its default profile.
func keys(id string) string {
	return "[default]\naws_access_key_id = " + id + "\naws_secret_access_key = s\n"
}

// Clients are keyed by what the credentials are: the same content in two files shares a client,
// a file rewritten with other keys (a rotation, or another location's Secret written to the
// same path) gets a client signing with the new keys at the next call, and content already
// seen loads no new config.
func TestClientsFollowTheCredentialsContent(t *testing.T) {
	isolate(t)
	ctx := context.Background()
	f := NewFactory()
	path := credentialsFile(t, keys("AKIDFIRST"))
	first, err := f.Client(ctx, "us-east-1", Credentials{File: path})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		content     string // written to path before the call
		creds       func() Credentials
		wantKey     string
		wantSame    bool // the first client
		wantClients int
	}{
		{"the same content in another file", "", func() Credentials {
			return Credentials{File: credentialsFile(t, keys("AKIDFIRST"))}
		}, "AKIDFIRST", true, 1},
		{"the file rewritten with other keys", keys("AKIDROTATED"), func() Credentials { return Credentials{File: path} },
			"AKIDROTATED", false, 2},
		{"the file rewritten with the first keys again", keys("AKIDFIRST"), func() Credentials { return Credentials{File: path} },
			"AKIDFIRST", true, 2},
		{"the default profile named", "", func() Credentials { return Credentials{File: path, Profile: "default"} },
			"AKIDFIRST", true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.content != "" {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := f.Client(ctx, "us-east-1", tt.creds())
			if err != nil {
				t.Fatal(err)
			}
			if got := signsWith(t, c); got != tt.wantKey {
				t.Errorf("signs with %s, want %s", got, tt.wantKey)
			}
			if (c == first) != tt.wantSame || len(f.clients) != tt.wantClients {
				t.Errorf("same client as the first: %v, want %v; %d clients built, want %d", c == first, tt.wantSame, len(f.clients), tt.wantClients)
			}
		})
	}
}

// Pinned credentials stand for the content read when pinned: another location's keys written
// to the same path afterwards are not used for them.
func TestPinnedCredentialsKeepTheirContent(t *testing.T) {
	isolate(t)
	ctx := context.Background()
	f := NewFactory()
	path := credentialsFile(t, keys("AKIDLOCATIONA"))
	pinnedA, err := f.Pin(Credentials{File: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(keys("AKIDLOCATIONB")), 0o600); err != nil {
		t.Fatal(err)
	}
	pinnedB, err := f.Pin(Credentials{File: path})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		creds Credentials
		want  string
	}{
		{"pinned before the rewrite", pinnedA, "AKIDLOCATIONA"},
		{"pinned after the rewrite", pinnedB, "AKIDLOCATIONB"},
		{"not pinned: the file now", Credentials{File: path}, "AKIDLOCATIONB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := f.Client(ctx, "us-east-1", tt.creds)
			if err != nil {
				t.Fatal(err)
			}
			if got := signsWith(t, c); got != tt.want {
				t.Errorf("signs with %s, want %s", got, tt.want)
			}
		})
	}
	if s := fmt.Sprintf("%v %+v %#v", pinnedA, pinnedA, pinnedA); strings.Contains(s, pinnedA.pinned) || !strings.Contains(s, path) {
		t.Errorf("printed as %s: want the path, not the digest", s)
	}
}

func TestMissingCredentialsFileIsACredentialsFailure(t *testing.T) {
	isolate(t)
	missing := filepath.Join(t.TempDir(), "gone")
	_, err := NewFactory().Client(context.Background(), "us-east-1", Credentials{File: missing})
	if !IsCredentialsFailure(err) || !strings.Contains(err.Error(), missing) {
		t.Errorf("error %v, want a credentials failure naming %s", err, missing)
	}
}

// Credentials not known yet reach nothing: a transient failure saying why, for EC2 and STS.
func TestUnknownCredentialsWait(t *testing.T) {
	isolate(t)
	creds := Unknown("waiting for the Kubernetes API: getting Secret velero/cloud: 503")
	f := NewFactory()
	_, clientErr := f.Client(context.Background(), "us-east-1", creds)
	_, accountErr := f.Account(context.Background(), "us-east-1", creds)
	for _, err := range []error{clientErr, accountErr} {
		if !IsTransient(err) || !IsCredentialsFailure(err) || !strings.Contains(err.Error(), "waiting for the Kubernetes API") {
			t.Errorf("error %v: want a transient credentials failure saying why", err)
		}
	}
	if len(f.clients) != 0 {
		t.Errorf("%d clients built for unknown credentials", len(f.clients))
	}
}
