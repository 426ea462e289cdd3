//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// Vault copies with no key of the vault account anywhere in the cluster: account B's volumes
// are backed up through a location whose vault is account C, reached as IRSA would: the vault's
// Secret holds a shared config profile in which the web identity token of Velero's service
// account (a file the rig writes, where IRSA mounts one) assumes B's role velero, which assumes
// C's role velero-vault (trusting it with an external ID, allowed only the README's VaultCopies
// actions and the vault README's VaultRecords reads). Copies go to copyRegion in B and into C, under a one-day governance lock; a restore
// from the vault assumes C's role velero-vault-restore the same way; the deletion keeps the
// locked vault copies, which the vault's owner (the rig, with C's key pair) then unlocks and
// deletes.
const (
	vslNameVault     = "aws-async-vault"
	vaultNS          = "e2e-vault-app"
	vaultBackupName  = "e2e-vault"
	vaultRestoreName = "e2e-vault-restore"
	vaultLockMode    = "governance"
	vaultLockDays    = "1"

	vaultAccountID = "333333333333"
	// irsaRole is the role of Velero's service account in account B, the vault location's own.
	irsaRole         = "arn:aws:iam::222222222222:role/velero"
	vaultRole        = "arn:aws:iam::" + vaultAccountID + ":role/velero-vault"
	vaultRestoreRole = "arn:aws:iam::" + vaultAccountID + ":role/velero-vault-restore"
	vaultExternalID  = "velero-vault-e2e"
	// The Secrets holding the profiles that assume vaultRole and vaultRestoreRole.
	vaultRoleSecret    = "vault-role"
	vaultRestoreSecret = "vault-restore-role"
	// serviceAccountSubject is the subject of the web identity token of Velero's service account.
	serviceAccountSubject = "system:serviceaccount:" + veleroNS + ":velero"
)

// vaultCopiesActions are the README's VaultCopies statement (the security tests keep it exactly
// what the plugin needs): all the vault role may do.
var vaultCopiesActions = []string{"DescribeSnapshots", "CopySnapshot", "CreateTags", "LockSnapshot", "DescribeLockedSnapshots", "DeleteSnapshot"}

// vaultRoles are the simulator's roles: B's role for the web identity of Velero's service
// account, C's roles trusting it with the external ID (and sts:TagSession, as the README's
// trust policy allows), velero-vault allowed the README's VaultCopies and VaultRecords
// statements, and C's role of the recovery cluster (account_loss_test.go).
func vaultRoles() []ec2sim.Role {
	trust := ec2sim.Trust{Principals: []string{irsaRole}, ExternalID: vaultExternalID, TagSession: true}
	return []ec2sim.Role{
		{ARN: irsaRole, Trust: ec2sim.Trust{WebIdentitySubjects: []string{serviceAccountSubject}}},
		{ARN: vaultRole, Trust: trust, AllowedActions: append(slices.Clone(vaultCopiesActions), vaultRecordsActions...)},
		{ARN: vaultRestoreRole, Trust: trust},
		recoveryRoleOf(),
	}
}

// webIdentityToken is the token of Velero's service account, as the API server would sign it.
func (r *rig) webIdentityToken() string { return ec2sim.WebIdentityToken(serviceAccountSubject) }

// tokenFile is where the rig puts the web identity token, as IRSA mounts it at
// /var/run/secrets/eks.amazonaws.com/serviceaccount/token.
func (r *rig) tokenFile() string {
	return filepath.Join(r.dir, "eks.amazonaws.com", "serviceaccount", "token")
}

// roleProfile is a shared config file whose default profile assumes role from irsaRole, which
// the web identity token assumes: the README's vault profile for IRSA.
func (r *rig) roleProfile(role string) []byte {
	return fmt.Appendf(nil, "[default]\nrole_arn = %s\nexternal_id = %s\nrole_session_name = velero-vault\nsource_profile = irsa\n\n"+
		"[profile irsa]\nrole_arn = %s\nweb_identity_token_file = %s\n", role, vaultExternalID, irsaRole, r.tokenFile())
}

// putRoleSecrets writes the web identity token and creates the Secrets of the vault's roles.
func (r *rig) putRoleSecrets() {
	t := r.t
	must(t, os.MkdirAll(filepath.Dir(r.tokenFile()), 0o700))
	must(t, os.WriteFile(r.tokenFile(), []byte(r.webIdentityToken()), 0o600))
	r.saw("web identity token of %s written to %s, as IRSA mounts it", serviceAccountSubject, r.tokenFile())
	for name, role := range map[string]string{vaultRoleSecret: vaultRole, vaultRestoreSecret: vaultRestoreRole} {
		profile := r.roleProfile(role)
		must(t, r.c.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: veleroNS}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{credKey: profile},
		}))
		r.saw("Secret %s/%s key %s (no key, a profile):\n%s", veleroNS, name, credKey, indent(string(profile)))
	}
}

// checkNoVaultKeysInCluster fails the test when any Secret of the cluster holds the vault
// account's key ID or secret key, or when a vault Secret holds any access key.
func (r *rig) checkNoVaultKeysInCluster() {
	c := r.acctC()
	var secrets corev1.SecretList
	must(r.t, r.c.List(context.Background(), &secrets))
	for _, sec := range secrets.Items {
		for k, v := range sec.Data {
			if strings.Contains(string(v), c.KeyID) || strings.Contains(string(v), c.Secret) {
				r.t.Errorf("Secret %s/%s key %s holds the vault account's key pair", sec.Namespace, sec.Name, k)
			}
			if (sec.Name == vaultRoleSecret || sec.Name == vaultRestoreSecret) && strings.Contains(string(v), "aws_access_key_id") {
				r.t.Errorf("Secret %s/%s key %s holds an access key", sec.Namespace, sec.Name, k)
			}
		}
	}
	r.saw("%d Secrets in the cluster, none holding a key of the vault account %s", len(secrets.Items), c.ID)
}

// stsCalls counts the successful calls of action in account's STS.
func stsCalls(st ec2sim.Stats, account, action string) int {
	return st.Accounts[account].Calls["sts"][action]["ok"]
}

// volumesVault are account B's volumes backed up with vault copies, in namespace vaultNS.
var volumesVault = []volume{
	{ID: "vol-0e2e00000000000c1", AZ: "us-east-1a", PV: "pv-vault-intree", PVC: "data-vault-intree", Type: "gp3"},
	{ID: "vol-0e2e00000000000c2", AZ: "us-east-1c", PV: "pv-vault-csi", PVC: "data-vault-csi", Driver: ebsCSIDriver, Type: "gp3"},
}

// vaultLocation is location aws-async-vault: account B's volumes in srcRegion, copies to
// copyRegion, vault copies in account C (through the profile of Secret vaultRoleSecret) in
// copyRegion under a governance lock.
func vaultLocation() *velerov1.VolumeSnapshotLocation {
	v := vsl(vslCred{VSL: vslNameVault, Secret: secretB}, srcRegion, copyRegion)
	for k, val := range map[string]string{
		"vaultAccountId": vaultAccountID, "vaultCredentialSecret": vaultRoleSecret, "vaultRegion": copyRegion,
		"vaultLockMode": vaultLockMode, "vaultLockDurationDays": vaultLockDays,
	} {
		v.Spec.Config[k] = val
	}
	return v
}

// vaultBackup backs up vaultNS through aws-async-vault and checks the vault copies, and that
// they were made through the roles.
func (r *rig) vaultBackup(sim simClient) {
	t := r.t
	b, c := r.acctB(), r.acctC()
	r.putRoleSecrets()
	r.checkNoVaultKeysInCluster()
	r.step("creating VolumeSnapshotLocation %s: account B (Secret %s) in %s, copyToRegion %s, vault account C %s (Secret %s: %s assumed from %s's web identity) in %s, %s lock of %s day",
		vslNameVault, secretB, srcRegion, copyRegion, c.ID, vaultRoleSecret, vaultRole, irsaRole, copyRegion, vaultLockMode, vaultLockDays)
	must(t, r.c.Create(context.Background(), vaultLocation()))
	r.createWorkload(sim, b, vaultNS, volumesVault)
	before := sim.stats()
	r.volumeBackup(sim, backupSpec{name: vaultBackupName, ns: vaultNS, vsl: vslNameVault, vols: volumesVault, acct: b, vault: c.ID})
	after := sim.stats()
	assumed := stsCalls(after, c.ID, "AssumeRole") - stsCalls(before, c.ID, "AssumeRole")
	webIdentity := stsCalls(after, b.ID, "AssumeRoleWithWebIdentity") - stsCalls(before, b.ID, "AssumeRoleWithWebIdentity")
	r.saw("STS during the backup: %d AssumeRole into %s, %d AssumeRoleWithWebIdentity into %s", assumed, vaultRole, webIdentity, irsaRole)
	if assumed == 0 || webIdentity == 0 {
		t.Errorf("the vault was not reached through its role: %d AssumeRole, %d AssumeRoleWithWebIdentity", assumed, webIdentity)
	}

	d := r.mustVelero("backup", "describe", vaultBackupName, "--details", "--colorized=false")
	want := fmt.Sprintf("in vault account %s in %s, locked (%s, %s day) completed", c.ID, copyRegion, vaultLockMode, vaultLockDays) // one day, singular
	if n := strings.Count(d, want); n != len(volumesVault) {
		t.Errorf("describe --details shows %d operations ending %q, want %d", n, want, len(volumesVault))
	}
	src, _ := backupSnapshots(sim, b.ID, vaultBackupName)
	vaultCopies := r.vaultCopies(sim, src)
	for _, s := range src {
		cs := vaultCopies[s.ID]
		if len(cs) != 1 {
			t.Errorf("source %s has %d vault copies in account C, want 1: %v", s.ID, len(cs), cs)
			continue
		}
		vc := cs[0]
		r.saw("vault copy of %s: %s %s, lock %s until %s, tags %v", s.ID, vc.ID, vc.State, vc.LockState, vc.LockExpiresOn.Format(time.RFC3339), vc.Tags)
		if vc.State != "completed" || vc.LockState != vaultLockMode || vc.Tags[backupTag] != vaultBackupName || vc.Tags["velero-async.io/source-account"] != b.ID {
			t.Errorf("vault copy %s: %s, lock %q, tags %v; want completed, %s-locked, tagged with its backup and account B", vc.ID, vc.State, vc.LockState, vc.Tags, vaultLockMode)
		}
	}
	r.checkNothingShared(sim, b)
}

// vaultCopies are the vault account's snapshots in copyRegion copied from the sources, by source ID.
func (r *rig) vaultCopies(sim simClient, sources []simObject) map[string][]ec2sim.Snapshot {
	ids := map[string]bool{}
	for _, s := range sources {
		ids[s.ID] = true
	}
	out := map[string][]ec2sim.Snapshot{}
	for _, s := range sim.snapshotsIn(copyRegion, r.acctC().ID) {
		if ids[s.SourceSnapshotID] {
			out[s.SourceSnapshotID] = append(out[s.SourceSnapshotID], s)
		}
	}
	return out
}

// checkNothingShared fails the test when a snapshot of acct is shared with anyone.
func (r *rig) checkNothingShared(sim simClient, acct awsAccount) {
	for _, region := range []string{srcRegion, copyRegion} {
		for _, s := range sim.snapshotsIn(region, acct.ID) {
			if len(s.SharedWith) > 0 {
				r.t.Errorf("snapshot %s of account %s in %s is left shared with %v", s.ID, acct.Name, region, s.SharedWith)
			}
		}
	}
}

// vaultRestore restores the vault backup from the vault: the location is switched to the vault
// account's region and to the Secret whose profile assumes its restore role, as a recovery
// cluster's would be, and every volume must come from a vault copy in account C.
func (r *rig) vaultRestore(sim simClient) {
	t := r.t
	b, c := r.acctB(), r.acctC()
	src, _ := backupSnapshots(sim, b.ID, vaultBackupName)
	fromVault := map[string]bool{}
	for _, cs := range r.vaultCopies(sim, src) {
		for _, vc := range cs {
			fromVault[vc.ID] = true
		}
	}
	r.step("deleting namespace %s and its PVs", vaultNS)
	r.deleteNamespace(vaultNS, volumesVault)
	before := map[string]bool{}
	for _, v := range sim.listIn("volumes", copyRegion, c.ID) {
		before[v.ID] = true
	}
	r.step("switching VolumeSnapshotLocation %s to the vault: region %s, credential %s (%s assumed from %s's web identity), no vault keys",
		vslNameVault, copyRegion, vaultRestoreSecret, vaultRestoreRole, irsaRole)
	r.updateLocation(vslNameVault, func(v *velerov1.VolumeSnapshotLocation) {
		v.Spec.Config = map[string]string{"region": copyRegion}
		v.Spec.Credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: vaultRestoreSecret}, Key: credKey}
	})
	r.step("velero restore create %s --from-backup %s (from the vault copies in account C, %s)", vaultRestoreName, vaultBackupName, copyRegion)
	r.restore(t, vaultRestoreName, vaultBackupName, len(volumesVault))
	made := map[string]simObject{}
	for _, v := range live(sim.listIn("volumes", copyRegion, c.ID)) {
		made[v.ID] = v
	}
	for _, v := range volumesVault {
		pv, wv, ok := r.restoredVolume(v, made, before, "account C (the vault) in "+copyRegion)
		if pv == nil {
			continue
		}
		if ok && !fromVault[wv.Source] {
			t.Errorf("volume %s of PV %s was created from %q, not from a vault copy of backup %s", wv.ID, v.PV, wv.Source, vaultBackupName)
		}
		r.checkRestoredClaim(vaultNS, v, vaultRestoreName)
	}
	r.checkNoVaultKeysInCluster()
	r.step("switching VolumeSnapshotLocation %s back to account B with its vault", vslNameVault)
	r.updateLocation(vslNameVault, func(v *velerov1.VolumeSnapshotLocation) { v.Spec = vaultLocation().Spec })
}

// vaultDelete deletes the vault backup: its sources and copies go, its vault copies are kept by
// their lock, tagged and logged as kept, and the deletion reports no error. The vault's owner
// then unlocks and deletes them, as the README says, with its own key pair (never the cluster's).
func (r *rig) vaultDelete(sim simClient) {
	t := r.t
	b, c := r.acctB(), r.acctC()
	src, _ := backupSnapshots(sim, b.ID, vaultBackupName)
	kept := r.vaultCopies(sim, src)
	r.requestDeletions(vaultBackupName)
	if left, leftCopies := backupSnapshots(sim, b.ID, vaultBackupName); len(left)+len(leftCopies) > 0 {
		t.Errorf("account B keeps %d sources and %d copies of the deleted backup", len(left), len(leftCopies))
	}
	after := r.vaultCopies(sim, src)
	for id, cs := range kept {
		got := after[id]
		if len(got) != len(cs) || len(got) > 0 && got[0].Tags["velero-async.io/backup-deleted-at"] == "" {
			t.Errorf("vault copies of %s after the deletion: %v; want the locked copy kept, tagged velero-async.io/backup-deleted-at", id, got)
		}
	}
	if log, err := os.ReadFile(r.server.log.Name()); err != nil || !strings.Contains(string(log), "Kept snapshot") {
		t.Errorf("the Velero server's log does not say a vault copy was kept (%v)", err)
	}
	r.step("the vault's owner unlocks and deletes the kept vault copies (account C, %s)", copyRegion)
	owner := r.ec2As(c, copyRegion)
	for _, cs := range after {
		for _, s := range cs {
			if _, err := owner.UnlockSnapshot(context.Background(), &ec2.UnlockSnapshotInput{SnapshotId: aws.String(s.ID)}); err != nil {
				t.Errorf("unlocking %s: %v", s.ID, err)
			}
			if _, err := owner.DeleteSnapshot(context.Background(), &ec2.DeleteSnapshotInput{SnapshotId: aws.String(s.ID)}); err != nil {
				t.Errorf("deleting %s: %v", s.ID, err)
			}
		}
	}
	r.checkDeleted(sim, vaultBackupName)
	r.checkNothingShared(sim, b)
}

// updateLocation changes a VolumeSnapshotLocation in the API.
func (r *rig) updateLocation(name string, change func(*velerov1.VolumeSnapshotLocation)) {
	var v velerov1.VolumeSnapshotLocation
	must(r.t, r.c.Get(context.Background(), client.ObjectKey{Namespace: veleroNS, Name: name}, &v))
	change(&v)
	must(r.t, r.c.Update(context.Background(), &v))
}
