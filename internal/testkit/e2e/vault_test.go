//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// Vault copies: account B's volumes backed up through a location whose vault is account A (the
// plugin reaching A with the Secret the location names), copied to copyRegion in both accounts,
// the vault copies under a one-day governance lock; a restore from the vault; the deletion keeps
// the locked vault copies, which the vault's owner then unlocks and deletes.
const (
	vslNameVault     = "aws-async-vault"
	vaultNS          = "e2e-vault-app"
	vaultBackupName  = "e2e-vault"
	vaultRestoreName = "e2e-vault-restore"
	vaultLockMode    = "governance"
	vaultLockDays    = "1"
)

// volumesVault are account B's volumes backed up with vault copies, in namespace vaultNS.
var volumesVault = []volume{
	{ID: "vol-0e2e00000000000c1", AZ: "us-east-1a", PV: "pv-vault-intree", PVC: "data-vault-intree", Type: "gp3"},
	{ID: "vol-0e2e00000000000c2", AZ: "us-east-1c", PV: "pv-vault-csi", PVC: "data-vault-csi", Driver: ebsCSIDriver, Type: "gp3"},
}

// vaultLocation is location aws-async-vault: account B's volumes in srcRegion, copies to
// copyRegion, vault copies in account A (Secret secretA) in copyRegion under a governance lock.
func vaultLocation() *velerov1.VolumeSnapshotLocation {
	v := vsl(vslCred{VSL: vslNameVault, Secret: secretB}, srcRegion, copyRegion)
	for k, val := range map[string]string{
		"vaultAccountId": "111111111111", "vaultCredentialSecret": secretA, "vaultRegion": copyRegion,
		"vaultLockMode": vaultLockMode, "vaultLockDurationDays": vaultLockDays,
	} {
		v.Spec.Config[k] = val
	}
	return v
}

// vaultBackup backs up vaultNS through aws-async-vault and checks the vault copies.
func (r *rig) vaultBackup(sim simClient) {
	t := r.t
	a, b := r.acctA(), r.acctB()
	if a.ID != vaultLocation().Spec.Config["vaultAccountId"] {
		t.Fatalf("account A is %s, the location's vault names another", a.ID)
	}
	r.step("creating VolumeSnapshotLocation %s: account B (Secret %s) in %s, copyToRegion %s, vault account A %s (Secret %s) in %s, %s lock of %s day",
		vslNameVault, secretB, srcRegion, copyRegion, a.ID, secretA, copyRegion, vaultLockMode, vaultLockDays)
	must(t, r.c.Create(context.Background(), vaultLocation()))
	r.createWorkload(sim, b, vaultNS, volumesVault)
	r.volumeBackup(sim, backupSpec{name: vaultBackupName, ns: vaultNS, vsl: vslNameVault, vols: volumesVault, acct: b, vault: a.ID})

	d := r.mustVelero("backup", "describe", vaultBackupName, "--details", "--colorized=false")
	want := fmt.Sprintf("in vault account %s in %s, locked (%s, %s days) completed", a.ID, copyRegion, vaultLockMode, vaultLockDays)
	if n := strings.Count(d, want); n != len(volumesVault) {
		t.Errorf("describe --details shows %d operations ending %q, want %d", n, want, len(volumesVault))
	}
	src, _ := backupSnapshots(sim, b.ID, vaultBackupName)
	vaultCopies := r.vaultCopies(sim, src)
	for _, s := range src {
		cs := vaultCopies[s.ID]
		if len(cs) != 1 {
			t.Errorf("source %s has %d vault copies in account A, want 1: %v", s.ID, len(cs), cs)
			continue
		}
		c := cs[0]
		r.saw("vault copy of %s: %s %s, lock %s until %s, tags %v", s.ID, c.ID, c.State, c.LockState, c.LockExpiresOn.Format(time.RFC3339), c.Tags)
		if c.State != "completed" || c.LockState != vaultLockMode || c.Tags[backupTag] != vaultBackupName || c.Tags["velero-async.io/source-account"] != b.ID {
			t.Errorf("vault copy %s: %s, lock %q, tags %v; want completed, %s-locked, tagged with its backup and account B", c.ID, c.State, c.LockState, c.Tags, vaultLockMode)
		}
	}
	r.checkNothingShared(sim, b)
}

// vaultCopies are account A's snapshots in copyRegion copied from the sources, by source ID.
func (r *rig) vaultCopies(sim simClient, sources []simObject) map[string][]ec2sim.Snapshot {
	ids := map[string]bool{}
	for _, s := range sources {
		ids[s.ID] = true
	}
	out := map[string][]ec2sim.Snapshot{}
	for _, s := range sim.snapshotsIn(copyRegion, r.acctA().ID) {
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
// account's region and credentials, as a recovery cluster's would be, and every volume must come
// from a vault copy in account A.
func (r *rig) vaultRestore(sim simClient) {
	t := r.t
	a, b := r.acctA(), r.acctB()
	src, _ := backupSnapshots(sim, b.ID, vaultBackupName)
	fromVault := map[string]bool{}
	for _, cs := range r.vaultCopies(sim, src) {
		for _, c := range cs {
			fromVault[c.ID] = true
		}
	}
	r.step("deleting namespace %s and its PVs", vaultNS)
	r.deleteNamespace(vaultNS, volumesVault)
	before := map[string]bool{}
	for _, v := range sim.listIn("volumes", copyRegion, a.ID) {
		before[v.ID] = true
	}
	r.step("switching VolumeSnapshotLocation %s to the vault: region %s, credential %s (account A), no vault keys", vslNameVault, copyRegion, secretA)
	r.updateLocation(vslNameVault, func(v *velerov1.VolumeSnapshotLocation) {
		v.Spec.Config = map[string]string{"region": copyRegion}
		v.Spec.Credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secretA}, Key: credKey}
	})
	r.step("velero restore create %s --from-backup %s (from the vault copies in account A, %s)", vaultRestoreName, vaultBackupName, copyRegion)
	r.restore(t, vaultRestoreName, vaultBackupName, len(volumesVault))
	made := map[string]simObject{}
	for _, v := range live(sim.listIn("volumes", copyRegion, a.ID)) {
		made[v.ID] = v
	}
	for _, v := range volumesVault {
		pv, wv, ok := r.restoredVolume(v, made, before, "account A (the vault) in "+copyRegion)
		if pv == nil {
			continue
		}
		if ok && !fromVault[wv.Source] {
			t.Errorf("volume %s of PV %s was created from %q, not from a vault copy of backup %s", wv.ID, v.PV, wv.Source, vaultBackupName)
		}
		r.checkRestoredClaim(vaultNS, v, vaultRestoreName)
	}
	r.step("switching VolumeSnapshotLocation %s back to account B with its vault", vslNameVault)
	r.updateLocation(vslNameVault, func(v *velerov1.VolumeSnapshotLocation) { v.Spec = vaultLocation().Spec })
}

// vaultDelete deletes the vault backup: its sources and copies go, its vault copies are kept by
// their lock, tagged and logged as kept, and the deletion reports no error. The vault's owner
// then unlocks and deletes them, as the README says.
func (r *rig) vaultDelete(sim simClient) {
	t := r.t
	a, b := r.acctA(), r.acctB()
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
	r.step("the vault's owner unlocks and deletes the kept vault copies (account A, %s)", copyRegion)
	c := r.ec2As(a, copyRegion)
	for _, cs := range after {
		for _, s := range cs {
			if _, err := c.UnlockSnapshot(context.Background(), &ec2.UnlockSnapshotInput{SnapshotId: aws.String(s.ID)}); err != nil {
				t.Errorf("unlocking %s: %v", s.ID, err)
			}
			if _, err := c.DeleteSnapshot(context.Background(), &ec2.DeleteSnapshotInput{SnapshotId: aws.String(s.ID)}); err != nil {
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
