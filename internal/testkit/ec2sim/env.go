package ec2sim

import "path/filepath"

// Env is what a test's environment must allow: setting a variable for the test's life, and a
// private directory (a *testing.T).
type Env interface {
	Setenv(key, value string)
	TempDir() string
}

// OnlyThis points the AWS SDK's default chain at this simulator alone, for the test's life:
// its endpoints for every service, no credentials, config file, profile, region or instance
// metadata of the machine's own.
func (s *Server) OnlyThis(env Env) {
	dir := env.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_ACCESS_KEY_ID":           "",
		"AWS_SECRET_ACCESS_KEY":       "",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_PROFILE":                 "",
		"AWS_REGION":                  "",
		"AWS_ENDPOINT_URL":            s.URL,
		"AWS_ENDPOINT_URL_STS":        s.URL,
	} {
		env.Setenv(k, v)
	}
}
