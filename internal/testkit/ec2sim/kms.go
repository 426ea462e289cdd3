package ec2sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// KMSKey is a customer managed KMS key: its ARN, whose account owns it, and the other accounts
// whose callers may use it (its key policy's grants, as far as EBS is concerned).
type KMSKey struct {
	// ARN is the key's ARN, such as "arn:aws:kms:us-east-1:111111111111:key/UUID".
	ARN string `json:"arn"`
	// GrantAccounts are the accounts besides the owner whose callers may use the key, for
	// example to copy a snapshot encrypted under it.
	GrantAccounts []string `json:"grantAccounts,omitempty"`
}

// defaultKeySuffix ends the ARN of an account's AWS managed EBS key (see defaultKmsKey).
const defaultKeySuffix = ":alias/aws/ebs"

// defaultKmsKey is the ARN of the AWS managed EBS key of account in regionName.
func defaultKmsKey(account, regionName string) string {
	return "arn:aws:kms:" + regionName + ":" + account + defaultKeySuffix
}

// isDefaultKmsKey reports whether keyID is an account's AWS managed EBS key.
func isDefaultKmsKey(keyID string) bool { return strings.HasSuffix(keyID, defaultKeySuffix) }

// kmsARN is a parsed "arn:PARTITION:kms:REGION:ACCOUNT:RESOURCE" (RESOURCE is key/ID or alias/NAME).
type kmsARN struct{ region, account, resource string }

// parseKMSARN parses a KMS key or alias ARN; ok is false for anything else, such as a bare key
// ID or alias name.
func parseKMSARN(s string) (a kmsARN, ok bool) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "kms" || parts[3] == "" ||
		!validAccountID(parts[4]) {
		return a, false
	}
	a = kmsARN{region: parts[3], account: parts[4], resource: parts[5]}
	name, isKey := strings.CutPrefix(a.resource, "key/")
	_, isAlias := strings.CutPrefix(a.resource, "alias/")
	return a, isKey && name != "" || isAlias
}

// validate checks that k is a key (not alias) ARN and its grant accounts are account IDs.
func (k KMSKey) validate() error {
	a, ok := parseKMSARN(k.ARN)
	if !ok || !strings.HasPrefix(a.resource, "key/") {
		return fmt.Errorf("kms key %q: not a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID)", k.ARN)
	}
	for _, g := range k.GrantAccounts {
		if !validAccountID(g) {
			return fmt.Errorf("kms key %s: grant account %q: the ID must be %d digits", k.ARN, g, accountIDLength)
		}
	}
	return nil
}

// keyring holds the configured customer keys by ARN.
type keyring map[string]KMSKey

// newKeyring indexes keys by ARN; of duplicates the first wins.
func newKeyring(keys []KMSKey) keyring {
	kr := keyring{}
	for _, k := range keys {
		if _, dup := kr[k.ARN]; !dup {
			kr[k.ARN] = k
		}
	}
	return kr
}

// problem says why caller cannot use keyID in region, or returns "". A key ARN belongs to the
// account in it; a bare key ID or alias to owner. A configured key may be used by its owner
// and its grant accounts; any other key (including an account's AWS managed key) by its owner
// only. A key ARN is usable in its own region only.
func (kr keyring) problem(keyID, owner, region, caller string) string {
	if a, ok := parseKMSARN(keyID); ok {
		if a.region != region {
			return fmt.Sprintf("The KMS key %s is not in region %s.", keyID, region)
		}
		owner = a.account
	}
	if owner == caller || slices.Contains(kr[keyID].GrantAccounts, caller) {
		return ""
	}
	return fmt.Sprintf("Given key ID is not accessible: account %s may not use the KMS key %s.", caller, keyID)
}

// validateKMSKeys checks the configured keys: well-formed, unique and, when accounts are
// configured (known reports them), owned by and granted to configured accounts only.
func (c Config) validateKMSKeys(known func(string) bool) error {
	seen := map[string]bool{}
	for _, k := range c.KMSKeys {
		if err := k.validate(); err != nil {
			return err
		}
		if seen[k.ARN] {
			return fmt.Errorf("kms key %s is configured twice", k.ARN)
		}
		seen[k.ARN] = true
		if len(c.Accounts) == 0 {
			continue
		}
		a, _ := parseKMSARN(k.ARN)
		for _, acct := range append([]string{a.account}, k.GrantAccounts...) {
			if !known(acct) {
				return fmt.Errorf("kms key %s: account %s is not configured", k.ARN, acct)
			}
		}
	}
	return nil
}

// KMSKeys returns the customer keys the simulator knows, sorted by ARN.
func (s *Simulator) KMSKeys() []KMSKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]KMSKey, 0, len(s.keys))
	for _, arn := range slices.Sorted(maps.Keys(s.keys)) {
		k := s.keys[arn]
		k.GrantAccounts = slices.Clone(k.GrantAccounts)
		out = append(out, k)
	}
	return out
}

// AddKMSKeys adds customer keys, or replaces those with the same ARN, from now on. It checks
// each key as Config.Validate does, but not that its accounts are configured.
func (s *Simulator) AddKMSKeys(keys ...KMSKey) error {
	for _, k := range keys {
		if err := k.validate(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		k.GrantAccounts = slices.Clone(k.GrantAccounts)
		s.keys[k.ARN] = k
	}
	return nil
}
