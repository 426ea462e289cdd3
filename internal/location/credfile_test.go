package location

import (
	"context"
	"os"
	"testing"
)

// Two locations whose Secret names and keys join to the same "<secret>-<key>" (Velero's own
// naming) get files of their own, each with its own Secret's key: one location's credentials
// are never used for the other's.
func TestCredentialsFilesNeverCollide(t *testing.T) {
	const (
		keysA = "[default]\naws_access_key_id=AKIAACCOUNTA\naws_secret_access_key=a\n"
		keysB = "[default]\naws_access_key_id=AKIAACCOUNTB\naws_secret_access_key=b\n"
	)
	rd := newFake(t,
		vsl("account-a", "us-east-1", withCred("aws-account", "a")),
		vsl("account-b", "us-east-1", withCred("aws", "account-a")),
		secret("aws-account", map[string]string{"a": keysA}),
		secret("aws", map[string]string{"account-a": keysB}))
	f := newFixture(t, rd)
	ctx := context.Background()
	files := map[string]string{}
	for _, loc := range []string{"account-a", "account-b"} {
		c, err := f.r.ForBackup(ctx, backup("bk", loc), "us-east-1")
		if err != nil || len(c.Locations) != 1 || c.Locations[0].Name != loc {
			t.Fatalf("choice %+v (%v), want %s", c, err, loc)
		}
		files[loc] = c.Locations[0].Credentials.File
	}
	// Both files as the two locations' operations go on using them.
	for loc, want := range map[string]string{"account-a": keysA, "account-b": keysB} {
		if b, err := os.ReadFile(files[loc]); err != nil || string(b) != want {
			t.Errorf("%s's file %s holds %q (%v), want its own Secret's key", loc, files[loc], b, err)
		}
	}
	if a, b := credentialsFileName(ns, "aws-account", "a"), credentialsFileName(ns, "aws", "account-a"); a == b {
		t.Errorf("both Secret keys named %s", a)
	}
	if a, b := credentialsFileName("ns1", "s", "k"), credentialsFileName("ns2", "s", "k"); a == b {
		t.Errorf("the same Secret key of two namespaces named %s", a)
	}
}
