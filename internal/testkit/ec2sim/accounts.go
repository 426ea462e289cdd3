package ec2sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultAccountID owns every resource when no accounts are configured.
const DefaultAccountID = "123456789012"

// unknownAccount is the account Stats counts requests under when their credentials name none.
const unknownAccount = "unknown"

// accountIDLength is the number of digits of an AWS account ID.
const accountIDLength = 12

// Account is an AWS account: its ID, the access keys that sign as it and its enabled regions.
type Account struct {
	// ID is the 12-digit account ID, reported as ownerId.
	ID string `json:"id"`
	// AccessKeys are the account's long-term keys.
	AccessKeys []AccessKey `json:"accessKeys,omitempty"`
	// Regions are the regions enabled for the account; empty enables every region.
	Regions []string `json:"regions,omitempty"`
	// AllowedActions, when not empty, are the only EC2 actions the account's callers may call
	// (its IAM policy); any other gets 403 UnauthorizedOperation. Config.AllowedActions applies
	// on top.
	AllowedActions []string `json:"allowedActions,omitempty"`
}

// AccessKey is a long-term access key pair.
type AccessKey struct {
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
}

// CredentialsFile is a shared credentials file holding k as its default profile.
func (k AccessKey) CredentialsFile() []byte {
	return fmt.Appendf(nil, "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", k.AccessKeyID, k.SecretAccessKey)
}

// Validate reports the first inconsistency in the accounts, roles, KMS keys and seeded volumes:
// malformed or duplicate account IDs, empty or duplicate access keys, malformed or duplicate
// role ARNs or KMS key ARNs, malformed trusted principals, roles, keys or volumes naming an
// account that is not configured, Pod Identity associations naming a role that is not
// configured, and volumes encrypted under a configured key their owner may not use; and a
// negative time scale.
func (c Config) Validate() error {
	if err := c.validateTimeScales(); err != nil {
		return err
	}
	accounts := map[string]bool{}
	keys := map[string]bool{}
	for _, a := range c.Accounts {
		if !validAccountID(a.ID) {
			return fmt.Errorf("account %q: the ID must be %d digits", a.ID, accountIDLength)
		}
		if accounts[a.ID] {
			return fmt.Errorf("account %s is configured twice", a.ID)
		}
		accounts[a.ID] = true
		for _, k := range a.AccessKeys {
			if k.AccessKeyID == "" || k.SecretAccessKey == "" {
				return fmt.Errorf("account %s: an access key needs accessKeyId and secretAccessKey", a.ID)
			}
			if keys[k.AccessKeyID] {
				return fmt.Errorf("access key %s is configured twice", k.AccessKeyID)
			}
			keys[k.AccessKeyID] = true
		}
		if slices.Contains(a.Regions, "") {
			return fmt.Errorf("account %s: empty region name", a.ID)
		}
	}
	known := func(id string) bool { return len(c.Accounts) == 0 && id == DefaultAccountID || accounts[id] }
	roles := map[string]bool{}
	for _, r := range c.Roles {
		acct, err := r.account()
		if err != nil {
			return err
		}
		if len(c.Accounts) > 0 && !accounts[acct] {
			return fmt.Errorf("role %s: account %s is not configured", r.ARN, acct)
		}
		if roles[r.ARN] {
			return fmt.Errorf("role %s is configured twice", r.ARN)
		}
		if err := r.validate(); err != nil {
			return err
		}
		roles[r.ARN] = true
	}
	for _, a := range c.PodIdentityAssociations {
		if !roles[a.RoleARN] || a.Namespace == "" || a.ServiceAccount == "" {
			return fmt.Errorf("pod identity association %s/%s: needs a namespace, a service account and a configured role (%q)", a.Namespace, a.ServiceAccount, a.RoleARN)
		}
	}
	if err := c.validateKMSKeys(known); err != nil {
		return err
	}
	kmsKeys := newKeyring(c.KMSKeys)
	defaultOwner := DefaultAccountID
	if len(c.Accounts) > 0 {
		defaultOwner = c.Accounts[0].ID
	}
	for name, rc := range c.Regions {
		for _, v := range rc.Volumes {
			if v.Account != "" && !known(v.Account) {
				return fmt.Errorf("region %s: volume %q: account %s is not configured", name, v.ID, v.Account)
			}
			if _, configured := kmsKeys[v.KmsKeyID]; !configured {
				continue
			}
			owner := cmp.Or(v.Account, defaultOwner)
			if p := kmsKeys.problem(v.KmsKeyID, owner, name, owner); p != "" {
				return fmt.Errorf("region %s: volume %q: %s", name, v.ID, p)
			}
		}
	}
	return nil
}

func validAccountID(id string) bool {
	if len(id) != accountIDLength {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// credential is what an access key ID stands for: a long-term key of an account or an STS
// session (with a token and an expiry).
type credential struct {
	account, secret, token string
	expires                time.Time // zero for long-term keys
	// principal and principalID are who STS says a session is (GetCallerIdentity); empty for
	// long-term keys.
	principal, principalID string
	// role is the ARN of the role a session is of; empty for long-term keys.
	role string
	// transitiveTags is set on sessions carrying transitive session tags (EKS Pod Identity's),
	// which follow them into the sessions they assume.
	transitiveTags bool
}

// identities holds the accounts, keys, roles and issued sessions. Everything but sessions is
// fixed at New; sessions are guarded by Simulator.mu.
type identities struct {
	// on is whether EC2 requests are authenticated (accounts are configured).
	on bool
	// defaultAccount is the first configured account, or DefaultAccountID.
	defaultAccount string
	// regions maps an account ID to its enabled regions; nil enables every region.
	regions map[string]map[string]bool
	keys    map[string]credential
	// roles are the configured roles by ARN, each with its account set.
	roles map[string]Role
	// pods maps "namespace/service account" to the role its Pod Identity association names.
	pods map[string]string
	// sessions maps the access key IDs STS issued to their credentials.
	sessions map[string]credential
	// allowed maps an account ID, or a role ARN, to the only actions its callers (the role's
	// sessions) may call; absent: any.
	allowed map[string]map[string]bool
	// closed are the accounts closed (CloseAccount): their keys and sessions are refused and
	// their roles cannot be assumed. Guarded by Simulator.mu.
	closed map[string]bool
}

// newIdentities indexes cfg's accounts and roles. Later duplicates lose to earlier ones; Validate
// reports them.
func newIdentities(cfg Config) identities {
	id := identities{
		on: len(cfg.Accounts) > 0, defaultAccount: DefaultAccountID,
		regions: map[string]map[string]bool{}, keys: map[string]credential{},
		roles: map[string]Role{}, pods: map[string]string{}, sessions: map[string]credential{},
		allowed: map[string]map[string]bool{}, closed: map[string]bool{},
	}
	if id.on {
		id.defaultAccount = cfg.Accounts[0].ID
	}
	for _, a := range cfg.Accounts {
		if _, dup := id.regions[a.ID]; dup {
			continue
		}
		var enabled map[string]bool
		if len(a.Regions) > 0 {
			enabled = map[string]bool{}
			for _, r := range a.Regions {
				enabled[r] = true
			}
		}
		id.regions[a.ID] = enabled
		if set := actionSet(a.AllowedActions); set != nil {
			id.allowed[a.ID] = set
		}
		for _, k := range a.AccessKeys {
			if _, dup := id.keys[k.AccessKeyID]; !dup {
				id.keys[k.AccessKeyID] = credential{account: a.ID, secret: k.SecretAccessKey}
			}
		}
	}
	for _, r := range cfg.Roles {
		if acct, err := r.account(); err == nil {
			if _, dup := id.roles[r.ARN]; !dup {
				r.Account = acct
				id.roles[r.ARN] = r
				if set := actionSet(r.AllowedActions); set != nil {
					id.allowed[r.ARN] = set
				}
			}
		}
	}
	for _, a := range cfg.PodIdentityAssociations {
		if _, dup := id.pods[a.Namespace+"/"+a.ServiceAccount]; !dup {
			id.pods[a.Namespace+"/"+a.ServiceAccount] = a.RoleARN
		}
	}
	return id
}

// known reports whether resources can be addressed in account through the admin endpoints.
func (id *identities) known(account string) bool {
	if !id.on {
		return account == id.defaultAccount
	}
	_, ok := id.regions[account]
	return ok
}

// enabled reports whether account may use region.
func (id *identities) enabled(account, region string) bool {
	set, ok := id.regions[account]
	return ok && (set == nil || set[region])
}

// lookup finds the credential of an access key ID, unless its account is closed. Callers hold
// s.mu.
func (id *identities) lookup(accessKeyID string) (credential, bool) {
	c, ok := id.keys[accessKeyID]
	if !ok {
		c, ok = id.sessions[accessKeyID]
	}
	return c, ok && !id.closed[c.account]
}

// CloseAccount closes a configured account, or opens it again (closed false): while closed, EC2,
// STS and S3 refuse its keys and sessions as unknown ones, and STS refuses to assume its roles,
// as for an AWS account that was closed or whose credentials were all revoked. Its resources
// stay, readable through the admin endpoints.
func (s *Simulator) CloseAccount(account string, closed bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ids.on || !s.ids.known(account) {
		return fmt.Errorf("account %s is not configured", account)
	}
	if closed {
		s.ids.closed[account] = true
	} else {
		delete(s.ids.closed, account)
	}
	return nil
}

// actionSet makes a set of action names; nil for an empty list, which allows every action.
func actionSet(actions []string) map[string]bool {
	if len(actions) == 0 {
		return nil
	}
	set := make(map[string]bool, len(actions))
	for _, a := range actions {
		set[a] = true
	}
	return set
}

// authorized reports whether a caller of account, in a session of role when role is set, may
// call action: the account's and the role's allow-lists admit it, and the global allow-list
// too for an EC2 action (it names EC2 actions only; STS and S3 actions are "sts:…", "s3:…").
func (s *Simulator) authorized(account, role, action string) bool {
	if s.allowed != nil && !s.allowed[action] && !strings.HasPrefix(action, "sts:") && !strings.HasPrefix(action, "s3:") {
		return false
	}
	for _, set := range []map[string]bool{s.ids.allowed[account], s.ids.allowed[role]} {
		if set != nil && !set[action] {
			return false
		}
	}
	return true
}

// DefaultAccount is the account the account-less Go API and admin requests act on: the first
// configured account, or DefaultAccountID when none are configured.
func (s *Simulator) DefaultAccount() string { return s.ids.defaultAccount }

// accountOr returns account, or the default account when it is "".
func (s *Simulator) accountOr(account string) string {
	if account == "" {
		return s.ids.defaultAccount
	}
	return account
}
