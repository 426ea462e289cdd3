package ec2sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Test accounts: A and B everywhere, C in us-east-1 only.
const (
	acctA = "111111111111"
	acctB = "222222222222"
	acctC = "333333333333"
	roleB = "arn:aws:iam::222222222222:role/velero"
)

var (
	keyA = AccessKey{AccessKeyID: "AKIAAAAAAAAAAAAAAAAA", SecretAccessKey: "secret-a"}
	keyB = AccessKey{AccessKeyID: "AKIABBBBBBBBBBBBBBBB", SecretAccessKey: "secret-b"}
	keyC = AccessKey{AccessKeyID: "AKIACCCCCCCCCCCCCCCC", SecretAccessKey: "secret-c"}
)

func accountsConfig() Config {
	return Config{
		Accounts: []Account{
			{ID: acctA, AccessKeys: []AccessKey{keyA}},
			{ID: acctB, AccessKeys: []AccessKey{keyB}},
			{ID: acctC, AccessKeys: []AccessKey{keyC}, Regions: []string{"us-east-1"}},
		},
		Roles: []Role{{ARN: roleB, Trust: Trust{WebIdentitySubjects: []string{anySubject}}}},
	}
}

// TestNoAccountsAcceptsAnything: without accounts any key, any secret and unsigned requests
// work, and everything belongs to DefaultAccountID.
func TestNoAccountsAcceptsAnything(t *testing.T) {
	f := start(t, Config{})
	vol := f.volume("us-east-1", VolumeSpec{})
	snap := f.snapshot("us-east-1", vol, nil)
	tests := []struct {
		name  string
		key   AccessKey
		token string
	}{
		{"test key", AccessKey{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, ""},
		{"configured-looking key, any secret", AccessKey{AccessKeyID: keyA.AccessKeyID, SecretAccessKey: "wrong"}, ""},
		{"session token", AccessKey{AccessKeyID: "ASIAXXXX", SecretAccessKey: "x"}, "token"},
		{"unsigned", AccessKey{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := f.clientAs("us-east-1", tt.key, tt.token).DescribeSnapshots(ctx,
				&ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}})
			if err != nil || len(out.Snapshots) != 1 || aws.ToString(out.Snapshots[0].SnapshotId) != snap ||
				aws.ToString(out.Snapshots[0].OwnerId) != DefaultAccountID {
				t.Errorf("DescribeSnapshots = %+v, %v", out, err)
			}
		})
	}
	st := f.srv.Sim.Stats()
	if n := st.Accounts[DefaultAccountID].Total("DescribeSnapshots", "ok"); n != len(tests) {
		t.Errorf("default account counted %d DescribeSnapshots, want %d", n, len(tests))
	}
	if f.srv.Sim.DefaultAccount() != DefaultAccountID {
		t.Errorf("DefaultAccount() = %s", f.srv.Sim.DefaultAccount())
	}
}

func TestAuthentication(t *testing.T) {
	f := start(t, accountsConfig())
	tests := []struct {
		name        string
		region      string
		key         AccessKey
		token       string
		wantCode    string
		wantAccount string // the account Stats counts the call under
	}{
		{"known key", "us-east-1", keyA, "", "", acctA},
		{"second account", "eu-west-1", keyB, "", "", acctB},
		{"account enabled in the region", "us-east-1", keyC, "", "", acctC},
		{"unknown key", "us-east-1", AccessKey{AccessKeyID: "AKIAUNKNOWN000000000", SecretAccessKey: "secret-a"}, "", "AuthFailure", unknownAccount},
		{"right key, wrong secret", "us-east-1", AccessKey{AccessKeyID: keyA.AccessKeyID, SecretAccessKey: "secret-b"}, "", "AuthFailure", acctA},
		{"account not enabled in the region", "us-west-2", keyC, "", "AuthFailure", acctC},
		{"long-term key with a session token", "us-east-1", keyA, "token", "AuthFailure", acctA},
		{"unsigned", "us-east-1", AccessKey{}, "", "AuthFailure", unknownAccount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.srv.Sim.Stats().Accounts[tt.wantAccount].Total("DescribeVolumes", "")
			_, err := f.clientAs(tt.region, tt.key, tt.token).DescribeVolumes(ctx, &ec2.DescribeVolumesInput{})
			if errCode(err) != tt.wantCode {
				t.Fatalf("error %v, want %q", err, tt.wantCode)
			}
			if err != nil && (httpStatus(err) != http.StatusUnauthorized ||
				!strings.Contains(err.Error(), "AWS was not able to validate the provided access credentials")) {
				t.Errorf("HTTP %d %v, want 401 and EC2's message", httpStatus(err), err)
			}
			if n := f.srv.Sim.Stats().Accounts[tt.wantAccount].Total("DescribeVolumes", ""); n != before+1 {
				t.Errorf("account %s counted %d calls, want %d", tt.wantAccount, n, before+1)
			}
		})
	}
	st := f.srv.Sim.Stats()
	if n := st.Total("DescribeVolumes", "AuthFailure"); n != 5 {
		t.Errorf("AuthFailure counted %d times, want 5", n)
	}
	if n := st.Accounts[acctC].Calls["us-west-2"]["DescribeVolumes"]["AuthFailure"]; n != 1 {
		t.Errorf("account C's AuthFailure in us-west-2 counted %d times", n)
	}
	if _, ok := st.Volumes["us-west-2"]; ok {
		t.Errorf("a rejected request created state in us-west-2: %v", st.Volumes)
	}
}

// TestSignatureCoversTheRequest signs a request with the SDK's signer and changes it afterwards:
// the signature must cover the body, the date and the signed headers, and nothing else.
func TestSignatureCoversTheRequest(t *testing.T) {
	f := start(t, accountsConfig())
	const body = "Action=DescribeVolumes&Version=2016-11-15"
	tests := []struct {
		name    string
		service string
		change  func(h http.Header) string // edits the signed request's headers, returns the body to send
		want    int
	}{
		{"as signed", ec2Service, func(http.Header) string { return body }, http.StatusOK},
		{"unsigned header added", ec2Service, func(h http.Header) string {
			h.Set("X-Forwarded-For", "10.0.0.1")
			return body
		}, http.StatusOK},
		{"body changed", ec2Service, func(http.Header) string { return body + "&DryRun=true" }, http.StatusUnauthorized},
		{"date changed", ec2Service, func(h http.Header) string {
			h.Set(headerAmzDate, time.Now().Add(time.Hour).UTC().Format(sigV4DateFormat))
			return body
		}, http.StatusUnauthorized},
		{"signed header changed", ec2Service, func(h http.Header) string {
			h.Set("Content-Type", "text/plain")
			return body
		}, http.StatusUnauthorized},
		{"no date", ec2Service, func(h http.Header) string {
			h.Del(headerAmzDate)
			return body
		}, http.StatusUnauthorized},
		{"scoped to another service", "sts", func(http.Header) string { return body }, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
			sum := sha256.Sum256([]byte(body))
			creds := aws.Credentials{AccessKeyID: keyA.AccessKeyID, SecretAccessKey: keyA.SecretAccessKey}
			if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]),
				tt.service, "us-east-1", time.Now()); err != nil {
				t.Fatal(err)
			}
			sent := tt.change(req.Header)
			req.Body, req.ContentLength = http.NoBody, int64(len(sent))
			if sent != "" {
				req.Body = readCloser{bytes.NewReader([]byte(sent))}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("HTTP %s, want %d", resp.Status, tt.want)
			}
		})
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// TestOwnership: account A's resources do not exist for account B.
func TestOwnership(t *testing.T) {
	f := start(t, accountsConfig())
	a, b := f.clientAs("us-east-1", keyA, ""), f.clientAs("us-east-1", keyB, "")
	volA := f.srv.Sim.AddVolumesTo(acctA, "us-east-1", VolumeSpec{Encrypted: true})[0]
	volB := f.srv.Sim.AddVolumes("us-east-1", VolumeSpec{Account: acctB})[0]
	snapOf := func(c *ec2.Client, vol string) string {
		out, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
		if err != nil {
			t.Fatalf("CreateSnapshot(%s): %v", vol, err)
		}
		return aws.ToString(out.SnapshotId)
	}
	snapA, snapB := snapOf(a, volA), snapOf(b, volB)
	f.clock.Advance(time.Minute)

	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"CreateSnapshot of A's volume", func() error {
			_, err := b.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(volA)})
			return err
		}, "InvalidVolume.NotFound"},
		{"DescribeSnapshots by A's ID", func() error {
			_, err := b.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{snapA}})
			return err
		}, "InvalidSnapshot.NotFound"},
		{"DescribeVolumes by A's ID", func() error {
			_, err := b.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{volA}})
			return err
		}, "InvalidVolume.NotFound"},
		{"CreateTags on A's snapshot", func() error {
			_, err := b.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{snapA},
				Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
			return err
		}, "InvalidSnapshot.NotFound"},
		{"DeleteTags on A's snapshot", func() error {
			_, err := b.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{snapA}})
			return err
		}, "InvalidSnapshot.NotFound"},
		{"DeleteSnapshot of A's snapshot", func() error {
			_, err := b.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(snapA)})
			return err
		}, "InvalidSnapshot.NotFound"},
		{"CopySnapshot of A's snapshot, same region", func() error {
			_, err := b.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(snapA)})
			return err
		}, "InvalidSnapshot.NotFound"},
		{"CopySnapshot of A's snapshot, cross region", func() error {
			_, err := f.clientAs("us-west-2", keyB, "").CopySnapshot(ctx, &ec2.CopySnapshotInput{
				SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(snapA)})
			return err
		}, "InvalidSnapshot.NotFound"},
		{"CreateVolume from A's snapshot", func() error {
			_, err := b.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), SnapshotId: aws.String(snapA)})
			return err
		}, "InvalidSnapshot.NotFound"},
		{"DeleteVolume of A's volume", func() error {
			_, err := b.DeleteVolume(ctx, &ec2.DeleteVolumeInput{VolumeId: aws.String(volA)})
			return err
		}, "InvalidVolume.NotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); errCode(err) != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}

	lists := []struct {
		name   string
		client *ec2.Client
		in     ec2.DescribeSnapshotsInput
		want   string // the one snapshot listed
		owner  string
	}{
		{"A, owner self", a, ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}}, snapA, acctA},
		{"A, no owner", a, ec2.DescribeSnapshotsInput{}, snapA, acctA},
		{"B, owner self", b, ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}}, snapB, acctB},
		{"B, owner by ID", b, ec2.DescribeSnapshotsInput{OwnerIds: []string{acctB}}, snapB, acctB},
		{"B, owner-id filter", b, ec2.DescribeSnapshotsInput{Filters: []types.Filter{{Name: aws.String("owner-id"), Values: []string{acctB}}}}, snapB, acctB},
	}
	for _, tt := range lists {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.client.DescribeSnapshots(ctx, &tt.in)
			if err != nil || len(out.Snapshots) != 1 || aws.ToString(out.Snapshots[0].SnapshotId) != tt.want ||
				aws.ToString(out.Snapshots[0].OwnerId) != tt.owner {
				t.Errorf("DescribeSnapshots = %+v, %v; want only %s owned by %s", out, err, tt.want, tt.owner)
			}
		})
	}
	if out, err := b.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{OwnerIds: []string{acctA}}); err != nil || len(out.Snapshots) != 0 {
		t.Errorf("B sees A's snapshots by owner ID: %+v, %v", out, err)
	}
	if out, err := b.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{}); err != nil || len(out.Volumes) != 1 || aws.ToString(out.Volumes[0].VolumeId) != volB {
		t.Errorf("B's DescribeVolumes = %+v, %v", out, err)
	}

	// A cross-region copy stays in the caller's account.
	cp, err := f.clientAs("us-west-2", keyA, "").CopySnapshot(ctx, &ec2.CopySnapshotInput{
		SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(snapA)})
	if err != nil {
		t.Fatal(err)
	}
	sim := f.srv.Sim
	if got := sim.SnapshotsIn(acctA, "us-west-2"); len(got) != 1 || got[0].ID != aws.ToString(cp.SnapshotId) ||
		got[0].Account != acctA || got[0].KmsKeyID != "arn:aws:kms:us-west-2:"+acctA+":alias/aws/ebs" {
		t.Errorf("SnapshotsIn(A, us-west-2) = %+v", got)
	}
	if got := sim.SnapshotsIn(acctB, "us-west-2"); len(got) != 0 {
		t.Errorf("SnapshotsIn(B, us-west-2) = %+v", got)
	}
	// The account-less API acts on the first configured account.
	if got := sim.Snapshots("us-east-1"); len(got) != 1 || got[0].ID != snapA {
		t.Errorf("Snapshots(us-east-1) = %+v, want A's", got)
	}
	if got := sim.Volumes("us-east-1"); len(got) != 1 || got[0].ID != volA || got[0].Account != acctA {
		t.Errorf("Volumes(us-east-1) = %+v, want A's", got)
	}
	if got := sim.VolumesIn(acctB, "us-east-1"); len(got) != 1 || got[0].ID != volB {
		t.Errorf("VolumesIn(B, us-east-1) = %+v", got)
	}
	st := sim.Stats()
	if st.Snapshots["us-east-1"]["completed"] != 2 || st.Accounts[acctA].Snapshots["us-east-1"]["completed"] != 1 ||
		st.Accounts[acctB].Volumes["us-east-1"]["available"] != 1 || st.Accounts[acctA].Copies["us-west-2"]["pending"] != 1 {
		t.Errorf("stats: snapshots %v, A %+v, B %+v", st.Snapshots, st.Accounts[acctA], st.Accounts[acctB])
	}
}

// TestLimitsPerAccount: the copy limit and the token buckets count per account and region.
func TestLimitsPerAccount(t *testing.T) {
	cfg := accountsConfig()
	cfg.CopyLimit = 1
	f := start(t, cfg)
	cfg.ThrottleScale = 0.02 // unfiltered DescribeVolumes: a bucket of 1
	throttled := start(t, cfg)
	src := map[string]string{}
	for _, k := range []struct {
		account string
		key     AccessKey
	}{{acctA, keyA}, {acctB, keyB}} {
		vol := f.srv.Sim.AddVolumesTo(k.account, "us-east-1", VolumeSpec{})[0]
		out, err := f.clientAs("us-east-1", k.key, "").CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
		if err != nil {
			t.Fatal(err)
		}
		src[k.account] = aws.ToString(out.SnapshotId)
	}
	f.clock.Advance(time.Minute)
	tests := []struct {
		name string
		sim  *fixture
		key  AccessKey
		call func(c *ec2.Client) error
		want string
	}{
		{"A's first copy", f, keyA, copyOf(src[acctA]), ""},
		{"A's second copy, over the limit", f, keyA, copyOf(src[acctA]), "ResourceLimitExceeded"},
		{"B's first copy", f, keyB, copyOf(src[acctB]), ""},
		{"B's second copy, over the limit", f, keyB, copyOf(src[acctB]), "ResourceLimitExceeded"},
		{"A's first unfiltered DescribeVolumes", throttled, keyA, describeVolumes, ""},
		{"A's second, throttled", throttled, keyA, describeVolumes, "RequestLimitExceeded"},
		{"B's first, its own bucket", throttled, keyB, describeVolumes, ""},
		{"A in another region, its own bucket", throttled, keyA, func(c *ec2.Client) error {
			return describeVolumes(throttled.clientAs("eu-west-1", keyA, ""))
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(tt.sim.clientAs("us-west-2", tt.key, "")); errCode(err) != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	st := f.srv.Sim.Stats()
	if st.PeakCopiesInFlight["us-west-2"] != 1 || st.Copies["us-west-2"]["pending"] != 2 ||
		st.Accounts[acctB].PeakCopiesInFlight["us-west-2"] != 1 {
		t.Errorf("stats: peak %v, copies %v", st.PeakCopiesInFlight, st.Copies)
	}
}

func copyOf(snap string) func(c *ec2.Client) error {
	return func(c *ec2.Client) error {
		_, err := c.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(snap)})
		return err
	}
}

func describeVolumes(c *ec2.Client) error {
	_, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{})
	return err
}

func TestConfigValidate(t *testing.T) {
	ok := accountsConfig()
	tests := []struct {
		name string
		edit func(c *Config)
		want string // part of the error; "" for none
	}{
		{"valid", func(*Config) {}, ""},
		{"no accounts", func(c *Config) { *c = Config{} }, ""},
		{"roles without accounts", func(c *Config) { *c = Config{Roles: []Role{{ARN: roleB}}} }, ""},
		{"short account ID", func(c *Config) { c.Accounts[0].ID = "1234" }, "12 digits"},
		{"duplicate account", func(c *Config) { c.Accounts[1].ID = acctA }, "twice"},
		{"duplicate key", func(c *Config) { c.Accounts[1].AccessKeys = []AccessKey{keyA} }, "twice"},
		{"key without secret", func(c *Config) { c.Accounts[0].AccessKeys[0].SecretAccessKey = "" }, "secretAccessKey"},
		{"empty region", func(c *Config) { c.Accounts[2].Regions = []string{""} }, "empty region"},
		{"role ARN malformed", func(c *Config) { c.Roles[0].ARN = "arn:aws:iam::role/x" }, "not an IAM role ARN"},
		{"role account differs from its ARN", func(c *Config) { c.Roles[0].Account = acctA }, "not the ARN's account"},
		{"role of an unconfigured account", func(c *Config) { c.Roles[0].ARN = "arn:aws:iam::444444444444:role/x" }, "not configured"},
		{"duplicate role", func(c *Config) { c.Roles = append(c.Roles, c.Roles[0]) }, "twice"},
		{"trusted principal neither an account nor an IAM ARN", func(c *Config) { c.Roles[0].Trust.Principals = []string{"velero"} }, "trusted principal"},
		{"pod identity association of an unconfigured role", func(c *Config) {
			c.PodIdentityAssociations = []PodIdentityAssociation{{Namespace: "velero", ServiceAccount: "velero", RoleARN: "arn:aws:iam::111111111111:role/none"}}
		}, "configured role"},
		{"volume of an unconfigured account", func(c *Config) {
			c.Regions = map[string]RegionConfig{"us-east-1": {Volumes: []VolumeSpec{{Account: "444444444444"}}}}
		}, "not configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			cfg.Accounts = append([]Account(nil), ok.Accounts...)
			for i := range cfg.Accounts {
				cfg.Accounts[i].AccessKeys = append([]AccessKey(nil), ok.Accounts[i].AccessKeys...)
			}
			cfg.Roles = append([]Role(nil), ok.Roles...)
			tt.edit(&cfg)
			err := cfg.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
			srv, lerr := Start(cfg)
			if lerr == nil {
				_ = srv.Close()
			}
			if (lerr != nil) != (err != nil) {
				t.Errorf("Start() = %v, Validate() = %v", lerr, err)
			}
		})
	}
}

func TestLoadConfigAccounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.json")
	const cfgJSON = `{
	  "accounts": [
	    {"id": "111111111111", "accessKeys": [{"accessKeyId": "AKIAAAAAAAAAAAAAAAAA", "secretAccessKey": "secret-a"}]},
	    {"id": "222222222222", "accessKeys": [{"accessKeyId": "AKIABBBBBBBBBBBBBBBB", "secretAccessKey": "secret-b"}], "regions": ["us-east-1"]}
	  ],
	  "roles": [{"arn": "arn:aws:iam::222222222222:role/velero", "account": "222222222222",
	             "trust": {"webIdentitySubjects": ["system:serviceaccount:velero:velero"], "principals": ["111111111111"],
	                       "externalId": "x", "tagSession": true, "podIdentity": true},
	             "allowedActions": ["DescribeSnapshots", "sts:AssumeRole"]}],
	  "podIdentityAssociations": [{"namespace": "velero", "serviceAccount": "velero", "roleArn": "arn:aws:iam::222222222222:role/velero"}],
	  "sessionDuration": "15m",
	  "regions": {"us-east-1": {"volumes": [{"id": "vol-0bbbbbbbbbbbbbbb1", "account": "222222222222"}]}},
	  "faults": {"identityProviderError": "IDPCommunicationError"}
	}`
	if err := os.WriteFile(path, []byte(cfgJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Accounts) != 2 || cfg.Accounts[1].AccessKeys[0] != keyB || cfg.Accounts[1].Regions[0] != "us-east-1" ||
		cfg.Roles[0].ARN != roleB || cfg.SessionDuration.Duration != 15*time.Minute ||
		cfg.Roles[0].Trust.WebIdentitySubjects[0] != "system:serviceaccount:velero:velero" || cfg.Roles[0].Trust.Principals[0] != acctA ||
		cfg.Roles[0].Trust.ExternalID != "x" || !cfg.Roles[0].Trust.TagSession || !cfg.Roles[0].Trust.PodIdentity ||
		cfg.Roles[0].AllowedActions[1] != "sts:AssumeRole" || cfg.PodIdentityAssociations[0].RoleARN != roleB ||
		cfg.Faults.IdentityProviderError != "IDPCommunicationError" || cfg.Regions["us-east-1"].Volumes[0].Account != acctB {
		t.Fatalf("LoadConfig = %+v", cfg)
	}
	f := start(t, cfg)
	if got := f.srv.Sim.VolumesIn(acctB, "us-east-1"); len(got) != 1 || got[0].ID != "vol-0bbbbbbbbbbbbbbb1" {
		t.Errorf("VolumesIn(B) = %+v", got)
	}
	if got := f.srv.Sim.Volumes("us-east-1"); len(got) != 0 {
		t.Errorf("Volumes() of the default account A = %+v", got)
	}
	bad := strings.Replace(cfgJSON, `"222222222222", "accessKeys"`, `"111111111111", "accessKeys"`, 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("LoadConfig with a duplicate account: %v", err)
	}
}

func TestAdminAccounts(t *testing.T) {
	f := start(t, accountsConfig())
	var ids []string
	postJSON(t, f.srv.URL+"/_sim/volumes", map[string]any{
		"region": "us-east-1", "account": acctB, "volumes": []VolumeSpec{{SizeGiB: 3}},
	}, &ids)
	var idsA []string
	postJSON(t, f.srv.URL+"/_sim/volumes?account="+acctA, map[string]any{"volumes": []VolumeSpec{{}}}, &idsA)
	tests := []struct {
		name, query string
		want        []string
	}{
		{"B's volumes", "?region=us-east-1&account=" + acctB, ids},
		{"default account's volumes", "?region=us-east-1", idsA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vols []Volume
			getJSON(t, f.srv.URL+"/_sim/volumes"+tt.query, &vols)
			if len(vols) != len(tt.want) || vols[0].ID != tt.want[0] {
				t.Errorf("GET /_sim/volumes%s = %+v, want %v", tt.query, vols, tt.want)
			}
		})
	}
	snap, err := f.clientAs("us-east-1", keyB, "").CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(ids[0])})
	if err != nil {
		t.Fatal(err)
	}
	var snaps []Snapshot
	getJSON(t, f.srv.URL+"/_sim/snapshots?region=us-east-1&account="+acctB, &snaps)
	if len(snaps) != 1 || snaps[0].ID != aws.ToString(snap.SnapshotId) || snaps[0].Account != acctB {
		t.Errorf("GET /_sim/snapshots for B = %+v", snaps)
	}
	for _, u := range []string{"/_sim/snapshots?account=444444444444", "/_sim/volumes?account=" + DefaultAccountID} {
		resp, err := http.Get(f.srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: %s, want 400 for an unconfigured account", u, resp.Status)
		}
	}
}
