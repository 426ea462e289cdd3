package drill

import (
	"fmt"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// From is which of a location's places a drill restores from.
type From string

// The places a drill restores from.
const (
	// FromCopy, the default, restores from the copies in the location's copyToRegion, and only
	// from them: the drill proves the copies a regional recovery would use.
	FromCopy From = "copy"
	// FromSource restores in the location's region from what a restore there would use: the
	// recorded snapshots (or, in a recovery cluster's region, their copies).
	FromSource From = "source"
	// FromVault restores in the location's vaultRegion, with the vault's credentials, from the
	// vault copies of the location's own account's snapshots, and only from them.
	FromVault From = "vault"
)

// Froms are the values --from takes.
var Froms = []From{FromCopy, FromSource, FromVault}

// badFrom is the error of a --from that names no place.
func badFrom(f From) error {
	return fmt.Errorf("--from %q: want %s, %s or %s", f, FromCopy, FromSource, FromVault)
}

// Place is where a drill restores: the location whose settings it uses, the place of it the
// drill restores from, in which region, with which credentials, and from which snapshots.
type Place struct {
	Location string
	From     From
	// Region is where the volumes are made; Config the location's config as the restore there
	// uses it.
	Region string
	Config model.Config
	// Creds are the credentials the volumes are made with: the location's, or its vault's.
	Creds ec2api.Credentials
	// Source is which snapshots the volumes may be made from; for the vault, VaultOf is set
	// once the location's account is known (withAccounts).
	Source model.RestoreSource
	// VaultAccount is the account the vault credentials must be (vaultAccountId); "" unless
	// restoring from the vault.
	VaultAccount string
	// Note says why the drill restores elsewhere than asked.
	Note string
}

// locationView is a location as the drill reads it: its name, its config, and the credentials
// the plugin uses with it and with its vault (nil without a vault), as the item actions
// resolve them.
type locationView struct {
	Name  string
	Cfg   model.Config
	Creds ec2api.Credentials
	Vault *ec2api.Credentials
}

// placeOf decides where a drill of from through loc restores. Out of the location's region, its
// ebsKmsKeyId and restoreAvailabilityZone, which name a key and a zone of that region, do not
// apply: a volume made from a copy keeps the copy's encryption, and takes the zone Velero's
// restore in that region would. Its other restore settings (the initialization rate and
// whether to wait for it) do. It is pure.
func placeOf(loc locationView, from From) (Place, error) {
	p := Place{Location: loc.Name, From: from, Region: loc.Cfg.Region, Config: loc.Cfg, Creds: loc.Creds}
	switch from {
	case FromSource:
	case FromCopy:
		if loc.Cfg.CopyToRegion == "" {
			p.From = FromSource
			p.Note = fmt.Sprintf("location %s has no %s: restoring in its region %s, as Velero's restore there would", loc.Name, model.ConfigCopyToRegion, loc.Cfg.Region)
			break
		}
		p.Region, p.Source = loc.Cfg.CopyToRegion, model.RestoreSource{CopiesOnly: true}
	case FromVault:
		if !loc.Cfg.Vault.Enabled() || loc.Vault == nil {
			return Place{}, fmt.Errorf("location %s has no vault (no %s): drill --from %s or %s", loc.Name, model.ConfigVaultAccountID, FromCopy, FromSource)
		}
		p.Region, p.Creds, p.VaultAccount = loc.Cfg.Vault.Region, *loc.Vault, loc.Cfg.Vault.AccountID
		p.Source = model.RestoreSource{CopiesOnly: true}
	default:
		return Place{}, badFrom(from)
	}
	if p.Region != loc.Cfg.Region {
		p.Config.Region, p.Config.Credentials = p.Region, p.Creds
		p.Config.EBSKMSKeyID, p.Config.RestoreAvailabilityZone = "", ""
	}
	return p, nil
}

// withAccounts completes p with the accounts STS named: the location's own (locationAccount),
// whose snapshots the vault copies must be of, and the account p's credentials are
// (placeAccount), which for the vault must be vaultAccountId. A location whose own credentials
// are the vault account's is a recovery cluster's, once the source account is gone: STS cannot
// name the account the recorded snapshots were of, so the drill takes what that location's
// restore takes, a completed copy of each recorded snapshot in the vault account. It is pure.
func withAccounts(p Place, locationAccount, placeAccount string) (Place, error) {
	if p.From != FromVault {
		return p, nil
	}
	if placeAccount != p.VaultAccount {
		return Place{}, fmt.Errorf("the vault credentials of location %s (%s) are account %s's, not %s %s's: fix %s or %s",
			p.Location, p.Creds, placeAccount, model.ConfigVaultAccountID, p.VaultAccount, model.ConfigVaultCredentialSecret, model.ConfigVaultProfile)
	}
	if locationAccount == p.VaultAccount {
		p.Source = model.RestoreSource{}
		p.Note = fmt.Sprintf("location %s is the vault account's own (a recovery cluster's): restoring from the copies of the recorded snapshots there, as its restore would", p.Location)
		return p, nil
	}
	p.Source.VaultOf = locationAccount
	return p, nil
}
