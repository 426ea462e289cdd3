package check

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// defaultKeyAlias names an account's AWS managed EBS key, whose snapshots EC2 cannot share.
const defaultKeyAlias = "alias/aws/ebs"

// kmsARN is a parsed "arn:PARTITION:kms:REGION:ACCOUNT:key/ID" or ".../alias/NAME".
type kmsARN struct{ region, account, resource string }

// parseKMSARN parses a KMS key or alias ARN; ok is false for a bare key ID or alias name.
func parseKMSARN(s string) (kmsARN, bool) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "kms" || parts[3] == "" || parts[4] == "" {
		return kmsARN{}, false
	}
	return kmsARN{region: parts[3], account: parts[4], resource: parts[5]}, true
}

// keyFindings judges a copy key (config key name) that encrypts copies in region: a key ARN
// names its region, and for the vault its account (wantAccount, when set). Whether the key
// exists and its policy lets the copier use it EC2 checks only when a copy runs, never in a dry
// run, so that is reported as not checked, with how to check it.
func keyFindings(name, key, region, wantAccount, role string) []Finding {
	check := name + " " + key
	describe := fmt.Sprintf("EC2 checks KMS keys only when a copy runs, which a dry run does not: `aws kms describe-key --key-id %s --region %s` with the credentials of %s shows whether it exists and is enabled", key, region, role)
	arn, ok := parseKMSARN(key)
	switch {
	case !ok:
		return []Finding{notChecked(check, "a key ID or alias, looked up in "+region+"; "+describe)}
	case arn.region != region:
		return []Finding{fail(check, fmt.Sprintf("the key ARN names region %s: there is no such key in %s, where the copies are made", arn.region, region),
			fmt.Sprintf("set %s to a key of %s (KMS keys are regional; a multi-Region key's replica in %s has an ARN of its own)", name, region, region))}
	case wantAccount != "" && arn.account != wantAccount:
		return []Finding{fail(check, fmt.Sprintf("the key belongs to account %s, not the vault account %s: the vault copies would depend on a key the vault does not own", arn.account, wantAccount),
			fmt.Sprintf("set %s to a key of account %s in %s", name, wantAccount, region))}
	}
	return []Finding{
		pass(check, "a key ARN of "+region),
		notChecked(check+" usable", describe),
	}
}

// sourceKeys judges the keys of the volumes a location with a vault backs up: EC2 cannot share
// a snapshot under the account's AWS managed aws/ebs key with the vault account.
func sourceKeys(lc *locationCheck) Finding {
	const check = "source volumes' keys"
	if !lc.sourcesKnown {
		return notChecked(check, "the volumes could not be described")
	}
	var managed, customer, keys []string
	plain := 0
	seen := map[string]bool{}
	for _, v := range lc.sources {
		key := aws.ToString(v.KmsKeyId)
		switch {
		case !aws.ToBool(v.Encrypted):
			plain++
		case key == "" || strings.HasSuffix(key, ":"+defaultKeyAlias) || key == defaultKeyAlias:
			managed = append(managed, aws.ToString(v.VolumeId))
		default:
			customer = append(customer, aws.ToString(v.VolumeId))
			if !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
		}
	}
	vault := lc.cfg.Vault.AccountID
	switch {
	case len(managed) > 0:
		return fail(check, fmt.Sprintf("%s encrypted under %s, which EC2 cannot share with the vault account: their vault copies would fail", shortList(managed), defaultKeyAlias),
			fmt.Sprintf("encrypt them with a customer managed key whose key policy lets account %s use it (README, Vault account copies, Encryption)", vault))
	case len(customer) > 0:
		return notChecked(check, fmt.Sprintf("%s under %s: EC2 names keys by ID, so whether one is the AWS managed aws/ebs key, and whether its policy lets account %s use it, shows only in KMS (`aws kms describe-key`, `aws kms get-key-policy`)",
			plural(len(customer), "volume"), shortList(keys), vault))
	}
	return pass(check, fmt.Sprintf("none under %s (%s, unencrypted)", defaultKeyAlias, plural(plain, "volume")))
}
