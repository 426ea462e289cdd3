package ec2sim

import (
	"encoding/xml"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

// webIdentityConfig loads the SDK's default config the way an IRSA pod does: AWS_ROLE_ARN and
// AWS_WEB_IDENTITY_TOKEN_FILE, with STS and EC2 pointed at the simulator.
func webIdentityConfig(t *testing.T, endpoint, roleARN string) aws.Config {
	t.Helper()
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ2ZWxlcm8ifQ.c2ln"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_ROLE_ARN":                roleARN,
		"AWS_WEB_IDENTITY_TOKEN_FILE": token,
		"AWS_ROLE_SESSION_NAME":       "velero-test",
		"AWS_ENDPOINT_URL_STS":        endpoint,
		"AWS_ENDPOINT_URL_EC2":        endpoint,
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "",
		"AWS_SECRET_ACCESS_KEY":       "",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestWebIdentity runs the SDK's web identity provider against the simulator's STS, then EC2
// with the session credentials.
func TestWebIdentity(t *testing.T) {
	tests := []struct {
		name     string
		role     string
		setFault func(f *fixture, code string)
		fault    string
		want     string // the error code in the EC2 call's chain; "" for success
		status   int
	}{
		{"role", roleB, nil, "", "", 0},
		{"unknown role", "arn:aws:iam::222222222222:role/nope", nil, "", "AccessDenied", http.StatusForbidden},
		{"identity provider down, SetFaults", roleB, func(f *fixture, code string) {
			f.srv.Sim.SetFaults(Faults{IdentityProviderError: code})
		}, "IDPCommunicationError", "IDPCommunicationError", http.StatusBadRequest},
		{"invalid token, POST /_sim/faults", roleB, func(f *fixture, code string) {
			var got Faults
			postJSON(t, f.srv.URL+"/_sim/faults", map[string]string{"identityProviderError": code}, &got)
		}, "InvalidIdentityToken", "InvalidIdentityToken", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, accountsConfig())
			f.clock.Set(time.Now()) // the SDK judges expiry on the real clock
			volB := f.srv.Sim.AddVolumesTo(acctB, "us-east-1", VolumeSpec{})[0]
			snapB, err := f.clientAs("us-east-1", keyB, "").CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(volB)})
			if err != nil {
				t.Fatal(err)
			}
			f.volume("us-east-1", VolumeSpec{}) // account A's: not visible to the role
			if tt.setFault != nil {
				tt.setFault(f, tt.fault)
			}
			c := ec2.NewFromConfig(webIdentityConfig(t, f.srv.URL, tt.role))
			out, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}})
			if errCode(err) != tt.want {
				t.Fatalf("DescribeSnapshots: %v, want %q", err, tt.want)
			}
			st := f.srv.Sim.Stats()
			stsCalls := st.Calls[stsStatsRegion][actionAssumeRoleWithWebIdentity]
			if err != nil {
				var op *smithy.OperationError
				if !errors.As(err, &op) || op.ServiceID != "EC2" || httpStatus(err) != tt.status {
					t.Errorf("error chain %v: want an EC2 OperationError around STS's HTTP %d", err, tt.status)
				}
				if stsCalls[tt.want] == 0 || st.Total("DescribeSnapshots", "") != 0 {
					t.Errorf("STS calls %v, EC2 DescribeSnapshots %d", stsCalls, st.Total("DescribeSnapshots", ""))
				}
				return
			}
			if len(out.Snapshots) != 1 || aws.ToString(out.Snapshots[0].SnapshotId) != aws.ToString(snapB.SnapshotId) ||
				aws.ToString(out.Snapshots[0].OwnerId) != acctB {
				t.Errorf("DescribeSnapshots as the role = %+v, want B's snapshot", out.Snapshots)
			}
			// Session credentials work in every region of the role's account.
			if _, err := ec2.NewFromConfig(webIdentityConfig(t, f.srv.URL, tt.role), func(o *ec2.Options) {
				o.Region = "ap-southeast-2"
			}).DescribeVolumes(ctx, &ec2.DescribeVolumesInput{}); err != nil {
				t.Errorf("DescribeVolumes in ap-southeast-2: %v", err)
			}
			if stsCalls["ok"] != 1 || st.Accounts[acctB].Calls[stsStatsRegion][actionAssumeRoleWithWebIdentity]["ok"] != 1 ||
				st.Accounts[acctB].Calls["us-east-1"]["DescribeSnapshots"]["ok"] != 1 {
				t.Errorf("stats: STS %v, account B %+v", stsCalls, st.Accounts[acctB].Calls)
			}
		})
	}
}

// TestSessionCredentials checks what STS issues and how EC2 treats the session afterwards.
func TestSessionCredentials(t *testing.T) {
	f := start(t, accountsConfig())
	f.clock.Set(time.Now())
	t0 := f.clock.Now()
	creds, err := webIdentityConfig(t, f.srv.URL, roleB).Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(creds.AccessKeyID, "ASIA") || creds.SecretAccessKey == "" || creds.SessionToken == "" ||
		!creds.CanExpire || creds.AccountID != acctB ||
		creds.Expires.Sub(t0) < time.Hour-time.Second || creds.Expires.Sub(t0) > time.Hour {
		t.Fatalf("credentials %+v, want a 1h session of account %s", creds, acctB)
	}
	session := AccessKey{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey}
	tests := []struct {
		name    string
		region  string
		key     AccessKey
		token   string
		advance time.Duration
		want    string
	}{
		{"session", "us-east-1", session, creds.SessionToken, 0, ""},
		{"session in another region", "eu-central-1", session, creds.SessionToken, 0, ""},
		{"no token", "us-east-1", session, "", 0, "AuthFailure"},
		{"wrong token", "us-east-1", session, creds.SessionToken + "x", 0, "AuthFailure"},
		{"wrong secret", "us-east-1", AccessKey{AccessKeyID: creds.AccessKeyID, SecretAccessKey: "x"}, creds.SessionToken, 0, "AuthFailure"},
		{"expired", "us-east-1", session, creds.SessionToken, time.Hour, "RequestExpired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Advance(tt.advance)
			if err := describeVolumes(f.clientAs(tt.region, tt.key, tt.token)); errCode(err) != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestAssumeRoleWithWebIdentityRequests sends STS requests by hand.
func TestAssumeRoleWithWebIdentityRequests(t *testing.T) {
	f := start(t, accountsConfig())
	valid := url.Values{
		"Action": {"AssumeRoleWithWebIdentity"}, "Version": {stsVersion}, "RoleArn": {roleB},
		"RoleSessionName": {"s1"}, "WebIdentityToken": {WebIdentityToken("system:serviceaccount:velero:velero")},
	}
	with := func(k, v string) url.Values {
		out := url.Values{}
		for key, vals := range valid {
			out[key] = vals
		}
		if v == "" {
			out.Del(k)
		} else {
			out.Set(k, v)
		}
		return out
	}
	tests := []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"valid", valid, http.StatusOK, ""},
		{"15 minutes", with("DurationSeconds", "900"), http.StatusOK, ""},
		{"duration too short", with("DurationSeconds", "899"), http.StatusBadRequest, "ValidationError"},
		{"no token", with("WebIdentityToken", ""), http.StatusBadRequest, "ValidationError"},
		{"no role", with("RoleArn", ""), http.StatusBadRequest, "ValidationError"},
		{"bad session name", with("RoleSessionName", "a b"), http.StatusBadRequest, "ValidationError"},
		{"not a JWT", with("WebIdentityToken", "opaque"), http.StatusBadRequest, "InvalidIdentityToken"},
		{"other action", with("Action", "AssumeRoleWithSAML"), http.StatusBadRequest, "InvalidAction"},
		{"unknown role", with("RoleArn", "arn:aws:iam::111111111111:role/velero"), http.StatusForbidden, "AccessDenied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.PostForm(f.srv.URL+"/", tt.form)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc struct {
				XMLName xml.Name
				Code    string `xml:"Error>Code"`
				Arn     string `xml:"AssumeRoleWithWebIdentityResult>AssumedRoleUser>Arn"`
				KeyID   string `xml:"AssumeRoleWithWebIdentityResult>Credentials>AccessKeyId"`
				Expires string `xml:"AssumeRoleWithWebIdentityResult>Credentials>Expiration"`
			}
			if err := xml.NewDecoder(resp.Body).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || doc.Code != tt.code {
				t.Fatalf("HTTP %d %q, want %d %q", resp.StatusCode, doc.Code, tt.status, tt.code)
			}
			if tt.code == "" && (doc.Arn != "arn:aws:sts::"+acctB+":assumed-role/velero/s1" || !strings.HasPrefix(doc.KeyID, "ASIA")) {
				t.Errorf("answer %+v", doc)
			}
			if tt.code != "" && doc.XMLName.Local != "ErrorResponse" {
				t.Errorf("error document <%s>, want <ErrorResponse>", doc.XMLName.Local)
			}
		})
	}
	if n := f.srv.Sim.Stats().Accounts[unknownAccount].Total(actionAssumeRoleWithWebIdentity, ""); n != 2 {
		t.Errorf("%d STS calls naming no configured role, want 2", n)
	}
}

// stsClientAs returns a single-attempt STS client that signs with the given key; an empty key
// sends unsigned requests.
func (f *fixture) stsClientAs(key AccessKey, token string) *sts.Client {
	var creds aws.CredentialsProvider = aws.AnonymousCredentials{}
	if key.AccessKeyID != "" {
		creds = credentials.NewStaticCredentialsProvider(key.AccessKeyID, key.SecretAccessKey, token)
	}
	return sts.NewFromConfig(aws.Config{
		Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(f.srv.URL),
		Retryer: func() aws.Retryer { return retry.AddWithMaxAttempts(retry.NewStandard(), 1) },
	})
}

// TestGetCallerIdentity: STS names the account of the key that signed the request, and refuses
// a key it does not know, a wrong secret, an expired session and an unsigned request as STS does.
func TestGetCallerIdentity(t *testing.T) {
	f := start(t, accountsConfig())
	f.clock.Set(time.Now())
	session, err := webIdentityConfig(t, f.srv.URL, roleB).Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sessionKey := AccessKey{AccessKeyID: session.AccessKeyID, SecretAccessKey: session.SecretAccessKey}
	tests := []struct {
		name        string
		key         AccessKey
		token       string
		advance     time.Duration
		wantAccount string
		wantARN     string
		wantCode    string
	}{
		{"account A's key", keyA, "", 0, acctA, "arn:aws:iam::" + acctA + ":user/" + keyA.AccessKeyID, ""},
		{"account B's key", keyB, "", 0, acctB, "arn:aws:iam::" + acctB + ":user/" + keyB.AccessKeyID, ""},
		{"a role session", sessionKey, session.SessionToken, 0, acctB, "arn:aws:sts::" + acctB + ":assumed-role/velero/velero-test", ""},
		{"an unknown key", AccessKey{AccessKeyID: "AKIANOBODY", SecretAccessKey: "x"}, "", 0, "", "", "InvalidClientTokenId"},
		{"a session without its token", sessionKey, "", 0, "", "", "InvalidClientTokenId"},
		{"a wrong secret", AccessKey{AccessKeyID: keyA.AccessKeyID, SecretAccessKey: "wrong"}, "", 0, "", "", "SignatureDoesNotMatch"},
		{"unsigned", AccessKey{}, "", 0, "", "", "MissingAuthenticationToken"},
		{"an expired session", sessionKey, session.SessionToken, 2 * time.Hour, "", "", "ExpiredToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Advance(tt.advance)
			out, err := f.stsClientAs(tt.key, tt.token).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			if errCode(err) != tt.wantCode {
				t.Fatalf("error %v, want %q", err, tt.wantCode)
			}
			if err != nil {
				if httpStatus(err) != http.StatusForbidden {
					t.Errorf("HTTP %d, want 403", httpStatus(err))
				}
				return
			}
			if aws.ToString(out.Account) != tt.wantAccount || aws.ToString(out.Arn) != tt.wantARN || aws.ToString(out.UserId) == "" {
				t.Errorf("identity %s %s %s, want %s %s", aws.ToString(out.Account), aws.ToString(out.Arn),
					aws.ToString(out.UserId), tt.wantAccount, tt.wantARN)
			}
		})
	}
	st := f.srv.Sim.Stats()
	if n := st.Accounts[acctA].Calls[stsStatsRegion][actionGetCallerIdentity]["ok"]; n != 1 {
		t.Errorf("account A: %d GetCallerIdentity counted ok, want 1", n)
	}
	if n := st.Accounts[unknownAccount].Calls[stsStatsRegion][actionGetCallerIdentity]["InvalidClientTokenId"]; n != 1 {
		t.Errorf("%d refusals of an unknown key counted, want 1", n)
	}
}

// TestGetCallerIdentityWithoutAccounts: without accounts every caller is the default account.
func TestGetCallerIdentityWithoutAccounts(t *testing.T) {
	f := start(t, Config{})
	out, err := f.stsClientAs(AccessKey{AccessKeyID: "AKID", SecretAccessKey: "x"}, "").GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil || aws.ToString(out.Account) != DefaultAccountID {
		t.Errorf("GetCallerIdentity = %v, %v; want account %s", out, err, DefaultAccountID)
	}
}
