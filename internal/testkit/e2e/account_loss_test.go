//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/readme"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The loss of the source account, as the vault README's runbook ("The source account is gone")
// meets it: account B's volumes are backed up through aws-async-vault into a BackupStorageLocation
// of B's own (a bucket of the stand-in S3), its records replicated into the vault bucket of
// account C (the simulator's S3, Object Lock on) as S3 Replication would, later; then account B
// is closed (its keys, sessions and roles refused) and its bucket deleted, the source cluster's
// Velero server goes with it, and a recovery cluster holding only the vault's identity (C's role
// velero-recovery, trusting that cluster's service account's web identity directly) restores
// every volume from the vault copies, following the runbook.
const (
	lossNS      = "e2e-loss-app"
	lossBackup  = "e2e-loss"
	lossRestore = "e2e-loss-restore"
	// lossBSL is account B's BackupStorageLocation, on lossBucket of the stand-in S3.
	lossBSL    = "account-b"
	lossBucket = "velero-e2e-b"
	// vaultBucket is the vault account's bucket of the replicated records, in copyRegion (the
	// vault's region), the runbook's name.
	vaultBucket = "velero-vault"
	// vaultBucketLockDays is its default retention, governance, as the vault copies' lock.
	vaultBucketLockDays = 1
	// lossRecoveryName names the recovery cluster with the vault's identity alone.
	lossRecoveryName = "vault-recovery"
	// recoveryRole is the vault account's role of the recovery cluster, assumed with its
	// service account's web identity; recoverySecret the runbook's Secret holding its profile.
	recoveryRole   = "arn:aws:iam::" + vaultAccountID + ":role/velero-recovery"
	recoverySecret = "vault-credentials"
	// vaultREADME is the runbook's page.
	vaultREADME = "internal/vault/README.md"
)

// volumesLoss are account B's volumes of the backup that outlives its account.
var volumesLoss = []volume{
	{ID: "vol-0e2e00000000000d1", AZ: "us-east-1a", PV: "pv-loss-intree", PVC: "data-loss-intree", Type: "gp3"},
	{ID: "vol-0e2e00000000000d2", AZ: "us-east-1b", PV: "pv-loss-csi", PVC: "data-loss-csi", Driver: ebsCSIDriver, Type: "gp3"},
}

// vaultRecordsActions are the vault README's VaultRecords statement: what check and audit read
// of the vault bucket with the vault's credentials.
var vaultRecordsActions = []string{"s3:ListBucket", "s3:GetBucketObjectLockConfiguration"}

// recoveryRoleOf is C's role velero-recovery, trusting the web identity of Velero's service
// account (the recovery cluster's; the simulator checks the token's subject, not its issuer),
// allowed exactly the actions of the runbook's policy (runbookRecoveryActions).
func recoveryRoleOf() ec2sim.Role {
	return ec2sim.Role{ARN: recoveryRole, Trust: ec2sim.Trust{WebIdentitySubjects: []string{serviceAccountSubject}}, AllowedActions: runbookRecoveryActions()}
}

// recoveryStatements is the Sid prefix of the runbook's policy of the recovery cluster's role.
const recoveryStatements = "Recovery"

// runbookRecoveryActions are the actions of the runbook's statements of the recovery cluster's
// role, EC2's by name and S3's as "s3:…", as the simulator's allow-lists name them (not their
// resources: a prefix is not modelled). It never returns an empty list, which would allow every
// action: without the policy it allows one that does nothing.
func runbookRecoveryActions() []string {
	_, file, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", vaultREADME))
	var actions []string
	for _, m := range jsonFence.FindAllStringSubmatch(string(src), -1) {
		var policy struct {
			Statement []struct {
				Sid    string
				Action []string
			}
		}
		if json.Unmarshal([]byte(m[1]), &policy) != nil {
			continue
		}
		for _, st := range policy.Statement {
			if strings.HasPrefix(st.Sid, recoveryStatements) {
				for _, a := range st.Action {
					actions = append(actions, strings.TrimPrefix(a, "ec2:"))
				}
			}
		}
	}
	if err != nil || len(actions) == 0 {
		return []string{"NoRecoveryPolicyInTheRunbook"}
	}
	return actions
}

// jsonFence matches a fenced JSON block of a Markdown document.
var jsonFence = regexp.MustCompile("(?s)```json\n(.*?)\n```")

// accountLoss is the subtest: the backup, its records on their way to the vault, the loss, the
// recovery with the vault's identity alone, and the cleanup for the steps after.
func (r *rig) accountLoss(sim simClient) {
	t := r.t
	b, c := r.acctB(), r.acctC()
	source := r.cluster
	var recovery *cluster
	var src []simObject
	var vaultCopies map[string][]ec2sim.Snapshot
	defer func() { r.lossCleanup(sim, source, recovery, src, vaultCopies) }()
	r.lossSetup(sim)
	r.createWorkload(sim, b, lossNS, volumesLoss)
	r.volumeBackup(sim, backupSpec{name: lossBackup, ns: lossNS, vsl: vslNameVault, bsl: lossBSL, vols: volumesLoss, acct: b, vault: c.ID})
	src, _ = backupSnapshots(sim, b.ID, lossBackup)
	vaultCopies = r.vaultCopies(sim, src)

	r.step("before the records reach the vault: check and audit must not call %s restorable without the source account", lossBackup)
	r.checkRecords(false)
	r.auditAccountLoss(false)
	r.step("S3 Replication, played by the rig: every object of bucket %s (account B) reaches %s (account C) with the vault's Object Lock", lossBucket, vaultBucket)
	r.saw("%d objects replicated", r.replicateToVault())
	r.step("the records landed: check and audit must call %s restorable without the source account", lossBackup)
	r.checkRecords(true)
	r.auditAccountLoss(true)

	r.step("account B is gone: closed in the simulator (keys, sessions and roles refused), its bucket %s deleted, its cluster's Velero server down", lossBucket)
	sim.post("/_sim/accounts", map[string]any{"account": b.ID, "closed": true})
	r.deleteBucket(lossBucket)
	r.checkAccountGone(b)
	r.stop(source.server)

	recovery = &cluster{name: lossRecoveryName, dir: filepath.Join(r.dir, lossRecoveryName), region: copyRegion}
	must(t, os.MkdirAll(filepath.Join(recovery.dir, "tmp"), 0o755))
	r.use(recovery)
	r.startCluster()
	r.installFromRunbook()
	r.startVeleroServer()
	r.waitLocationAvailable(vaultLocationBSL)
	r.step("waiting for Velero's backup sync to bring %s in from the vault bucket", lossBackup)
	waitFor(t, "backup "+lossBackup+" synced from "+vaultBucket, 3*time.Minute, r.server, func() bool {
		bk, err := r.getBackup(lossBackup)
		return err == nil && bk.Status.Phase == velerov1.BackupPhaseCompleted
	})
	r.saw("velero backup get:\n%s", indent(r.mustVelero("backup", "get")))
	r.step("audit in the recovery cluster, with the vault's identity alone")
	r.auditAccountLoss(true)
	r.drillFromVault(sim, vaultCopies)
	r.restoreFromVault(sim, vaultCopies)
	r.checkNoKeysOf(b, c)
}

// vaultLocationBSL is the runbook's BackupStorageLocation on the vault bucket.
const vaultLocationBSL = "vault"

// lossSetup makes account B's BackupStorageLocation and the vault bucket, and names the bucket
// on aws-async-vault.
func (r *rig) lossSetup(sim simClient) {
	t := r.t
	ctx := context.Background()
	r.step("bucket %s (account B's, in the stand-in S3) and BackupStorageLocation %s on it", lossBucket, lossBSL)
	r.s3("PUT", lossBucket, nil)
	must(t, r.c.Create(ctx, r.bsl(lossBSL, lossBucket, srcRegion, velerov1.BackupStorageLocationAccessModeReadWrite, false)))
	r.waitLocationAvailable(lossBSL)
	r.step("vault bucket %s: account C, %s, Object Lock with a default retention GOVERNANCE for %d day (the vault copies' lock)", vaultBucket, copyRegion, vaultBucketLockDays)
	sim.post("/_sim/buckets", map[string]any{"account": r.acctC().ID, "name": vaultBucket, "region": copyRegion,
		"objectLock": ec2sim.ObjectLock{Mode: "GOVERNANCE", Days: vaultBucketLockDays}})
	r.step("VolumeSnapshotLocation %s names the vault bucket: vaultBucket %s, vaultBucketPrefix %s", vslNameVault, vaultBucket, bslPrefix)
	r.updateLocation(vslNameVault, func(v *velerov1.VolumeSnapshotLocation) {
		v.Spec.Config["vaultBucket"] = vaultBucket
		v.Spec.Config["vaultBucketPrefix"] = bslPrefix
	})
}

// waitLocationAvailable waits until the BackupStorageLocation name is Available.
func (r *rig) waitLocationAvailable(name string) {
	start := time.Now()
	waitFor(r.t, "BackupStorageLocation "+name+" Available", 3*time.Minute, r.server, func() bool {
		var bsl velerov1.BackupStorageLocation
		return r.c.Get(context.Background(), client.ObjectKey{Namespace: veleroNS, Name: name}, &bsl) == nil &&
			bsl.Status.Phase == velerov1.BackupStorageLocationPhaseAvailable
	})
	r.saw("BackupStorageLocation %s Available after %s", name, time.Since(start).Round(time.Second))
}

// checkRecords runs check on aws-async-vault and fails the test unless its record line counts
// the record of lossBackup in the vault bucket exactly when landed (check judges a missing
// record only of a backup completed more than its replication allowance ago).
func (r *rig) checkRecords(landed bool) {
	out, code := r.runCheck(vslNameVault, "text")
	want := "0 backup records under " + bslPrefix + "/backups/"
	if landed {
		want = "1 backup record under " + bslPrefix + "/backups/"
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "vault:") && strings.Contains(l, vaultBucket) {
			lines = append(lines, l)
		}
	}
	r.saw("check --location %s: exit %d; its vault bucket lines:\n%s", vslNameVault, code, indent(strings.Join(lines, "\n")))
	if !strings.Contains(strings.Join(lines, "\n"), want) {
		r.t.Errorf("check's vault bucket lines do not say %q (records landed: %v); its output:\n%s", want, landed, out)
	}
}

// auditAccountLoss runs audit on aws-async-vault and fails the test unless lossBackup is
// vault-restorable exactly when want.
func (r *rig) auditAccountLoss(want bool) audit.BackupLine {
	rep, code := r.runAudit("--location", vslNameVault)
	line, ok := backupLine(rep, lossBackup)
	switch {
	case !ok:
		r.t.Errorf("audit (exit %d) lists no backup %s", code, lossBackup)
	case line.AccountLoss == nil:
		r.t.Errorf("audit (exit %d) says nothing of %s without the source account", code, lossBackup)
	case line.AccountLoss.Restorable != want:
		r.t.Errorf("audit (exit %d): %s vault-restorable %v (%+v), want %v", code, lossBackup, line.AccountLoss.Restorable, *line.AccountLoss, want)
	default:
		r.saw("audit: %s without the source account: vault-restorable %v, %+v", lossBackup, want, *line.AccountLoss)
	}
	return line
}

// vaultS3 is an S3 client of the vault bucket signing with the vault owner's key pair (the
// rig's, never the cluster's): S3 Replication's writes, and the owner's reads.
func (r *rig) vaultS3() *s3.Client {
	c := r.acctC()
	return s3.NewFromConfig(aws.Config{Region: copyRegion, BaseEndpoint: aws.String(r.ec2URL),
		Credentials: credentials.NewStaticCredentialsProvider(c.KeyID, c.Secret, "")})
}

// replicateToVault copies every object of lossBucket into the vault bucket, as S3 Replication
// does (the vault account owns the replicas), and returns how many.
func (r *rig) replicateToVault() int {
	keys := r.objectKeys(lossBucket, "")
	for _, k := range keys {
		body := r.s3("GET", lossBucket+"/"+(&url.URL{Path: k}).EscapedPath(), nil)
		if _, err := r.vaultS3().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(vaultBucket), Key: aws.String(k), Body: bytes.NewReader(body)}); err != nil {
			r.t.Fatalf("replicating %s into %s: %v", k, vaultBucket, err)
		}
	}
	return len(keys)
}

// deleteBucket deletes a bucket of the stand-in S3 with everything in it.
func (r *rig) deleteBucket(name string) {
	keys := r.objectKeys(name, "")
	for _, k := range keys {
		r.s3("DELETE", name+"/"+(&url.URL{Path: k}).EscapedPath(), nil)
	}
	r.s3("DELETE", name, nil)
	r.saw("bucket %s: %d objects and the bucket deleted", name, len(keys))
}

// checkAccountGone fails the test unless EC2 and STS refuse acct's key pair and STS its role.
func (r *rig) checkAccountGone(acct awsAccount) {
	ctx := context.Background()
	_, ec2Err := r.ec2As(acct, srcRegion).DescribeVolumes(ctx, &ec2.DescribeVolumesInput{})
	stsClient := sts.New(sts.Options{Region: srcRegion, BaseEndpoint: aws.String(r.ec2URL), Credentials: credentials.NewStaticCredentialsProvider(acct.KeyID, acct.Secret, "")})
	_, stsErr := stsClient.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	_, roleErr := sts.New(sts.Options{Region: srcRegion, BaseEndpoint: aws.String(r.ec2URL)}).AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{
		RoleArn: aws.String(irsaRole), RoleSessionName: aws.String("velero"), WebIdentityToken: aws.String(r.webIdentityToken())})
	for _, e := range []struct {
		what string
		err  error
		want string
	}{{"EC2 DescribeVolumes with account " + acct.Name + "'s key pair", ec2Err, "AuthFailure"},
		{"STS GetCallerIdentity with account " + acct.Name + "'s key pair", stsErr, "InvalidClientTokenId"},
		{"STS AssumeRoleWithWebIdentity into " + irsaRole, roleErr, "AccessDenied"}} {
		var ae smithy.APIError
		if !errors.As(e.err, &ae) || ae.ErrorCode() != e.want {
			r.t.Errorf("%s: %v, want %s", e.what, e.err, e.want)
			continue
		}
		r.saw("%s: refused, %s", e.what, ae.ErrorCode())
	}
}

// recoveryTokenFile is where the rig puts the recovery cluster's service account token, as
// IRSA mounts it there.
func (r *rig) recoveryTokenFile() string {
	return filepath.Join(r.cluster.dir, "eks.amazonaws.com", "serviceaccount", "token")
}

// installFromRunbook installs Velero's CRDs in the recovery cluster and what the runbook says:
// the Secret of the vault's credentials (its kubectl command, run as written, on a profile
// assuming velero-recovery with the cluster's web identity), the BackupStorageLocation on the
// vault bucket and the VolumeSnapshotLocation of its YAML block, with the rig's names.
func (r *rig) installFromRunbook() {
	t := r.t
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join(r.repoRoot, vaultREADME))
	must(t, err)
	r.step("velero install --crds-only, namespace %s, the Deployment standing in for Velero's", veleroNS)
	r.mustVelero("install", "--crds-only")
	waitFor(t, "Velero CRDs established", time.Minute, nil, func() bool {
		return r.c.List(ctx, &velerov1.BackupStorageLocationList{}, client.InNamespace(veleroNS)) == nil
	})
	r.shell("kubectl create namespace " + veleroNS)
	r.createServerStandIn()

	must(t, os.MkdirAll(filepath.Dir(r.recoveryTokenFile()), 0o700))
	must(t, os.WriteFile(r.recoveryTokenFile(), []byte(r.webIdentityToken()), 0o600))
	profile := "[default]\nrole_arn = " + recoveryRole + "\nweb_identity_token_file = " + r.recoveryTokenFile() + "\nrole_session_name = velero-recovery\n"
	must(t, os.WriteFile(filepath.Join(r.cluster.dir, "credentials-vault"), []byte(profile), 0o600))
	cmds, err := readme.Commands(string(src), "kubectl")
	must(t, err)
	var secretCmd string
	for _, cmd := range cmds {
		if strings.Contains(cmd, "create secret") && strings.Contains(cmd, recoverySecret) {
			secretCmd = cmd
		}
	}
	if secretCmd == "" {
		t.Fatalf("%s has no kubectl command creating Secret %s", vaultREADME, recoverySecret)
	}
	r.step("the runbook's command, in a folder holding credentials-vault (a profile: %s from the recovery cluster's web identity, no key): %s", recoveryRole, secretCmd)
	r.shell("cd " + r.cluster.dir + " && " + secretCmd)

	bsl, vsl := r.runbookLocations(string(src))
	r.step("the runbook's BackupStorageLocation %s (bucket %s, prefix %s, %s, %s) and VolumeSnapshotLocation %s (config %v)",
		bsl.Name, bsl.Spec.ObjectStorage.Bucket, bsl.Spec.ObjectStorage.Prefix, bsl.Spec.Config, bsl.Spec.AccessMode, vsl.Name, vsl.Spec.Config)
	must(t, r.c.Create(ctx, bsl))
	must(t, r.c.Create(ctx, vsl))
}

// runbookLocations reads the runbook's YAML block of the BackupStorageLocation on the vault
// bucket and the VolumeSnapshotLocation, and gives them the rig's names: the location of the
// backup's name (the README's ebs), the vault account C, the source location's prefix.
func (r *rig) runbookLocations(md string) (*velerov1.BackupStorageLocation, *velerov1.VolumeSnapshotLocation) {
	t := r.t
	var bsl *velerov1.BackupStorageLocation
	var vsl *velerov1.VolumeSnapshotLocation
	for _, m := range yamlFence.FindAllStringSubmatch(md, -1) {
		for _, doc := range strings.Split(m[1], "\n---\n") {
			var kind struct{ Kind string }
			if yaml.Unmarshal([]byte(doc), &kind) != nil {
				continue
			}
			switch {
			case kind.Kind == "BackupStorageLocation" && strings.Contains(doc, "ReadOnly"):
				bsl = &velerov1.BackupStorageLocation{}
				must(t, yaml.Unmarshal([]byte(doc), bsl))
			case kind.Kind == "VolumeSnapshotLocation" && bsl != nil && vsl == nil:
				vsl = &velerov1.VolumeSnapshotLocation{}
				must(t, yaml.Unmarshal([]byte(doc), vsl))
			}
		}
	}
	if bsl == nil || vsl == nil {
		t.Fatalf("%s has no YAML block with the read-only BackupStorageLocation and a VolumeSnapshotLocation", vaultREADME)
	}
	if bsl.Spec.ObjectStorage.Bucket != vaultBucket || bsl.Spec.Config["region"] != copyRegion || vsl.Spec.Config["region"] != copyRegion {
		t.Fatalf("the runbook's locations name bucket %s in %s and region %s; the rig's vault bucket is %s in %s",
			bsl.Spec.ObjectStorage.Bucket, bsl.Spec.Config["region"], vsl.Spec.Config["region"], vaultBucket, copyRegion)
	}
	bsl.Spec.ObjectStorage.Prefix = bslPrefix
	vsl.Name = vslNameVault
	if _, ok := vsl.Spec.Config["vaultAccountId"]; ok {
		vsl.Spec.Config["vaultAccountId"] = vaultAccountID
	}
	if _, ok := vsl.Spec.Config["vaultBucket"]; ok {
		vsl.Spec.Config["vaultBucketPrefix"] = bslPrefix
	}
	return bsl, vsl
}

// drillFromVault runs the drill of lossBackup from the vault in the recovery cluster: every
// volume made from a vault copy in account C, deleted, and the time it took reported.
func (r *rig) drillFromVault(sim simClient, vaultCopies map[string][]ec2sim.Snapshot) {
	t := r.t
	c := r.acctC()
	r.step("velero-plugin-for-aws-async drill --backup %s --from vault --confirm, in the recovery cluster", lossBackup)
	before := len(live(sim.listIn("volumes", copyRegion, c.ID)))
	out, code := r.runSubcommand(drill.Command, "--backup", lossBackup, "--from", string(drill.FromVault), "--confirm", "--output", "json")
	r.saveLog("drill-vault-"+lossBackup, out)
	r.saw("drill: exit status %d\n%s", code, indent(out))
	var rep drill.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Errorf("drill --output json: %v\n%s", err, out)
		return
	}
	if code != drill.ExitPassed || rep.Region != copyRegion || rep.Account != c.ID {
		t.Errorf("drill: exit %d, in %s of %s; want %d, in %s of %s", code, rep.Region, rep.Account, drill.ExitPassed, copyRegion, c.ID)
	}
	r.checkDrillVolumes(rep, vaultCopyIDs(vaultCopies), len(volumesLoss), "vault copies")
	if rep.ToAvailable.Duration() <= 0 {
		t.Errorf("the drill reports no time to available volumes: %+v", rep)
	}
	r.saw("drill from the vault: %d volumes available %s after it started", len(rep.Volumes), rep.ToAvailable.Duration().Round(time.Second))
	if after := len(live(sim.listIn("volumes", copyRegion, c.ID))); after != before {
		t.Errorf("%d volumes in account C's %s after the drill, %d before", after, copyRegion, before)
	}
}

// vaultCopyIDs are the IDs of the vault copies, sorted.
func vaultCopyIDs(copies map[string][]ec2sim.Snapshot) []string {
	var ids []string
	for _, cs := range copies {
		for _, s := range cs {
			ids = append(ids, s.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// restoreFromVault runs the runbook's `velero restore create` in the recovery cluster: every PV
// on a new volume of account C in copyRegion made from a vault copy, its claim bound to it.
func (r *rig) restoreFromVault(sim simClient, vaultCopies map[string][]ec2sim.Snapshot) {
	t := r.t
	c := r.acctC()
	before := map[string]bool{}
	for _, v := range sim.listIn("volumes", copyRegion, c.ID) {
		before[v.ID] = true
	}
	r.step("velero restore create %s --from-backup %s, in the recovery cluster", lossRestore, lossBackup)
	r.restore(t, lossRestore, lossBackup, len(volumesLoss))
	made := map[string]simObject{}
	for _, v := range live(sim.listIn("volumes", copyRegion, c.ID)) {
		made[v.ID] = v
	}
	ids := vaultCopyIDs(vaultCopies)
	for _, v := range volumesLoss {
		pv, wv, ok := r.restoredVolume(v, made, before, "account C (the vault) in "+copyRegion)
		if pv == nil {
			continue
		}
		if ok && !slices.Contains(ids, wv.Source) {
			t.Errorf("volume %s of PV %s was made from %q, not from a vault copy of %s (%v)", wv.ID, v.PV, wv.Source, lossBackup, ids)
		}
		r.checkRestoredClaim(lossNS, v, lossRestore)
	}
}

// checkNoKeysOf fails the test when a Secret of the current cluster holds the key ID or secret
// key of any of accts: the recovery cluster holds a profile, no key.
func (r *rig) checkNoKeysOf(accts ...awsAccount) {
	var secrets corev1.SecretList
	must(r.t, r.c.List(context.Background(), &secrets))
	for _, sec := range secrets.Items {
		for k, v := range sec.Data {
			for _, a := range accts {
				if strings.Contains(string(v), a.KeyID) || strings.Contains(string(v), a.Secret) {
					r.t.Errorf("Secret %s/%s key %s holds account %s's key pair", sec.Namespace, sec.Name, k, a.Name)
				}
			}
		}
	}
	r.saw("%d Secrets in the recovery cluster, none holding a key of account B or C", len(secrets.Items))
}

// lossCleanup ends the subtest, whether it got through or not: the recovery cluster's Velero
// server stops; in the source cluster account B's location, its backup and the vault bucket's
// name on aws-async-vault go, and its server starts again; account B is opened again so that
// its owner deletes the backup's sources and copies, and the vault's owner unlocks and deletes
// the vault copies, as after vault-delete.
func (r *rig) lossCleanup(sim simClient, source, recovery *cluster, src []simObject, vaultCopies map[string][]ec2sim.Snapshot) {
	ctx := context.Background()
	if recovery != nil && recovery.server != nil {
		r.stop(recovery.server)
	}
	r.use(source)
	r.step("cleanup: the source cluster forgets account B's location and %s; account B opened again, its snapshots of %s and the vault copies deleted by their owners", lossBackup, lossBackup)
	for _, obj := range []client.Object{
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNS, Name: lossBackup}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: veleroNS, Name: lossBSL}},
	} {
		if err := r.c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			r.t.Errorf("deleting %s: %v", obj.GetName(), err)
		}
	}
	r.updateLocation(vslNameVault, func(v *velerov1.VolumeSnapshotLocation) { v.Spec = vaultLocation().Spec })
	select {
	case <-source.server.done:
		r.startVeleroServer()
		r.waitBSLAvailable()
	default:
	}
	sim.post("/_sim/accounts", map[string]any{"account": r.acctB().ID, "closed": false})
	b := r.acctB()
	for _, region := range []string{srcRegion, copyRegion} {
		for _, s := range live(sim.listIn("snapshots", region, b.ID)) {
			if s.Tags[backupTag] != lossBackup && !slices.ContainsFunc(src, func(o simObject) bool { return o.ID == s.Source }) {
				continue
			}
			if _, err := r.ec2As(b, region).DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(s.ID)}); err != nil {
				r.t.Errorf("deleting %s of account B in %s: %v", s.ID, region, err)
			}
		}
	}
	owner := r.ec2As(r.acctC(), copyRegion)
	for _, cs := range vaultCopies {
		for _, s := range cs {
			if _, err := owner.UnlockSnapshot(ctx, &ec2.UnlockSnapshotInput{SnapshotId: aws.String(s.ID)}); err != nil {
				r.t.Errorf("unlocking %s: %v", s.ID, err)
			}
			if _, err := owner.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(s.ID)}); err != nil {
				r.t.Errorf("deleting %s: %v", s.ID, err)
			}
		}
	}
	r.checkDeleted(sim, lossBackup)
}
