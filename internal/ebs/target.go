package ebs

import (
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// target is where copies of a backup's sources go: the location's copy region (in the
// location's own account), or the vault account's region.
type target struct {
	// account is the vault account's ID; "" for the location's copy region.
	account string
	region  string
}

// vault reports whether the target is a vault account.
func (tg target) vault() bool { return tg.account != "" }

// String names the target for messages.
func (tg target) String() string {
	if tg.vault() {
		return "vault account " + tg.account + " in " + tg.region
	}
	return tg.region
}

// copyName is what the target's copies are called in messages.
func (tg target) copyName() string {
	if tg.vault() {
		return "vault copy"
	}
	return "copy"
}

// copiesName is what the target's copies are called in messages, in the plural.
func (tg target) copiesName() string {
	if tg.vault() {
		return "vault copies"
	}
	return "copies"
}

// requestedTag is the source's mark recording when its copy into the target was last asked for.
func (tg target) requestedTag() string {
	if tg.vault() {
		return TagVaultRequestedAt
	}
	return TagCopyRequestedAt
}

// targetsOf are the targets a source's tags ask copies for: its copy region, then its vault.
func targetsOf(s *types.Snapshot) []target {
	var out []target
	if d := tagValue(s.Tags, TagCopyToRegion); d != "" {
		out = append(out, target{region: d})
	}
	if a, r := tagValue(s.Tags, TagVaultAccount), tagValue(s.Tags, TagVaultRegion); a != "" && r != "" {
		out = append(out, target{account: a, region: r})
	}
	return out
}
