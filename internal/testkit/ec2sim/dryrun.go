package ec2sim

import "net/http"

// EC2's DryRun: a request with DryRun=true is checked as the real one would be (its required
// parameters, then IAM: the allow-lists, and ec2:CreateTags for a create that tags), and answered
// 412 DryRunOperation instead of being run, or 403 UnauthorizedOperation. It changes nothing.
// Throttling and injected server errors apply to it as to any request. As EC2 does for most
// actions, a dry run does not look the named resources up, nor KMS keys (which EC2 checks only
// when a copy or volume is made).

// requiredParams are the parameters each action refuses to run without, dry or not.
var requiredParams = map[string][]string{
	"CreateSnapshot":            {"VolumeId"},
	"CopySnapshot":              {"SourceRegion", "SourceSnapshotId"},
	"DeleteSnapshot":            {"SnapshotId"},
	"CreateVolume":              {"AvailabilityZone"},
	"DeleteVolume":              {"VolumeId"},
	"CreateTags":                {"ResourceId.1", "Tag.1.Key"},
	"DeleteTags":                {"ResourceId.1"},
	"ModifySnapshotAttribute":   {"SnapshotId"},
	"DescribeSnapshotAttribute": {"SnapshotId", "Attribute"},
	"LockSnapshot":              {"SnapshotId", "LockMode"},
	"UnlockSnapshot":            {"SnapshotId"},
}

// errDryRunOperation is EC2's answer to a dry run that would have been permitted.
var errDryRunOperation = &apiError{status: http.StatusPreconditionFailed, code: "DryRunOperation",
	message: "Request would have succeeded, but DryRun flag is set."}

// dryRun answers a permitted request with DryRun set.
func dryRun(q *request) *apiError {
	for _, p := range requiredParams[q.action] {
		if _, err := q.require(p); err != nil {
			return err
		}
	}
	return errDryRunOperation
}
