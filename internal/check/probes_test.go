package check

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api/ec2apitest"
)

func unauthorized(action string) error {
	return &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation. User: arn:aws:iam::111111111111:user/velero is not authorized to perform: ec2:" + action + " on resource: *"}
}

func TestAnActionsVerdict(t *testing.T) {
	tests := []struct {
		name      string
		dry       bool
		err       error
		want      Status
		detail    string
		fixNaming string
		fixOfSid  string
	}{
		{"a dry run EC2 would permit", true, ec2apitest.HTTPError(http.StatusPreconditionFailed, "DryRunOperation"), Pass, "permitted (dry run on vol-1)", "", ""},
		{"a read that worked", false, nil, Pass, "permitted (on vol-1)", "", ""},
		{"a dry run IAM refuses", true, unauthorized("CreateSnapshot"), Fail, "refused (UnauthorizedOperation)", `"ec2:CreateSnapshot"`, "EBSSnapshotsCopiesRestores"},
		{"a read IAM refuses", false, unauthorized("CreateSnapshot"), Fail, "refused (UnauthorizedOperation)", `"ec2:CreateSnapshot"`, "EBSSnapshotsCopiesRestores"},
		{"a tagging create without ec2:CreateTags", true, unauthorized("CreateTags"), Fail, "it also needs ec2:CreateTags", `"ec2:CreateTags"`, "EBSSnapshotsCopiesRestores"},
		{"credentials EC2 refuses", true, ec2apitest.HTTPError(http.StatusUnauthorized, "AuthFailure"), Fail, "EC2 refused the credentials", "valid access keys in Secret velero/cloud", ""},
		{"another answer of EC2", true, ec2apitest.APIError("InvalidSnapshot.NotFound"), NotChecked, "EC2 answered: InvalidSnapshot.NotFound", "", ""},
		{"a dry run answered as if run", true, nil, NotChecked, "without DryRunOperation", "", ""},
		{"no answer", true, ec2apitest.NoAnswer(), NotChecked, "EC2 answered", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &place{role: "the location's account", creds: "Secret velero/cloud key cloud", region: "us-east-1", principal: "arn:aws:iam::111111111111:user/velero", statement: statementSource}
			f := p.verdict("CreateSnapshot", statementSource, tt.dry, "on vol-1", tt.err)
			if f.Check != "ec2:CreateSnapshot in us-east-1" || f.Status != tt.want || !strings.Contains(f.Detail, tt.detail) ||
				!strings.Contains(f.Fix, tt.fixNaming) || !strings.Contains(f.Fix, tt.fixOfSid) || (tt.want == Fail) != (f.Fix != "") {
				t.Errorf("%+v, want %s with %q, fix naming %q %q", f, tt.want, tt.detail, tt.fixNaming, tt.fixOfSid)
			}
			if tt.want == Fail && tt.fixOfSid != "" && !strings.Contains(f.Fix, "arn:aws:iam::111111111111:user/velero") {
				t.Errorf("fix %q does not name the principal", f.Fix)
			}
		})
	}
}

func TestARegionAnswers(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		want    Status
		skipped bool
		detail  string
	}{
		{"it answers", nil, Pass, false, "EC2 answers"},
		{"it answers but IAM refuses the call", unauthorized("DescribeAvailabilityZones"), Pass, false, "EC2 answers"},
		{"it refuses the credentials", ec2apitest.HTTPError(http.StatusUnauthorized, "AuthFailure"), Fail, true, "AuthFailure"},
		{"it does not answer", ec2apitest.NoAnswer(), Fail, true, "did not answer"},
		{"it throttles", ec2apitest.HTTPError(http.StatusServiceUnavailable, "RequestLimitExceeded"), Fail, true, "did not answer"},
		{"no credentials", &ec2api.CredentialsError{Err: ec2apitest.NotSent()}, Fail, true, "no credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &place{role: "the vault account", region: "us-west-2", prefix: vaultPrefix}
			f := p.reachable(tt.err, "")
			if f.Check != "vault: region us-west-2" || f.Status != tt.want || (p.skip != "") != tt.skipped || !strings.Contains(f.Detail, tt.detail) {
				t.Errorf("%+v, skip %q; want %s with %q, skipped %v", f, p.skip, tt.want, tt.detail, tt.skipped)
			}
			if tt.skipped {
				if s := p.skipped("CopySnapshot"); s.Status != NotChecked || s.Check != "vault: ec2:CopySnapshot in us-west-2" {
					t.Errorf("skipped action %+v", s)
				}
			}
		})
	}
}
