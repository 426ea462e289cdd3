//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Per-location credentials: the simulator runs with three accounts and checks every request's
// SigV4 signature; the Velero server has no AWS credentials of its own, so every EC2 call of the
// plugin (VolumeSnapshotter, BackupItemAction, RestoreItemAction) must use the credentials of the
// location's Secret. Accounts A and B have key pairs in the cluster's Secrets; account C, the
// vault, is reached only through roles (vault_test.go), its owner's key pair held by the rig.
const (
	// credKey is the key of every credential Secret: an AWS shared-credentials file.
	credKey   = "cloud"
	bslSecret = "bsl-credentials"
	secretA   = "aws-account-a"
	secretB   = "aws-account-b"
	secretBad = "aws-account-bad"

	vslNameB   = "aws-async-b"
	vslNameBad = "aws-async-bad"
	appNSB     = "e2e-app-b"

	accountBBackup  = "e2e-b"
	accountBRestore = "e2e-b-restore"
	badBackup       = "e2e-bad"
)

// awsAccount is one account of the simulator and its key pair.
type awsAccount struct {
	Name, ID, KeyID, Secret string
}

// credSecret is a Secret in namespace velero holding, under credKey, a shared-credentials file.
type credSecret struct {
	Name, KeyID, SecretKey string
	// For says whose key it is, for the log.
	For string
}

func (c credSecret) body() []byte {
	return []byte(fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", c.KeyID, c.SecretKey))
}

// vslCred is a VolumeSnapshotLocation of the rig and the Secret its spec.credential names.
type vslCred struct{ VSL, Secret string }

func (r *rig) locations() []vslCred {
	return []vslCred{{vslName, secretA}, {vslNameB, secretB}, {vslNameBad, secretBad}}
}

// volumesB are account B's volumes, in namespace appNSB.
var volumesB = []volume{
	{ID: "vol-0e2e00000000000b1", AZ: "us-east-1a", PV: "pv-acct-b-intree", PVC: "data-b-intree", Type: "gp3"},
	{ID: "vol-0e2e00000000000b2", AZ: "us-east-1b", PV: "pv-acct-b-csi", PVC: "data-b-csi", Driver: ebsCSIDriver, Type: "gp3"},
	// In a zone other than the region's first, so that a restore that loses the zone shows.
	{ID: "vol-0e2e00000000000b3", AZ: "us-east-1c", PV: "pv-acct-b-auto", PVC: "data-b-auto", Driver: autoModeDriver, Type: "gp3", ZoneKey: autoModeZoneKey},
}

// randomSecret is a secret key of this run only, so that a match in a log can be nothing else.
func randomSecret(prefix string) string {
	b := make([]byte, 15)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// newCredentials makes the accounts' key pairs and the Secrets of the run.
func (r *rig) newCredentials() {
	a := awsAccount{Name: "A", ID: "111111111111", KeyID: "AKIAE2EACCOUNTA00001", Secret: randomSecret("e2eSecretA")}
	b := awsAccount{Name: "B", ID: "222222222222", KeyID: "AKIAE2EACCOUNTB00001", Secret: randomSecret("e2eSecretB")}
	c := awsAccount{Name: "C", ID: vaultAccountID, KeyID: "AKIAE2EVAULTOWNERC01", Secret: randomSecret("e2eSecretC")}
	r.accounts = []awsAccount{a, b, c}
	r.creds = map[string]credSecret{
		secretA:   {Name: secretA, KeyID: a.KeyID, SecretKey: a.Secret, For: "account A's key pair"},
		secretB:   {Name: secretB, KeyID: b.KeyID, SecretKey: b.Secret, For: "account B's key pair"},
		secretBad: {Name: secretBad, KeyID: a.KeyID, SecretKey: randomSecret("e2eWrongA"), For: "account A's key ID with a wrong secret key"},
		bslSecret: {Name: bslSecret, KeyID: "AKIAE2EBSLFAKES30001", SecretKey: randomSecret("e2eSecretS3"), For: "the BSL's key pair (fakes3 accepts any)"},
	}
}

func (r *rig) acctA() awsAccount { return r.accounts[0] }
func (r *rig) acctB() awsAccount { return r.accounts[1] }

// acctC is the vault account: no Secret of the cluster holds its key pair, which is its owner's.
func (r *rig) acctC() awsAccount { return r.accounts[2] }

// ec2As is an EC2 client of the simulator in region signing with acct's key pair: what a person
// holding that account's credentials uses behind Velero's back (the AWS CLI, a script).
func (r *rig) ec2As(acct awsAccount, region string) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:           region,
		BaseEndpoint:     aws.String(r.ec2URL),
		Credentials:      credentials.NewStaticCredentialsProvider(acct.KeyID, acct.Secret, ""),
		RetryMaxAttempts: 10,
	})
}

// simConfig adds the rig's accounts and the vault's roles to the simulator's config (replacing
// any in cfg). It returns the config to run and the same with the secret keys left out, to print.
func (r *rig) simConfig(cfg string) (full, shown []byte) {
	var m map[string]any
	if err := json.Unmarshal([]byte(cfg), &m); err != nil {
		r.t.Fatalf("simulator config %s: %v", cfg, err)
	}
	var accts, redacted []any
	for _, a := range r.accounts {
		accts = append(accts, map[string]any{"id": a.ID, "accessKeys": []any{map[string]any{"accessKeyId": a.KeyID, "secretAccessKey": a.Secret}}})
		redacted = append(redacted, map[string]any{"id": a.ID, "accessKeys": []any{map[string]any{"accessKeyId": a.KeyID, "secretAccessKey": "(not shown)"}}})
	}
	m["accounts"] = accts
	m["roles"] = vaultRoles()
	full, _ = json.Marshal(m)
	m["accounts"] = redacted
	shown, _ = json.Marshal(m)
	return full, shown
}

// createCredentialSecrets creates the Secrets of every location and of the BSL.
func (r *rig) createCredentialSecrets() {
	for _, n := range slices.Sorted(maps.Keys(r.creds)) {
		c := r.creds[n]
		must(r.t, r.c.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: veleroNS},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{credKey: c.body()},
		}))
		r.saw("Secret %s/%s key %s: [default] aws_access_key_id = %s, aws_secret_access_key = (%d characters, not shown): %s",
			veleroNS, c.Name, credKey, c.KeyID, len(c.SecretKey), c.For)
	}
}

// badRun is the backup through the location with the wrong secret key, created while account
// B's backup waits for its operations.
type badRun struct {
	name    string
	pl      *phaseLog
	created bool
}

func (r *rig) createBadBackup(bad *badRun, when string) {
	if bad.pl != nil {
		bad.pl.cancel()
	}
	bad.pl = r.watchPhases(bad.name, false)
	r.step("velero backup create %s --include-namespaces %s --snapshot-volumes --volume-snapshot-locations %s (%s; Secret %s: %s)",
		bad.name, appNS, vslNameBad, when, secretBad, r.creds[secretBad].For)
	out, err := r.velero("backup", "create", bad.name, "--include-namespaces", appNS, "--snapshot-volumes",
		"--volume-snapshot-locations", vslNameBad, "--storage-location", "default")
	r.saw("%s (err=%v)", firstLine(out), err)
	if err != nil {
		r.t.Errorf("velero backup create %s: %v\n%s", bad.name, err, out)
		return
	}
	bad.created = true
}

// accountBBackup backs up account B's namespace through location aws-async-b; while it waits for
// its operations, the backup through the bad location is created, and a plugin process's
// environment is checked.
func (r *rig) accountBBackup(sim simClient, bad *badRun) {
	t := r.t
	done := make(chan struct{})
	envSeen := make(chan []string, 1)
	go func() {
		// Plugin processes live for one reconcile: catch one and read its environment.
		defer close(envSeen)
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			for _, pid := range r.pluginPIDs() {
				env, err := process.Environ(pid)
				if err != nil {
					continue
				}
				envSeen <- append([]string{fmt.Sprintf("pid=%d", pid)}, env...)
				return
			}
		}
	}()
	bs := backupSpec{name: accountBBackup, ns: appNSB, vsl: vslNameB, vols: volumesB, acct: r.acctB()}
	bs.during = func(b *velerov1.Backup) {
		if b.Status.Phase == velerov1.BackupPhaseWaitingForPluginOperations && !bad.created && bad.pl == nil {
			r.createBadBackup(bad, "while "+accountBBackup+" waits for plugin operations")
		}
	}
	r.volumeBackup(sim, bs)
	close(done)
	if env, ok := <-envSeen; ok {
		pid, env := env[0], env[1:]
		r.saw("plugin process %s of the velero server, environment (AWS_*, KUBECONFIG, VELERO_NAMESPACE, TMPDIR): %s", pid, strings.Join(relevantEnv(env), " "))
		got := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
			"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
			if _, ok := got[k]; ok {
				t.Errorf("plugin process has %s in its environment: it must have no default AWS credentials", k)
			}
		}
		if got["KUBECONFIG"] != r.kubeconfig || got["VELERO_NAMESPACE"] != veleroNS {
			t.Errorf("plugin process has KUBECONFIG=%q VELERO_NAMESPACE=%q, want %q and %q", got["KUBECONFIG"], got["VELERO_NAMESPACE"], r.kubeconfig, veleroNS)
		}
	} else {
		r.saw("caught no plugin process to read its environment (they live for one reconcile)")
	}
	if !bad.created {
		t.Errorf("backup %s was not created while %s waited for plugin operations", bad.name, accountBBackup)
	}
}

// badCredentialsBackup checks the backup through the location whose Secret holds a wrong secret
// key: it fails with AuthFailure named, takes no snapshot, and leaves the other backups as they were.
func (r *rig) badCredentialsBackup(sim simClient, bad *badRun) {
	t := r.t
	if !bad.created {
		r.createBadBackup(bad, "on its own: it was not created during "+accountBBackup)
		if !bad.created {
			t.FailNow()
		}
	}
	defer bad.pl.cancel()
	b := r.waitBackupDone(bad.name, 5*time.Minute, nil)
	time.Sleep(500 * time.Millisecond)
	r.saw("backup %s phases observed by watch: %v", bad.name, bad.pl.get())
	r.saw("backup %s ended %s: operations attempted %d, completed %d, failed %d; volume snapshots attempted %d, completed %d; errors %d warnings %d",
		bad.name, b.Status.Phase, b.Status.BackupItemOperationsAttempted, b.Status.BackupItemOperationsCompleted,
		b.Status.BackupItemOperationsFailed, b.Status.VolumeSnapshotsAttempted, b.Status.VolumeSnapshotsCompleted,
		b.Status.Errors, b.Status.Warnings)
	if b.Status.Phase != velerov1.BackupPhasePartiallyFailed && b.Status.Phase != velerov1.BackupPhaseFailed {
		t.Errorf("backup %s ended %s, want PartiallyFailed or Failed", bad.name, b.Status.Phase)
	}
	d := r.mustVelero("backup", "describe", bad.name, "--details", "--colorized=false")
	r.saveDescribe(bad.name+"-final", d, true)
	logs, _ := r.velero("backup", "logs", bad.name)
	r.saveLog(bad.name+"-backup-logs", logs)

	failed := failedOpErrors(d)
	r.saw("operation errors Velero shows for %s (%d):", bad.name, len(failed))
	for _, e := range failed {
		r.saw("  %s", e)
		if !strings.Contains(e, "AuthFailure") {
			t.Errorf("operation error does not name AuthFailure: %s", e)
		}
	}
	if len(failed) != len(volumes) || b.Status.BackupItemOperationsFailed != len(volumes) {
		t.Errorf("%d failed operations in describe, %d in status, want %d (one per PV)", len(failed), b.Status.BackupItemOperationsFailed, len(volumes))
	}
	var errLines []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "level=error") {
			errLines = append(errLines, l)
		}
	}
	r.saw("error lines of `velero backup logs %s` (%d):\n%s", bad.name, len(errLines), indent(strings.Join(errLines, "\n")))
	auth := 0
	for _, l := range errLines {
		if strings.Contains(l, "AuthFailure") {
			auth++
		}
	}
	if auth < len(volumes) {
		t.Errorf("%d error lines of the backup log name AuthFailure, want at least one per PV (%d)", auth, len(volumes))
	}
	if b.Status.VolumeSnapshotsCompleted != 0 {
		t.Errorf("%d volume snapshots completed with a wrong secret key", b.Status.VolumeSnapshotsCompleted)
	}
	for _, a := range r.accounts {
		src, copies := backupSnapshots(sim, a.ID, bad.name)
		r.saw("simulator, account %s (%s): %d source snapshots, %d copies for backup %s (want none)", a.Name, a.ID, len(src), len(copies), bad.name)
		for _, s := range append(src, copies...) {
			t.Errorf("snapshot of backup %s in account %s: %v", bad.name, a.Name, s)
		}
	}
	accts := sim.stats().Accounts
	for _, id := range []string{r.acctA().ID, "unknown"} {
		if a, ok := accts[id]; ok {
			r.saw("simulator calls of account %s so far: %v", id, a.Calls)
		}
	}
	r.step("the other backups are unaffected")
	for _, n := range []string{"e2e-smoke", "e2e-main", accountBBackup} {
		o, err := r.getBackup(n)
		if err != nil {
			t.Errorf("backup %s: %v", n, err)
			continue
		}
		r.saw("backup %s: %s, operations completed %d, failed %d; errors %d", n, o.Status.Phase,
			o.Status.BackupItemOperationsCompleted, o.Status.BackupItemOperationsFailed, o.Status.Errors)
		if o.Status.Phase != velerov1.BackupPhaseCompleted || o.Status.BackupItemOperationsFailed != 0 {
			t.Errorf("backup %s is %s with %d failed operations, want Completed with none", n, o.Status.Phase, o.Status.BackupItemOperationsFailed)
		}
	}
}

// accountBRestore restores account B's backup in its own region: new volumes in account B, none
// in account A.
func (r *rig) accountBRestore(sim simClient, backup string) {
	t := r.t
	a, bAcct := r.acctA(), r.acctB()
	r.step("deleting namespace %s and its PVs", appNSB)
	r.deleteNamespace(appNSB, volumesB)
	r.saw("namespace %s and PVs %d gone", appNSB, len(volumesB))

	src, _ := backupSnapshots(sim, bAcct.ID, backup)
	srcIDs := map[string]bool{}
	for _, s := range src {
		srcIDs[s.ID] = true
	}
	volsBefore := map[string]bool{}
	countA := map[string]int{}
	for _, acct := range r.accounts {
		for _, region := range []string{srcRegion, copyRegion} {
			vs := sim.listIn("volumes", region, acct.ID)
			if acct.ID == a.ID {
				countA[region] = len(vs)
			}
			for _, v := range vs {
				volsBefore[v.ID] = true
			}
		}
	}

	name := accountBRestore
	r.step("velero restore create %s --from-backup %s (location %s, account B, region %s)", name, backup, vslNameB, srcRegion)
	_, d := r.restore(t, name, backup, len(volumesB))
	for _, fallback := range []string{"no Kubernetes API access", "default AWS credential"} {
		if strings.Contains(d, fallback) {
			t.Errorf("restore describe says %q: the restore action did not use the location's credentials", fallback)
		}
	}

	inB := map[string]simObject{}
	for _, v := range live(sim.listIn("volumes", srcRegion, bAcct.ID)) {
		inB[v.ID] = v
	}
	for _, region := range []string{srcRegion, copyRegion} {
		n := len(sim.listIn("volumes", region, a.ID))
		r.saw("simulator volumes of account A in %s: %d (before the restore: %d)", region, n, countA[region])
		if n != countA[region] {
			t.Errorf("account A's volumes in %s went from %d to %d during the restore of account B's backup", region, countA[region], n)
		}
	}
	for _, v := range volumesB {
		pv, wv, ok := r.restoredVolume(v, inB, volsBefore, "account B in "+srcRegion)
		if pv == nil {
			continue
		}
		if ok {
			if !srcIDs[wv.Source] {
				t.Errorf("volume %s of PV %s was created from %q, not from a snapshot of backup %s in account B", wv.ID, v.PV, wv.Source, backup)
			}
			if wv.State != "available" {
				t.Errorf("volume %s is %s, want available", wv.ID, wv.State)
			}
			if wv.AZ != v.AZ {
				t.Errorf("volume %s of PV %s was restored in %s; the backed-up volume, and the PV's node affinity (%s), are in %s",
					wv.ID, v.PV, wv.AZ, affinityString(pv.Spec.NodeAffinity), v.AZ)
			}
			for k, val := range pv.Labels {
				if strings.HasSuffix(k, "/zone") && val != wv.AZ {
					t.Errorf("PV %s label %s=%s, but its volume is in %s", v.PV, k, val, wv.AZ)
				}
			}
		}
		r.checkRestoredClaim(appNSB, v, name)
	}
}

// needle is a string that must not appear in any log.
type needle struct{ what, value string }

// checkNoSecretsInLogs stops the Velero server (so its log, with the plugins' lines, is complete)
// and searches every file the rig collected for the Secrets' secret keys and for the Secrets'
// content as the API holds it (base64).
func (r *rig) checkNoSecretsInLogs() {
	t := r.t
	r.step("stopping velero server (pid %d) so its log is complete; searching every collected log for the Secrets' credentials", r.server.cmd.Process.Pid)
	r.stop(r.server)
	var needles []needle
	keyIDs := map[string]string{}
	for _, n := range slices.Sorted(maps.Keys(r.creds)) {
		c := r.creds[n]
		needles = append(needles,
			needle{"secret key of Secret " + n, c.SecretKey},
			needle{"base64 content of Secret " + n, base64.StdEncoding.EncodeToString(c.body())})
		keyIDs[c.KeyID] += n + " "
	}
	// A leaked session token (the vault's roles have them) would show as the header that
	// carries it; the web identity token is a credential too; the vault owner's key pair was
	// never in the cluster.
	needles = append(needles, needle{"a session token header", "X-Amz-Security-Token"},
		needle{"the service account's web identity token", r.webIdentityToken()},
		needle{"the vault owner's secret key", r.acctC().Secret})

	files, size := 0, 0
	found := 0
	ids := map[string][]string{}
	err := filepath.WalkDir(r.logDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		size += len(b)
		text := string(b)
		rel, _ := filepath.Rel(r.logDir, path)
		for _, nd := range needles {
			if n := strings.Count(text, nd.value); n > 0 {
				found++
				t.Errorf("%s found %d times in %s", nd.what, n, path)
				for _, l := range strings.Split(text, "\n") {
					if strings.Contains(l, nd.value) {
						r.saw("  first line with it: %.300s", strings.ReplaceAll(l, nd.value, "(…)"))
						break
					}
				}
			}
		}
		for id := range keyIDs {
			if n := strings.Count(text, id); n > 0 {
				ids[id] = append(ids[id], fmt.Sprintf("%s×%d", rel, n))
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("reading the logs: %v", err)
	}
	r.saw("searched %d files (%d bytes) under %s for %d secret values (%d Secrets' secret keys and base64 content, any session token header, the web identity token, the vault owner's secret key): %d found",
		files, size, r.logDir, len(needles), len(r.creds), found)
	// Positive control: the same search finds the accounts' secret keys in the simulator's config
	// (the AWS side, not a log), so a clean result above is not a search that sees nothing.
	if b, err := os.ReadFile(filepath.Join(r.dir, "ec2sim.json")); err != nil {
		t.Errorf("positive control: %v", err)
	} else {
		ok := true
		for _, a := range r.accounts {
			if !strings.Contains(string(b), a.Secret) {
				ok = false
				t.Errorf("positive control: account %s's secret key not found in ec2sim.json: the search is broken", a.Name)
			}
		}
		if ok {
			r.saw("positive control: the same search finds every account's secret key in the simulator's config %s", filepath.Join(r.dir, "ec2sim.json"))
		}
	}
	if files == 0 {
		t.Errorf("no log files under %s", r.logDir)
	}
	for _, want := range []string{"velero-server.log", "cli.log"} {
		if _, err := os.Stat(filepath.Join(r.logDir, want)); err != nil {
			t.Errorf("log %s missing: %v", want, err)
		}
	}
	var idList []string
	for id := range keyIDs {
		idList = append(idList, id)
	}
	sort.Strings(idList)
	for _, id := range idList {
		where := "nowhere"
		if len(ids[id]) > 0 {
			where = strings.Join(ids[id], ", ")
		}
		r.saw("access key ID %s (Secret %s; an identifier, not a secret) appears in: %s", id, strings.TrimSpace(keyIDs[id]), where)
	}
	// The credentials files Velero and the plugin wrote (in the server's TMPDIR): names and modes.
	tmp := filepath.Join(r.dir, "tmp")
	_ = filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !credFile.MatchString(path) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(tmp, path)
		r.saw("credentials file in the server's TMPDIR: %s mode %v (%d bytes)", rel, fi.Mode().Perm(), fi.Size())
		return nil
	})
}

var credFile = regexp.MustCompile(`(credentials|velero-async-credentials)/`)
