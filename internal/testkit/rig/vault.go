package rig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
)

// Vault copies in a rig: a rig whose Env has KubeAPI and whose simulator has WithAccounts's
// accounts backs up the source account's volumes through a location with a vault in
// VaultAccount, in CopyRegion.

// vaultSecret is the Secret holding the vault account's credentials file.
const vaultSecret = "vault-credentials"

// VaultLocation puts the vault account's credentials in the rig's API and returns the
// location "vault": the source region, copies to copyTo when set, vault copies in CopyRegion,
// locked in lockMode for a day when lockMode is set.
func (r *Rig) VaultLocation(copyTo, lockMode string) (*velerov1api.VolumeSnapshotLocation, error) {
	key := accountKeys[VaultAccount]
	if err := r.PutSecret(vaultSecret, map[string][]byte{model.DefaultVaultCredentialKey: key.CredentialsFile()}); err != nil {
		return nil, err
	}
	loc := Location(SourceRegion, copyTo)
	loc.Name = "vault"
	for k, v := range map[string]string{model.ConfigVaultAccountID: VaultAccount, model.ConfigVaultCredentialSecret: vaultSecret, model.ConfigVaultRegion: CopyRegion} {
		loc.Spec.Config[k] = v
	}
	if lockMode != "" {
		loc.Spec.Config[model.ConfigVaultLockMode] = lockMode
		loc.Spec.Config[model.ConfigVaultLockDurationDays] = "1"
	}
	return loc, nil
}

// VaultCredential is the spec.credential of a location acting as the vault account, such as a
// recovery location restoring from the vault copies (the Secret VaultLocation puts).
func VaultCredential() *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: vaultSecret}, Key: model.DefaultVaultCredentialKey}
}

// vaultCopiesOf returns the vault account's copies of a source.
func (r *Rig) vaultCopiesOf(sourceID string) []ec2sim.Snapshot {
	var out []ec2sim.Snapshot
	for _, s := range r.Sim.SnapshotsIn(VaultAccount, CopyRegion) {
		if s.SourceSnapshotID == sourceID {
			out = append(out, s)
		}
	}
	return out
}

// vaultUsable says what is missing of a source's vault copy for its operation to be complete:
// the copy, completed, locked when asked, and the source no longer shared; "" when nothing is.
func (r *Rig) vaultUsable(src ec2sim.Snapshot, lockMode string) string {
	cs := r.vaultCopiesOf(src.ID)
	switch {
	case len(cs) != 1:
		return fmt.Sprintf("%d vault copies of %s, want 1", len(cs), src.ID)
	case cs[0].State != "completed":
		return fmt.Sprintf("vault copy %s of %s is %s", cs[0].ID, src.ID, cs[0].State)
	case lockMode != "" && cs[0].LockState != lockMode:
		return fmt.Sprintf("vault copy %s of %s is not locked in %s mode (lock state %q)", cs[0].ID, src.ID, lockMode, cs[0].LockState)
	case len(src.SharedWith) > 0:
		return fmt.Sprintf("source %s is still shared with %v", src.ID, src.SharedWith)
	}
	return ""
}

// CheckVault records in res what is wrong with the backup's vault copies: one completed copy per
// snapshot (locked when the location asks), every extra one a duplicate, and nothing left shared.
func (r *Rig) CheckVault(res *Result, b *harness.BackupResult, loc *velerov1api.VolumeSnapshotLocation) {
	lockMode := loc.Spec.Config[model.ConfigVaultLockMode]
	sources := map[string]ec2sim.Snapshot{}
	for _, s := range r.Sim.Snapshots(SourceRegion) {
		sources[s.ID] = s
	}
	for _, snap := range b.Snapshots {
		res.Duplicates += max(0, len(r.vaultCopiesOf(snap.SnapshotID))-1)
		if why := r.vaultUsable(sources[snap.SnapshotID], lockMode); why != "" {
			res.Problemf("%s: %s", snap.PV, why)
		}
	}
	if shared := r.Sim.SharedSnapshots(SourceAccount); len(shared) > 0 {
		res.Problemf("%d snapshots left shared, the first %s with %v", len(shared), shared[0].ID, shared[0].SharedWith)
	}
}

// CheckKeptVaultCopies records in res a vault copy of the deleted backup that was not kept and
// tagged as kept by its lock, then unlocks and deletes them as the vault's owner would.
func (r *Rig) CheckKeptVaultCopies(ctx context.Context, res *Result, b *harness.BackupResult) {
	c := ClientAs(r.Server.URL, VaultAccount, CopyRegion)
	for _, snap := range b.Snapshots {
		cs := r.vaultCopiesOf(snap.SnapshotID)
		if len(cs) != 1 || cs[0].Tags[model.TagBackupDeletedAt] == "" {
			res.Problemf("%s: vault copies %+v after the deletion, want the locked one kept, tagged %s", snap.PV, cs, model.TagBackupDeletedAt)
		}
		for _, s := range cs {
			if _, err := c.UnlockSnapshot(ctx, &ec2.UnlockSnapshotInput{SnapshotId: aws.String(s.ID)}); err != nil {
				res.Problemf("unlocking %s: %v", s.ID, err)
			}
			if _, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(s.ID)}); err != nil {
				res.Problemf("deleting %s: %v", s.ID, err)
			}
		}
	}
}

// hasVault reports whether a location asks for vault copies.
func hasVault(loc *velerov1api.VolumeSnapshotLocation) bool {
	return loc.Spec.Config[model.ConfigVaultAccountID] != ""
}

// Vault copies without the vault account's keys: the web identity of Velero's service account
// (IRSA) assumes SourceRole in the source account, which assumes VaultRole in the vault account
// for the copies, or VaultRestoreRole there for a restore from the vault.
const (
	SourceRole       = "arn:aws:iam::" + SourceAccount + ":role/velero"
	VaultRole        = "arn:aws:iam::" + VaultAccount + ":role/velero-vault"
	VaultRestoreRole = "arn:aws:iam::" + VaultAccount + ":role/velero-vault-restore"
	// VaultExternalID is the sts:ExternalId the vault roles' trust asks for.
	VaultExternalID = "velero-vault-copies"
	// veleroServiceAccount is the service account of Velero's pod, as `velero install` names it.
	veleroServiceAccount = "velero"
	// roleSession names the vault roles' sessions.
	roleSession = "velero-vault"
)

// WithVaultRole returns cfg with SourceRole, trusting the web identity and the EKS Pod Identity
// association of Velero's service account, and VaultRole and VaultRestoreRole, trusting
// SourceRole with VaultExternalID and sts:TagSession; VaultRole is allowed vaultAllowed when not
// empty, VaultRestoreRole anything its account allows.
func WithVaultRole(cfg ec2sim.Config, vaultAllowed []string) ec2sim.Config {
	trust := ec2sim.Trust{Principals: []string{SourceRole}, ExternalID: VaultExternalID, TagSession: true}
	cfg.Roles = append(cfg.Roles,
		ec2sim.Role{ARN: SourceRole, Trust: ec2sim.Trust{
			WebIdentitySubjects: []string{ec2sim.ServiceAccountSubject(harness.Namespace, veleroServiceAccount)}, PodIdentity: true}},
		ec2sim.Role{ARN: VaultRole, Trust: trust, AllowedActions: vaultAllowed},
		ec2sim.Role{ARN: VaultRestoreRole, Trust: trust})
	cfg.PodIdentityAssociations = append(cfg.PodIdentityAssociations,
		ec2sim.PodIdentityAssociation{Namespace: harness.Namespace, ServiceAccount: veleroServiceAccount, RoleARN: SourceRole})
	return cfg
}

// RoleProfile is a shared config file whose default profile assumes role from SourceRole, which
// the web identity token in tokenFile assumes, as IRSA mounts it: credentials holding no key.
func RoleProfile(role, tokenFile string) []byte {
	return fmt.Appendf(nil, "[default]\nrole_arn = %s\nexternal_id = %s\nrole_session_name = %s\nsource_profile = irsa\n\n"+
		"[profile irsa]\nrole_arn = %s\nweb_identity_token_file = %s\n", role, VaultExternalID, roleSession, SourceRole, tokenFile)
}

// PutRoleProfile writes the web identity token of Velero's service account under dir and puts
// RoleProfile(role) in Secret secret, returning its key's selector.
func (r *Rig) PutRoleProfile(secret, role, dir string) (*corev1.SecretKeySelector, error) {
	token := filepath.Join(dir, "token")
	sub := ec2sim.ServiceAccountSubject(harness.Namespace, veleroServiceAccount)
	if err := os.WriteFile(token, []byte(ec2sim.WebIdentityToken(sub)), 0o600); err != nil {
		return nil, err
	}
	key := model.DefaultVaultCredentialKey
	if err := r.PutSecret(secret, map[string][]byte{key: RoleProfile(role, token)}); err != nil {
		return nil, err
	}
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}, nil
}

// PutVaultRole puts in the vault's Secret, in place of the vault account's keys, a profile
// assuming VaultRole (PutRoleProfile).
func (r *Rig) PutVaultRole(dir string) error {
	_, err := r.PutRoleProfile(vaultSecret, VaultRole, dir)
	return err
}
