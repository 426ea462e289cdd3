package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
	corev1api "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// Tests of which snapshot an operation follows: backups that reuse a name, two installs in one
// account, a source another tool filled with tags, credentials that cannot be had for a while,
// a deletion racing the copies, and Velero cancelling one operation.

const (
	// perVolumeInterval is EC2's minimum time between two snapshots of one volume.
	perVolumeInterval = 15 * time.Second
	// listingLag is the plugin's default wait for EC2 to list what it has just made.
	listingLag = 30 * time.Second
	// maxTags is EC2's limit of tags on a resource.
	maxTags = 50
)

// observerFunc adapts a function to harness.Observer.
type observerFunc func(harness.Status)

func (f observerFunc) Observe(s harness.Status) { f(s) }

// runBackup runs a backup named name of pvs through core; safe to call from any goroutine.
func runBackup(ctx context.Context, core *harness.Core, name string, pvs []*corev1api.PersistentVolume, loc *velerov1api.VolumeSnapshotLocation) (*harness.BackupResult, error) {
	return core.Backup(ctx, harness.BackupRequest{
		Name: name, Labels: map[string]string{"app": "integration"}, Location: loc, PVs: pvs,
	})
}

// simURL is the endpoint of the rig's simulator, as StartSimulator handed it to the plugin
// processes.
func simURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("AWS_ENDPOINT_URL_EC2")
	if u == "" {
		t.Fatal("AWS_ENDPOINT_URL_EC2 is not set: no simulator started")
	}
	return u
}

// plainEC2 is an EC2 client of the simulator in region, for what another tool does behind the
// plugin's back.
func plainEC2(t *testing.T, region string) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       region,
		BaseEndpoint: aws.String(simURL(t)),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIAOTHERTOOL", SecretAccessKey: "other-tool"}, nil
		}),
		RetryMaxAttempts: 20,
	})
}

func byID(snaps []ec2sim.Snapshot) map[string]ec2sim.Snapshot {
	out := make(map[string]ec2sim.Snapshot, len(snaps))
	for _, s := range snaps {
		out[s.ID] = s
	}
	return out
}

// copiesBySource groups the copies in region by the snapshot they were copied from.
func copiesBySource(sim *ec2sim.Simulator, region string) map[string][]ec2sim.Snapshot {
	out := map[string][]ec2sim.Snapshot{}
	for _, s := range sim.Snapshots(region) {
		if s.SourceSnapshotID != "" {
			out[s.SourceSnapshotID] = append(out[s.SourceSnapshotID], s)
		}
	}
	return out
}

// completedDescription is what Progress says of a completed operation with a copy.
var completedDescription = regexp.MustCompile(`^snapshot (snap-[0-9a-f]+) in \S+ and its copy (snap-[0-9a-f]+) in \S+ completed$`)

// tracked returns the source and copy a completed operation's description names, as
// `velero backup describe --details` shows them.
func tracked(op *harness.Operation) (source, copy string) {
	m := completedDescription.FindStringSubmatch(op.Status.Description)
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
}

func opsByPV(res *harness.BackupResult) map[string]*harness.Operation {
	out := map[string]*harness.Operation{}
	for _, op := range res.Operations {
		out[op.Resource.Name] = op
	}
	return out
}

// requireOwnSnapshots fails unless every PV of res has exactly one source tagged with the
// backup's UID, the one core recorded, completed, with exactly one completed copy carrying the
// same UID, and its operation names exactly those two. It returns the copies by PV.
func requireOwnSnapshots(t *testing.T, sim *ec2sim.Simulator, res *harness.BackupResult) map[string]ec2sim.Snapshot {
	t.Helper()
	uid := string(res.Backup.UID)
	sources := byID(sim.Snapshots(sourceRegion))
	copies := copiesBySource(sim, copyRegion)
	ops := opsByPV(res)
	tagged := map[string][]string{}
	for _, s := range sources {
		if s.SourceSnapshotID == "" && s.Tags[model.TagBackupUID] == uid {
			tagged[s.Tags[model.TagPV]] = append(tagged[s.Tags[model.TagPV]], s.ID)
		}
	}
	out := map[string]ec2sim.Snapshot{}
	for _, snap := range res.Snapshots {
		src, ok := sources[snap.SnapshotID]
		if ids := tagged[snap.PV]; len(ids) != 1 || !ok || ids[0] != snap.SnapshotID || src.State != "completed" {
			t.Errorf("%s: sources tagged with backup UID %s: %v, want only the recorded %s, completed (it is %q)", snap.PV, uid, ids, snap.SnapshotID, src.State)
			continue
		}
		cps := copies[snap.SnapshotID]
		if len(cps) != 1 || cps[0].State != "completed" || cps[0].Tags[model.TagBackupUID] != uid {
			t.Errorf("%s: copies of %s: %+v, want one completed copy tagged with backup UID %s", snap.PV, snap.SnapshotID, cps, uid)
			continue
		}
		out[snap.PV] = cps[0]
		op := ops[snap.PV]
		if op == nil {
			t.Errorf("%s: no operation", snap.PV)
			continue
		}
		if s, c := tracked(op); s != snap.SnapshotID || c != cps[0].ID {
			t.Errorf("%s: operation says %q, want it to name %s and its copy %s", snap.PV, op.Status.Description, snap.SnapshotID, cps[0].ID)
		}
	}
	return out
}

// A Backup removed without its snapshots leaves them in EC2; a new backup of the same name (a
// new UID, the same PVs) follows, copies, restores from and deletes only its own snapshots.
func TestReusedBackupNameFollowsOnlyTheNewSnapshots(t *testing.T) {
	r := newRig(t, rig.FastConfig(1), 6)
	loc := location(copyRegion)
	first := r.backup(loc, 0)
	requireCompleted(t, first, len(r.PVs))
	requireOneEach(t, r, first, copyRegion)
	oldSources, oldCopies := byID(r.Sim.Snapshots(sourceRegion)), byID(r.Sim.Snapshots(copyRegion))

	// EC2 takes one snapshot of a volume per 15 s; the second backup should not need to wait.
	time.Sleep(time.Until(first.Backup.Status.StartTimestamp.Add(first.ItemPhase + perVolumeInterval + 200*time.Millisecond)))
	second := r.backup(loc, 0)
	if second.Backup.Name != first.Backup.Name || second.Backup.UID == first.Backup.UID {
		t.Fatalf("backups %s/%s and %s/%s: want one name, two UIDs", first.Backup.Name, first.Backup.UID, second.Backup.Name, second.Backup.UID)
	}
	requireCompleted(t, second, len(r.PVs))
	for _, snap := range second.Snapshots {
		if _, old := oldSources[snap.SnapshotID]; old {
			t.Errorf("%s: the second backup recorded %s, a snapshot of the first", snap.PV, snap.SnapshotID)
		}
	}
	newCopies := requireOwnSnapshots(t, r.Sim, second)

	// The first backup's snapshots and copies are as it left them: no copy, tag or deletion.
	requireUntouched(t, r.Sim, oldSources, oldCopies)
	if n := r.Sim.Stats().Total("CopySnapshot", "ok"); n != 2*len(r.PVs) {
		t.Errorf("%d copies made by the two backups, want %d: one per new source", n, 2*len(r.PVs))
	}

	// A recovery cluster in the copy region restores the second backup from its own copies.
	restore, err := r.Core.Restore(t.Context(), harness.RestoreRequest{Name: "restore-reused", Backup: second, Location: drLocation()})
	if err != nil {
		t.Fatal(err)
	}
	if !restore.Succeeded() || len(restore.Volumes) != len(r.PVs) {
		t.Fatalf("restore phase %s with %d volumes, want Completed with %d; errors %v %v", restore.Restore.Status.Phase,
			len(restore.Volumes), len(r.PVs), restore.ItemErrors, restore.OperationErrors)
	}
	restored := volumesByID(r.Sim.Volumes(copyRegion))
	for _, rv := range restore.Volumes {
		want, ok := newCopies[rv.PV]
		if v := restored[rv.VolumeID]; !ok || v.SnapshotID != want.ID {
			t.Errorf("%s: volume %s made from %q, want the second backup's copy %s (old copies: %v)", rv.PV, rv.VolumeID, v.SnapshotID, want.ID, slices.Sorted(maps.Keys(oldCopies)))
		}
	}

	// Deleting the second backup leaves the first one's snapshots and copies.
	if err := r.Core.DeleteBackup(second, loc); err != nil {
		t.Fatalf("delete: %v", err)
	}
	requireUntouched(t, r.Sim, oldSources, oldCopies)
	if left := rig.SnapshotsLeft(r.Sim, sourceRegion, copyRegion); left[sourceRegion] != len(oldSources) || left[copyRegion] != len(oldCopies) {
		t.Errorf("snapshots left after deleting the second backup: %v, want only the first backup's %d and %d", left, len(oldSources), len(oldCopies))
	}
}

// requireUntouched fails unless every snapshot of before still exists, in the same state and
// with the same tags.
func requireUntouched(t *testing.T, sim *ec2sim.Simulator, before ...map[string]ec2sim.Snapshot) {
	t.Helper()
	now := byID(append(sim.Snapshots(sourceRegion), sim.Snapshots(copyRegion)...))
	for _, snaps := range before {
		for id, was := range snaps {
			is, ok := now[id]
			switch {
			case !ok:
				t.Errorf("%s (%s of %s) is gone", id, was.Region, was.Tags[model.TagPV])
			case is.State != was.State || is.DeletePending || fmt.Sprint(is.Tags) != fmt.Sprint(was.Tags):
				t.Errorf("%s in %s changed: %s %v → %s (deleting %v) %v", id, was.Region, was.State, was.Tags, is.State, is.DeletePending, is.Tags)
			}
		}
	}
}

// Two Velero installs in one account, each with a backup named nightly of its own volumes, at
// once: each follows, copies and deletes only its own snapshots.
func TestTwoInstallsOneBackupNameOneAccount(t *testing.T) {
	r := newRig(t, rig.FastConfig(1), 0)
	loc := location(copyRegion)
	installs := []struct {
		name string
		core *harness.Core
		pvs  []*corev1api.PersistentVolume
	}{
		{"a", r.Core, fixture.Fleet{Region: sourceRegion, Count: 12, Prefix: "cluster-a-pv"}.Seed(r.Sim)},
		{"b", r.newCore(), fixture.Fleet{Region: sourceRegion, Count: 12, Prefix: "cluster-b-pv"}.Seed(r.Sim)},
	}
	results := make([]*harness.BackupResult, len(installs))
	errs := make([]error, len(installs))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i, in := range installs {
		wg.Go(func() { results[i], errs[i] = runBackup(ctx, in.core, "nightly", in.pvs, loc) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	own := make([]map[string]ec2sim.Snapshot, len(installs))
	for i, in := range installs {
		res := results[i]
		requireCompleted(t, res, len(in.pvs))
		for _, snap := range res.Snapshots {
			if !strings.HasPrefix(snap.PV, "cluster-"+in.name+"-") {
				t.Errorf("install %s recorded a snapshot of %s", in.name, snap.PV)
			}
		}
		requireOwnSnapshots(t, r.Sim, res)
		own[i] = map[string]ec2sim.Snapshot{}
		for _, s := range append(r.Sim.Snapshots(sourceRegion), r.Sim.Snapshots(copyRegion)...) {
			if s.Tags[model.TagBackupUID] == string(res.Backup.UID) {
				own[i][s.ID] = s
			}
		}
		if len(own[i]) != 2*len(in.pvs) {
			t.Errorf("install %s: %d snapshots and copies carry its backup's UID, want %d", in.name, len(own[i]), 2*len(in.pvs))
		}
	}
	sources := byID(r.Sim.Snapshots(sourceRegion))
	for _, c := range r.Sim.Snapshots(copyRegion) {
		if src, ok := sources[c.SourceSnapshotID]; !ok || c.Tags[model.TagBackupUID] != src.Tags[model.TagBackupUID] {
			t.Errorf("copy %s of %s has backup UID %q, its source %q", c.ID, c.SourceSnapshotID, c.Tags[model.TagBackupUID], src.Tags[model.TagBackupUID])
		}
	}
	if n := r.Sim.Stats().Total("CopySnapshot", "ok"); n != 24 {
		t.Errorf("%d copies made, want 24: one per source", n)
	}

	if err := installs[0].core.DeleteBackup(results[0], loc); err != nil {
		t.Fatalf("delete install a's backup: %v", err)
	}
	requireUntouched(t, r.Sim, own[1])
	if left := rig.SnapshotsLeft(r.Sim, sourceRegion, copyRegion); left[sourceRegion] != 12 || left[copyRegion] != 12 {
		t.Errorf("after deleting install a's backup: %v left, want install b's 12 sources and 12 copies", left)
	}
	if err := installs[1].core.DeleteBackup(results[1], loc); err != nil {
		t.Fatalf("delete install b's backup: %v", err)
	}
	if left := rig.SnapshotsLeft(r.Sim, sourceRegion, copyRegion); left[sourceRegion] != 0 || left[copyRegion] != 0 {
		t.Errorf("after deleting both backups: %v left", left)
	}
}

// Another tool fills one source snapshot up to EC2's 50 tags while the backup waits for its
// operations: that operation fails naming the snapshot and EC2's refusal; the 29 others copy
// as usual.
func TestSourceWithFiftyTagsFailsOnlyItsOperation(t *testing.T) {
	r := newRig(t, rig.FastConfig(1), 30)
	loc := location(copyRegion)
	target := r.PVs[len(r.PVs)-1].Name // snapshotted last: still pending when the items are done
	var targetID, premise string
	r.Core.Observer = observerFunc(func(s harness.Status) {
		if targetID != "" || s.Phase != string(velerov1api.BackupPhaseWaitingForPluginOperations) {
			return
		}
		for _, snap := range s.Snapshots {
			if snap.PV == target {
				targetID = snap.SnapshotID
			}
		}
		src := byID(r.Sim.Snapshots(sourceRegion))[targetID]
		if src.State != "pending" {
			premise = fmt.Sprintf("source %s of %s is %q when the items are done, want pending", targetID, target, src.State)
		}
		var tags []types.Tag
		for i := len(src.Tags); i < maxTags; i++ {
			tags = append(tags, types.Tag{Key: aws.String(fmt.Sprintf("other-tool/key-%02d", i)), Value: aws.String("x")})
		}
		if _, err := plainEC2(t, sourceRegion).CreateTags(context.Background(), &ec2.CreateTagsInput{Resources: []string{targetID}, Tags: tags}); err != nil {
			premise = fmt.Sprintf("filling the tags of %s: %v", targetID, err)
		}
	})
	res := r.backup(loc, 0)
	if premise != "" {
		t.Fatal(premise)
	}
	if n := len(byID(r.Sim.Snapshots(sourceRegion))[targetID].Tags); n != maxTags {
		t.Fatalf("source %s of %s has %d tags, want %d", targetID, target, n, maxTags)
	}
	if res.Backup.Status.Phase != velerov1api.BackupPhasePartiallyFailed {
		t.Fatalf("backup phase %s, want PartiallyFailed; operation errors %v", res.Backup.Status.Phase, res.OperationErrors)
	}
	failed := failedOps(res)
	if msg, ok := failed[target]; len(failed) != 1 || !ok || !strings.Contains(msg, targetID) || !strings.Contains(msg, "TagLimitExceeded") {
		t.Errorf("failed operations %v, want only %s's, naming %s and TagLimitExceeded", failed, target, targetID)
	}
	t.Logf("%s failed: %s", target, failed[target])
	if st := res.Backup.Status; st.BackupItemOperationsCompleted != len(r.PVs)-1 || st.BackupItemOperationsFailed != 1 {
		t.Errorf("operations %d completed, %d failed, want %d and 1", st.BackupItemOperationsCompleted, st.BackupItemOperationsFailed, len(r.PVs)-1)
	}
	sources, copies := r.PerPV(sourceRegion, res.Backup.Name, false), r.PerPV(copyRegion, res.Backup.Name, true)
	for _, snap := range res.Snapshots {
		src, cps := sources[snap.PV], copies[snap.PV]
		if len(src) != 1 || src[0].ID != snap.SnapshotID {
			t.Errorf("%s: sources %v, want only %s", snap.PV, src, snap.SnapshotID)
		}
		want := 1
		if snap.PV == target {
			want = 0
		}
		if len(cps) != want || want == 1 && (cps[0].State != "completed" || cps[0].SourceSnapshotID != snap.SnapshotID) {
			t.Errorf("%s: copies %+v, want %d completed copy of %s", snap.PV, cps, want, snap.SnapshotID)
		}
	}
	if n := r.Sim.Stats().Total("CopySnapshot", "ok"); n != len(r.PVs)-1 {
		t.Errorf("%d copies made, want %d", n, len(r.PVs)-1)
	}
	if err := r.Core.DeleteBackup(res, loc); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if left := rig.SnapshotsLeft(r.Sim, sourceRegion, copyRegion); left[sourceRegion] != 0 || left[copyRegion] != 0 {
		t.Errorf("snapshots left after deletion: %v", left)
	}
}

// With web identity credentials (IRSA), the identity provider failing for 20 s while the
// operations are under way fails no operation: the plugin waits, says why, and finishes.
func TestIdentityProviderOutageFailsNoOperation(t *testing.T) {
	const (
		account = "111111111111"
		role    = "arn:aws:iam::" + account + ":role/velero"
		outage  = 20 * time.Second
		code    = "IDPCommunicationError"
	)
	cfg := rig.FastConfig(1)
	cfg.SnapshotDuration = ec2sim.Range(time.Second, 3*time.Second)
	cfg.CopyDuration = ec2sim.Range(2*time.Second, 4*time.Second)
	cfg.Accounts = []ec2sim.Account{{ID: account, AccessKeys: []ec2sim.AccessKey{{AccessKeyID: "AKIAACCOUNTKEY000001", SecretAccessKey: "account-secret"}}}}
	cfg.Roles = []ec2sim.Role{{ARN: role, Trust: ec2sim.Trust{WebIdentitySubjects: []string{"*"}}}}
	r := newRig(t, cfg, 20)
	loc := location(copyRegion)

	// The plugin processes inherit this environment: web identity only, no static keys.
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ2ZWxlcm8ifQ.c2ln"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_ROLE_ARN": role, "AWS_WEB_IDENTITY_TOKEN_FILE": token, "AWS_ROLE_SESSION_NAME": "velero",
		"AWS_ENDPOINT_URL_STS":        simURL(t),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "no-credentials"), "AWS_CONFIG_FILE": filepath.Join(dir, "no-config"),
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "") // restored after the test
		_ = os.Unsetenv(k)
	}

	idpFailures := func() int { return r.Sim.Stats().Calls["sts"]["AssumeRoleWithWebIdentity"][code] }
	var (
		mu                          sync.Mutex
		outageStart, outageEnd      time.Time
		failuresBefore, failuresEnd int
		reconcileStart              time.Time
		slow                        []string // reconciles that took over 2 s
	)
	r.Core.Hooks.BeforeReconcile = func(int) { reconcileStart = time.Now() }
	r.Core.Observer = observerFunc(func(s harness.Status) {
		if s.Reconciles == 0 {
			return
		}
		if d := time.Since(reconcileStart); d > 2*time.Second {
			slow = append(slow, fmt.Sprintf("reconcile %d took %s, from %s after the start", s.Reconciles, d.Round(time.Millisecond),
				(s.Elapsed-d).Round(time.Millisecond)))
		}
		mu.Lock()
		defer mu.Unlock()
		if !outageStart.IsZero() {
			return
		}
		// Some copies in flight, others not started yet.
		if n := len(r.Sim.Snapshots(copyRegion)); n == 0 || n == len(r.PVs) {
			return
		}
		failuresBefore = idpFailures()
		r.Sim.SetFaults(ec2sim.Faults{IdentityProviderError: code})
		outageStart = time.Now()
		time.AfterFunc(outage, func() {
			mu.Lock()
			defer mu.Unlock()
			r.Sim.SetFaults(ec2sim.Faults{})
			outageEnd, failuresEnd = time.Now(), idpFailures()
		})
	})
	res := r.backup(loc, 0)
	mu.Lock()
	start, end := outageStart, outageEnd
	mu.Unlock()
	if start.IsZero() {
		t.Fatalf("the outage never began: no reconcile saw some copies started and others not")
	}
	requireCompleted(t, res, len(r.PVs))
	requireOneEach(t, r, res, copyRegion)
	finished := res.Backup.Status.CompletionTimestamp.Time
	if end.IsZero() || finished.Before(end) {
		t.Errorf("backup completed at %s, before the outage of %s–%s ended", finished.Format(time.StampMilli), start.Format(time.StampMilli), end.Format(time.StampMilli))
	}
	if failuresBefore != 0 || failuresEnd == 0 {
		t.Errorf("STS answered %s %d times before the outage and %d by its end, want 0 and some", code, failuresBefore, failuresEnd)
	}
	st := r.Sim.Stats()
	if n := st.Total("", "AuthFailure"); n != 0 {
		t.Errorf("EC2 answered AuthFailure %d times: the plugin signed with something other than its STS session", n)
	}
	if n := st.Accounts[account].Total("CopySnapshot", "ok"); n != len(r.PVs) {
		t.Errorf("%d copies made in account %s with the role's sessions, want %d", n, account, len(r.PVs))
	}
	// What `velero backup describe --details` showed while the plugin waited.
	said := 0
	for _, op := range res.Operations {
		for _, p := range op.History {
			if strings.Contains(p.Description, "obtaining AWS credentials") {
				said++
				break
			}
		}
	}
	if said == 0 {
		t.Errorf("no operation's description said it was waiting for credentials during the outage")
	}
	t.Logf("backup took %s over %d reconciles; outage %s from %s after the start; STS answers %v; %d operations described the wait; %v",
		res.Total.Round(time.Millisecond), res.Reconciles, outage, start.Sub(res.Backup.Status.StartTimestamp.Time).Round(time.Millisecond),
		st.Calls["sts"], said, slow)
}

// A backup deleted (through another plugin manager, as the deletion controller does) while its
// operations keep starting copies in the first: nothing is left in either region.
func TestDeletionWhileCopiesAreStartingLeavesNothing(t *testing.T) {
	cfg := rig.FastConfig(1)
	cfg.SnapshotDuration = ec2sim.Range(300*time.Millisecond, 5*time.Second)
	cfg.CopyDuration = ec2sim.Fixed(6 * time.Second)
	// Latency makes the deletion last several reconciles of the first core; new copies are
	// unlisted for a while, so the deletion may not see a copy started just before it looks.
	cfg.Faults.Latency = ec2sim.Range(10*time.Millisecond, 40*time.Millisecond)
	cfg.Faults.InvisibleFor = ec2sim.Range(0, time.Second)
	r := newRig(t, cfg, 24)
	loc := location(copyRegion)
	deleter := r.newCore()

	type deletion struct {
		err             error
		inFlight, ahead int // copies in flight and sources not copied yet when it began
		took            time.Duration
		copiesBefore    int // copies started before it began
		reconciles      int // reconciles of the first core while it ran
	}
	done := make(chan deletion, 1)
	var once sync.Once
	var reconciles atomic.Int64
	r.Core.Observer = observerFunc(func(s harness.Status) {
		reconciles.Store(int64(s.Reconciles))
		if s.Reconciles == 0 {
			return
		}
		copies := copiesBySource(r.Sim, copyRegion)
		if len(copies) < 3 || len(copies) > len(r.PVs)-8 {
			return
		}
		once.Do(func() {
			d := deletion{ahead: len(r.PVs) - len(copies), copiesBefore: r.Sim.Stats().Total("CopySnapshot", "ok"), reconciles: -s.Reconciles}
			for _, cs := range copies {
				if cs[0].State == "pending" {
					d.inFlight++
				}
			}
			recorded := &harness.BackupResult{Snapshots: s.Snapshots}
			go func() {
				start := time.Now()
				d.err = deleter.DeleteBackup(recorded, loc)
				d.took = time.Since(start)
				d.reconciles += int(reconciles.Load())
				done <- d
			}()
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	backupDone := make(chan error, 1)
	go func() {
		_, err := r.Core.Backup(ctx, harness.BackupRequest{Name: "deleted-while-copying", Location: loc, PVs: r.PVs})
		backupDone <- err
	}()
	var d deletion
	select {
	case d = <-done:
	case err := <-backupDone:
		t.Fatalf("backup ended (%v) before its deletion began", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the deletion never began or never ended")
	}
	if d.err != nil {
		t.Errorf("delete: %v", d.err)
	}
	if d.inFlight == 0 || d.ahead == 0 || d.reconciles < 2 {
		t.Errorf("deletion began with %d copies in flight and %d sources not copied yet and ran through %d reconciles of the first core, want some of each and 2 or more",
			d.inFlight, d.ahead, d.reconciles)
	}
	// The first core goes on reconciling for a while after the deletion, then the backup stops.
	time.Sleep(3 * time.Second)
	cancel()
	if err := <-backupDone; !errors.Is(err, context.Canceled) {
		t.Errorf("backup ended with %v, want it stopped", err)
	}
	// Every plugin process is gone now, so nothing can start a copy any more. What is left must
	// be deleted already and only waiting for EC2 to finish it.
	for _, region := range []string{sourceRegion, copyRegion} {
		for _, s := range r.Sim.Snapshots(region) {
			if !s.DeletePending {
				t.Errorf("left in %s: %s of %s, %s, tags %v", region, s.ID, s.Tags[model.TagPV], s.State, s.Tags)
			}
		}
	}
	waitFor(t, 15*time.Second, func() bool {
		left := rig.SnapshotsLeft(r.Sim, sourceRegion, copyRegion)
		return left[sourceRegion] == 0 && left[copyRegion] == 0
	}, "pending snapshots deleted by the backup's deletion to go")
	t.Logf("deletion began with %d copies in flight and %d sources not copied yet and took %s over %d reconciles of the first core; copies started: %d before it, %d in all",
		d.inFlight, d.ahead, d.took.Round(time.Millisecond), d.reconciles, d.copiesBefore, r.Sim.Stats().Total("CopySnapshot", "ok"))
}

// Velero cancels one operation on its timeout while its copy is pending; the others go on for
// longer than the plugin's listing lag after that. The pending copy is deleted and the source
// is never copied again; the others complete.
func TestCancelledOperationIsNeverCopiedAgain(t *testing.T) {
	cfg := rig.FastConfig(1)
	cfg.SnapshotDuration = ec2sim.Fixed(500 * time.Millisecond)
	// 21 volumes: the first 20 copies fill EC2's slots; the last one is copied when they are
	// done, so the backup outlasts both the cancelled copy and the listing lag.
	cfg.CopyDuration = ec2sim.Fixed(17 * time.Second)
	r := newRig(t, cfg, 21)
	target := r.PVs[0].Name // snapshotted first: in the first wave of copies
	sourceOf := func() (src ec2sim.Snapshot, copies []ec2sim.Snapshot) {
		for _, s := range r.Sim.Snapshots(sourceRegion) {
			if s.Tags[model.TagPV] == target {
				src = s
			}
		}
		return src, copiesBySource(r.Sim, copyRegion)[src.ID]
	}
	var (
		cancelledAt, copyGoneAt time.Time
		sourceID                string
		violations              = map[string]string{} // copy ID -> what was wrong when first seen
		deletedAfterCancel      bool
	)
	r.Core.Hooks.Expire = func(_ int, op *harness.Operation) bool {
		if op.Resource.Name != target || !cancelledAt.IsZero() {
			return false
		}
		src, copies := sourceOf()
		if len(copies) != 1 || copies[0].State != "pending" {
			return false
		}
		cancelledAt, sourceID = time.Now(), src.ID
		return true
	}
	r.Core.Observer = observerFunc(func(s harness.Status) {
		if cancelledAt.IsZero() {
			return
		}
		_, copies := sourceOf()
		for _, c := range copies {
			if _, seen := violations[c.ID]; !c.DeletePending && !seen {
				violations[c.ID] = fmt.Sprintf("reconcile %d: copy %s of the cancelled %s is %s and not being deleted", s.Reconciles, c.ID, sourceID, c.State)
			} else if c.DeletePending {
				deletedAfterCancel = true
			}
		}
		if len(copies) == 0 && copyGoneAt.IsZero() {
			copyGoneAt = time.Now()
		}
	})
	res := r.backup(location(copyRegion), 0)
	finished := time.Now()
	if cancelledAt.IsZero() {
		t.Fatalf("%s was never cancelled: its copy was never seen pending", target)
	}
	if copyGoneAt.IsZero() || finished.Sub(copyGoneAt) < time.Second || finished.Sub(cancelledAt) < listingLag+time.Second {
		t.Errorf("test premise: the backup ended %s after the cancel and %s after the cancelled copy went, want over %s and 1s",
			finished.Sub(cancelledAt).Round(time.Millisecond), finished.Sub(copyGoneAt).Round(time.Millisecond), listingLag+time.Second)
	}
	if res.Backup.Status.Phase != velerov1api.BackupPhasePartiallyFailed {
		t.Errorf("backup phase %s, want PartiallyFailed on the cancelled operation", res.Backup.Status.Phase)
	}
	failed := failedOps(res)
	if len(failed) != 1 || failed[target] != "Asynchronous action timed out" {
		t.Errorf("failed operations %v, want only %s, timed out", failed, target)
	}
	for _, op := range res.Operations {
		if op.Resource.Name != target && op.Status.Phase != itemoperation.OperationPhaseCompleted {
			t.Errorf("%s: %s %q, want Completed", op.Resource.Name, op.Status.Phase, op.Status.Error)
		}
	}
	if !deletedAfterCancel {
		t.Errorf("the pending copy of %s was not seen being deleted after the cancel", sourceID)
	}
	for _, id := range slices.Sorted(maps.Keys(violations)) {
		t.Error(violations[id])
	}
	src, copies := sourceOf()
	if src.ID != sourceID || src.State != "completed" || src.Tags[model.TagCopyCancelled] == "" {
		t.Errorf("source of %s: %s %s tags %v, want %s kept, completed, marked copy-cancelled", target, src.ID, src.State, src.Tags, sourceID)
	}
	if len(copies) != 0 {
		t.Errorf("copies of the cancelled %s at the end: %+v", sourceID, copies)
	}
	others := r.PerPV(copyRegion, res.Backup.Name, true)
	for _, pv := range r.PVs[1:] {
		if cps := others[pv.Name]; len(cps) != 1 || cps[0].State != "completed" {
			t.Errorf("%s: copies %+v, want one completed", pv.Name, cps)
		}
	}
	if n := r.Sim.Stats().Total("CopySnapshot", "ok"); n != len(r.PVs) {
		t.Errorf("%d copies made, want %d: the cancelled one's only once", n, len(r.PVs))
	}
	t.Logf("cancelled %s %s into the backup; its copy went %s later; the backup ran %s past the cancel",
		target, cancelledAt.Sub(res.Backup.Status.StartTimestamp.Time).Round(time.Millisecond),
		copyGoneAt.Sub(cancelledAt).Round(time.Millisecond), finished.Sub(cancelledAt).Round(time.Millisecond))
}
