package model

import (
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Target is where copies of a backup's sources go: the location's copy region (in the
// location's own account), or the vault account's region.
type Target struct {
	// account is the vault account's ID; "" for the location's copy region.
	Account string
	Region  string
}

// vault reports whether the target is a vault account.
func (tg Target) Vault() bool { return tg.Account != "" }

// String names the target for messages.
func (tg Target) String() string {
	if tg.Vault() {
		return "vault account " + tg.Account + " in " + tg.Region
	}
	return tg.Region
}

// CopyName is what the target's copies are called in messages.
func (tg Target) CopyName() string {
	if tg.Vault() {
		return "vault copy"
	}
	return "copy"
}

// CopiesName is what the target's copies are called in messages, in the plural.
func (tg Target) CopiesName() string {
	if tg.Vault() {
		return "vault copies"
	}
	return "copies"
}

// RequestedTag is the source's mark recording when its copy into the target was last asked for.
func (tg Target) RequestedTag() string {
	if tg.Vault() {
		return TagVaultRequestedAt
	}
	return TagCopyRequestedAt
}

// TargetsOf are the targets a source's tags ask copies for: its copy region, then its vault.
func TargetsOf(s *types.Snapshot) []Target {
	var out []Target
	if d := TagValue(s.Tags, TagCopyToRegion); d != "" {
		out = append(out, Target{Region: d})
	}
	if a, r := TagValue(s.Tags, TagVaultAccount), TagValue(s.Tags, TagVaultRegion); a != "" && r != "" {
		out = append(out, Target{Account: a, Region: r})
	}
	return out
}
