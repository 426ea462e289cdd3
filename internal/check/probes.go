package check

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// EC2's answers a probe reads.
const (
	codeDryRunOperation = "DryRunOperation"
	codeAuthFailure     = "AuthFailure"
)

// regionTimeout bounds all the calls of one region's checks: a region that does not answer
// is reported, not waited for.
const regionTimeout = 30 * time.Second

// The README's IAM statements that grant each action.
const (
	statementSource  = "EBSSnapshotsCopiesRestores"
	statementSharing = "VaultSharing"
	statementVault   = "VaultCopies"
)

// place is one account's credentials in one region, as one of a location's checks uses them.
type place struct {
	// role names the account for people: "the location's account" or "the vault account".
	role   string
	region string
	c      ec2api.EC2
	// creds names where its credentials come from, for fixes.
	creds string
	// principal is who the credentials are, when STS said so.
	principal string
	// statement is the README's IAM statement holding the actions checked here.
	statement string
	// prefix starts the names of the checks here: "vault: " in the vault account.
	prefix string
	// skip, when set, is why the actions here are not checked (the region refused the
	// credentials, the credentials are another account's).
	skip string
	// shell is where the check runs: what must reach EC2 and STS.
	shell Shell
}

// actionCheck names the check of an IAM action in the place's region.
func (p *place) actionCheck(action string) string {
	return p.prefix + "ec2:" + action + " in " + p.region
}

// iamFix is the fix for a missing IAM action.
func (p *place) iamFix(action, statement string) string {
	who := p.role
	if p.principal != "" {
		who = p.principal
	}
	return fmt.Sprintf("allow %q to %s (README, IAM, statement %s)", "ec2:"+action, who, statement)
}

// dryRun judges EC2's answer to a mutating request sent with DryRun: DryRunOperation when it
// would have been permitted, UnauthorizedOperation when not.
func (p *place) dryRun(action, statement, detail string, err error) Finding {
	return p.verdict(action, statement, true, detail, err)
}

// unauthorizedAction is the action an UnauthorizedOperation message names ("… is not authorized
// to perform: ec2:CreateTags …"): a create that tags on create also needs ec2:CreateTags.
var unauthorizedAction = regexp.MustCompile(`perform: ec2:([A-Za-z]+)`)

// verdict judges EC2's answer to a probe of action.
func (p *place) verdict(action, statement string, dry bool, detail string, err error) Finding {
	check := p.actionCheck(action)
	how := "permitted"
	if dry {
		how = "permitted (dry run"
		if detail != "" {
			how += " " + detail
		}
		how += ")"
	} else if detail != "" {
		how += " (" + detail + ")"
	}
	code, msg := apiError(err)
	switch {
	case err == nil && !dry:
		return pass(check, how)
	case err == nil:
		return notChecked(check, "EC2 answered the dry run without DryRunOperation")
	case code == codeDryRunOperation && dry:
		return pass(check, how)
	case code == ec2api.CodeUnauthorized:
		missing := action
		if m := unauthorizedAction.FindStringSubmatch(msg); m != nil {
			missing = m[1]
		}
		if missing != action {
			return fail(check, fmt.Sprintf("refused: it also needs ec2:%s (%s)", missing, code), p.iamFix(missing, p.statement))
		}
		return fail(check, "refused ("+code+")", p.iamFix(action, statement))
	case code == codeAuthFailure:
		return fail(check, "EC2 refused the credentials: "+describe(err), "put valid access keys in "+p.creds)
	}
	return notChecked(check, "EC2 answered: "+describe(err))
}

// apiError returns the error code and message of an EC2 API error, or "".
func apiError(err error) (code, message string) {
	var ae smithy.APIError
	if err != nil && errors.As(err, &ae) {
		return ae.ErrorCode(), ae.ErrorMessage()
	}
	return "", ""
}

// describe names an error briefly: the service's code and message when it answered, the endpoint
// and the network's reason when it did not, else the error.
func describe(err error) string {
	if code, msg := apiError(err); code != "" {
		return code + ": " + msg
	}
	var none *ec2api.NoAnswerError
	if errors.As(err, &none) {
		return "no answer from " + none.Endpoint + " (" + networkReason(none.Err) + ")"
	}
	return err.Error()
}

// networkReason is the innermost reason a request got no answer: the network's operation
// ("dial tcp 10.0.0.1:443: connect: connection refused") when there is one, else the deepest error
// the SDK's retries and wrappers carry ("context deadline exceeded").
func networkReason(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	for next := errors.Unwrap(err); next != nil; next = errors.Unwrap(err) {
		err = next
	}
	return err.Error()
}

// reachable judges EC2's answer to the region probe: any answer of EC2 but AuthFailure means the
// region answers these credentials (an UnauthorizedOperation is an answer too).
func (p *place) reachable(err error, detail string) Finding {
	check := p.prefix + "region " + p.region
	code, _ := apiError(err)
	switch {
	case err == nil:
		return pass(check, "EC2 answers "+p.role+detail)
	case ec2api.IsCredentialsFailure(err):
		p.skip = "no credentials of " + p.role
		return fail(check, "no credentials of "+p.role+" to ask EC2 with: "+err.Error(), p.credentialsFix(err, p.region))
	case code == codeAuthFailure:
		p.skip = "EC2 in " + p.region + " refused the credentials"
		return fail(check, "EC2 refused the credentials of "+p.role+": "+describe(err),
			"put valid access keys in "+p.creds+", and enable "+p.region+" for the account if it is an opt-in region")
	case code != "" && !ec2api.IsThrottle(err):
		return pass(check, "EC2 answers "+p.role)
	}
	p.skip = "EC2 in " + p.region + " did not answer"
	return fail(check, "EC2 did not answer: "+describe(err),
		"let "+p.shell.reacher()+" reach EC2 in "+p.region+" (VPC endpoint com.amazonaws."+p.region+".ec2, network policy, proxy, AWS_ENDPOINT_URL_EC2), or correct the region's name")
}

// STS's refusals of an assumption, as the SDK's credential providers pass them on.
const (
	codeAccessDenied         = "AccessDenied"
	codeInvalidIdentityToken = "InvalidIdentityToken"
)

// credentialsFix is the fix for credentials of p that STS (asked in region) or the credential
// chain would not give: reach STS, let the role be assumed, or correct the keys.
func (p *place) credentialsFix(err error, region string) string {
	code, _ := apiError(err)
	var send *smithyhttp.RequestSendError
	switch {
	case errors.As(err, &send) || errors.Is(err, context.DeadlineExceeded) || ec2api.IsAmbiguous(err):
		return "let " + p.shell.reacher() + " reach STS in " + region + " (VPC endpoint com.amazonaws." + region + ".sts, network policy, proxy, AWS_ENDPOINT_URL_STS; README, A private cluster)"
	case code == codeAccessDenied:
		return "STS refused to assume the role of " + p.creds + ": its trust policy must name the principal assuming it (with the profile's external_id, and sts:TagSession from EKS Pod Identity), and that principal's policy allow sts:AssumeRole on it (README, Credentials and Vault account copies)"
	case code == codeInvalidIdentityToken:
		return "the role's trust policy must name the cluster's OIDC provider and the service account (README, Credentials, IRSA)"
	}
	return "put valid credentials in " + p.creds + " (README, Credentials)"
}

// skipped is the finding of an action not checked because of p.skip.
func (p *place) skipped(action string) Finding {
	return notChecked(p.actionCheck(action), p.skip)
}
