package security

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// randomSecret returns n random characters of the base64 alphabet, as AWS secrets look.
func randomSecret(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawStdEncoding.EncodeToString(b)[:n]
}

// TestNoCredentialInLogs runs a backup with copies, a restore in the copy region and the
// deletion with credentials from the environment (secret key and session token) and from a
// location's credentials file, at debug level, and looks for each secret, or a 12-character
// piece of it, in everything core and the plugin logged.
func TestNoCredentialInLogs(t *testing.T) {
	env := &rig.Env{Plugin: built, LogDir: t.TempDir(), SyncPeriod: syncPeriod, Debug: true}
	r, err := env.NewRig("secrets", rig.FastConfig(1), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	secrets := map[string]string{
		"AWS_SECRET_ACCESS_KEY":         randomSecret(t, 40),
		"AWS_SESSION_TOKEN":             randomSecret(t, 400),
		"credentials file's secret key": randomSecret(t, 40),
		"credentials file's token":      randomSecret(t, 300),
	}
	credentials := filepath.Join(t.TempDir(), "credentials")
	file := "[velero]\naws_access_key_id = AKIAFILEPROFILE\naws_secret_access_key = " + secrets["credentials file's secret key"] +
		"\naws_session_token = " + secrets["credentials file's token"] + "\n"
	if err := os.WriteFile(credentials, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	res := cycle{
		rig:   r,
		extra: map[string]string{model.ConfigCredentialsFile: credentials, model.ConfigProfile: "velero"},
		before: func() {
			t.Setenv("AWS_SECRET_ACCESS_KEY", secrets["AWS_SECRET_ACCESS_KEY"])
			t.Setenv("AWS_SESSION_TOKEN", secrets["AWS_SESSION_TOKEN"])
		},
	}.run(t.Context())
	if !res.OK() {
		t.Fatalf("the run failed: %s", res.Summary())
	}
	b, err := os.ReadFile(r.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if !strings.Contains(log, "logSourceSetBy=plugin") || !strings.Contains(log, "level=debug") {
		t.Fatalf("the log has no debug lines from the plugin; nothing was checked")
	}
	for name, s := range secrets {
		for _, piece := range []string{s, s[:12], s[len(s)-12:]} {
			if i := strings.Index(log, piece); i >= 0 {
				t.Errorf("%s (or a piece of it) is in the log: …%s…", name, log[max(0, i-80):min(len(log), i+len(piece)+20)])
				break
			}
		}
	}
	t.Logf("%d log lines checked", strings.Count(log, "\n"))
}
