package ec2sim

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// TestClosedAccount: a closed account's keys and sessions are refused by EC2, STS and S3 as
// unknown keys, its roles cannot be assumed, other accounts go on, and opening it again (the
// admin endpoint) restores everything.
func TestClosedAccount(t *testing.T) {
	f := start(t, accountsConfig())
	if err := f.srv.Sim.CreateBucket(acctB, "records-b", "us-east-1", nil); err != nil {
		t.Fatal(err)
	}
	sessionKey, sessionToken := f.webIdentitySession(roleB, "system:serviceaccount:velero:velero")
	calls := []struct {
		name string
		call func() error
		// closed is the error code while B is closed; "" when the call still works.
		closed string
	}{
		{"EC2 with B's key", func() error { return describeVolumes(f.clientAs("us-east-1", keyB, "")) }, "AuthFailure"},
		{"EC2 with a session of B's role issued before", func() error {
			return describeVolumes(f.clientAs("us-east-1", sessionKey, sessionToken))
		}, "AuthFailure"},
		{"EC2 with A's key", func() error { return describeVolumes(f.clientAs("us-east-1", keyA, "")) }, ""},
		{"STS GetCallerIdentity with B's key", func() error {
			_, err := f.stsClientAs(keyB, "").GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			return err
		}, "InvalidClientTokenId"},
		{"STS AssumeRoleWithWebIdentity into B's role", func() error {
			_, err := f.stsClientAs(AccessKey{}, "").AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{
				RoleArn: aws.String(roleB), RoleSessionName: aws.String("velero"), WebIdentityToken: aws.String(WebIdentityToken("system:serviceaccount:velero:velero")),
			})
			return err
		}, "AccessDenied"},
		{"S3 ListObjectsV2 with B's key", func() error {
			_, err := f.s3As(keyB, "", "us-east-1").ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("records-b")})
			return err
		}, "InvalidAccessKeyId"},
	}
	for _, step := range []struct {
		name   string
		closed bool
	}{{"open", false}, {"closed", true}, {"opened again", false}} {
		var got map[string]any
		postJSON(t, f.srv.URL+"/_sim/accounts", map[string]any{"account": acctB, "closed": step.closed}, &got)
		for _, c := range calls {
			want := ""
			if step.closed {
				want = c.closed
			}
			err := c.call()
			if code := errCode(err); code != want {
				t.Errorf("%s, B %s: %v (code %q), want %q", c.name, step.name, err, code, want)
			}
		}
	}
	resp, err := http.Post(f.srv.URL+"/_sim/accounts", "application/json", strings.NewReader(`{"account": "444444444444", "closed": true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("closing an account not configured: %s, want 400", resp.Status)
	}
}
