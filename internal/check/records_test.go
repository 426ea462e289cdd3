package check

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/vault"
)

func TestDecideRecords(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	backup := func(name string, phase velerov1.BackupPhase, ago time.Duration) velerov1.Backup {
		b := velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: velerov1.BackupStatus{Phase: phase}}
		if ago > 0 {
			b.Status.CompletionTimestamp = &metav1.Time{Time: now.Add(-ago)}
		}
		return b
	}
	// Backups: the newest Completed one old enough is daily-2; daily-3 is within the allowance,
	// failed-4 failed.
	backups := []velerov1.Backup{
		backup("daily-1", velerov1.BackupPhaseCompleted, 49*time.Hour),
		backup("daily-2", velerov1.BackupPhaseCompleted, 25*time.Hour),
		backup("daily-3", velerov1.BackupPhaseCompleted, replicationAllowance/2),
		backup("failed-4", velerov1.BackupPhaseFailed, 2*time.Hour),
	}
	governance30 := vault.Lock{Enabled: true, Mode: model.LockModeGovernance, Days: 30}
	snapshotLock := model.Lock{Mode: model.LockModeGovernance, Days: 30}
	records := map[string]time.Time{"daily-1": now.Add(-48 * time.Hour), "daily-2": now.Add(-24 * time.Hour)}
	s3Error := func(problem vault.Problem, code string) error {
		return &vault.ReadError{Problem: problem, Code: code, Err: &smithy.GenericAPIError{Code: code}}
	}
	base := func(edit func(*recordFacts)) recordFacts {
		f := recordFacts{bucket: model.VaultBucket{Name: "velero-vault", Prefix: "cluster-a", Region: "us-west-2"}, snapshotLock: snapshotLock,
			read: vault.Bucket{Lock: governance30, Records: records}, backups: backups, now: now}
		edit(&f)
		return f
	}
	type line struct {
		status Status
		has    []string // substrings of its detail and fix
	}
	tests := []struct {
		name  string
		facts recordFacts
		want  []line
	}{
		{name: "records present", facts: base(func(*recordFacts) {}), want: []line{
			{Pass, []string{"governance for 30 days", "not shorter nor weaker"}},
			{Pass, []string{"record of backup daily-2", "2 backup records under cluster-a/backups/"}}}},
		{name: "bucket missing", facts: base(func(f *recordFacts) { f.readErr = s3Error(vault.Missing, "NoSuchBucket") }), want: []line{
			{Fail, []string{"does not exist in us-west-2", "NoSuchBucket", "create it in the vault account with Object Lock", "vaultBucket"}}}},
		{name: "bucket not readable with the vault credentials", facts: base(func(f *recordFacts) { f.readErr = s3Error(vault.Refused, "AccessDenied") }), want: []line{
			{Fail, []string{"not readable with the vault credentials", "AccessDenied", "s3:ListBucket and s3:GetBucketObjectLockConfiguration on arn:aws:s3:::velero-vault"}}}},
		{name: "bucket in another region", facts: base(func(f *recordFacts) { f.readErr = s3Error(vault.Refused, "AuthorizationHeaderMalformed") }), want: []line{
			{Fail, []string{"is not in us-west-2", "set vaultBucketRegion"}}}},
		{name: "S3 not reachable", facts: base(func(f *recordFacts) {
			f.readErr = &vault.ReadError{Problem: vault.Unreachable, Err: errors.New("dial tcp: i/o timeout")}
		}), want: []line{{Fail, []string{"not readable: dial tcp", "make S3 in us-west-2 reachable"}}}},
		{name: "Object Lock off", facts: base(func(f *recordFacts) { f.read.Lock = vault.Lock{} }), want: []line{
			{Fail, []string{"Object Lock off", `put-object-lock-configuration --bucket velero-vault`, `"Mode": "GOVERNANCE", "Days": 30`}},
			{Pass, []string{"daily-2"}}}},
		{name: "Object Lock without a default retention", facts: base(func(f *recordFacts) { f.read.Lock = vault.Lock{Enabled: true} }), want: []line{
			{Fail, []string{"without a default retention", "put-object-lock-configuration"}}, {Pass, nil}}},
		{name: "default retention shorter than the snapshot lock", facts: base(func(f *recordFacts) { f.read.Lock.Days = 7 }), want: []line{
			{Fail, []string{"7 days, shorter than the vault copies' 30-day lock", `"Days": 30`}}, {Pass, nil}}},
		{name: "governance retention under compliance snapshot locks", facts: base(func(f *recordFacts) { f.snapshotLock.Mode = model.LockModeCompliance }), want: []line{
			{Fail, []string{"weaker than the vault copies' compliance lock", `"Mode": "COMPLIANCE"`}}, {Pass, nil}}},
		{name: "compliance retention under governance snapshot locks", facts: base(func(f *recordFacts) { f.read.Lock.Mode = model.LockModeCompliance }), want: []line{
			{Pass, []string{"compliance for 30 days"}}, {Pass, nil}}},
		{name: "no snapshot lock: any default retention", facts: base(func(f *recordFacts) { f.snapshotLock = model.Lock{}; f.read.Lock.Days = 1 }), want: []line{
			{Pass, []string{"governance for 1 day |"}}, {Pass, nil}}},
		{name: "records stale", facts: base(func(f *recordFacts) { f.read.Records = map[string]time.Time{"daily-1": now.Add(-48 * time.Hour)} }), want: []line{
			{Pass, nil},
			{Fail, []string{"no record of backup daily-2", "the records are stale", "1 backup record under cluster-a/backups/", "get-bucket-replication"}}}},
		{name: "no backup older than the replication allowance yet", facts: base(func(f *recordFacts) { f.backups = backups[2:] }), want: []line{
			{Pass, nil}, {NotChecked, []string{"no Completed backup of the location older than 1h"}}}},
		{name: "Backups not readable", facts: base(func(f *recordFacts) {
			f.backupsProblem = newUnreadable("Velero's Backups are not readable", "list on backups.velero.io in namespace velero",
				apierrors.NewForbidden(schema.GroupResource{Group: "velero.io", Resource: "backups"}, "", errors.New("no")))
		}), want: []line{{Pass, nil}, {Incomplete, []string{"2 backup records", "grant list on backups.velero.io"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideRecords(tt.facts)
			if len(got) != len(tt.want) {
				t.Fatalf("findings %+v, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				text := got[i].Detail + " | " + got[i].Fix
				if got[i].Status != w.status {
					t.Errorf("finding %d: %s %q, want %s", i, got[i].Status, text, w.status)
				}
				for _, s := range w.has {
					if !strings.Contains(text, s) {
						t.Errorf("finding %d: %q lacks %q", i, text, s)
					}
				}
			}
		})
	}
}

// The check reads the vault bucket with the vault's credentials, through S3 as the SDK speaks
// it: the records replicated from the source account's bucket are found; the same bucket gone
// is named.
func TestVaultRecordsReadsTheBucketWithTheVaultCredentials(t *testing.T) {
	const sourceAccount, vaultAccount = "111111111111", "222222222222"
	vaultKey := ec2sim.AccessKey{AccessKeyID: "AKIAVAULT", SecretAccessKey: "secret-of-vault"}
	srv, err := ec2sim.Start(ec2sim.Config{Accounts: []ec2sim.Account{{ID: sourceAccount}, {ID: vaultAccount, AccessKeys: []ec2sim.AccessKey{vaultKey}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	srv.OnlyThis(t)
	dir := t.TempDir()
	creds := filepath.Join(dir, "vault")
	if err := os.WriteFile(creds, vaultKey.CredentialsFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	sim := srv.Sim
	lock := &ec2sim.ObjectLock{Mode: "GOVERNANCE", Days: 30}
	for _, err := range []error{
		sim.CreateBucket(sourceAccount, "velero-backups", "us-east-1", nil),
		sim.CreateBucket(vaultAccount, "velero-vault", "us-west-2", lock),
		sim.ReplicateBucket("velero-backups", "velero-vault", 0),
		sim.PutObject("velero-backups", "backups/daily-1/velero-backup.json", []byte("{}")),
		sim.PutObject("velero-backups", "backups/daily-1/daily-1-volumesnapshots.json.gz", []byte("{}")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	done := metav1.NewTime(time.Now().Add(-2 * replicationAllowance))
	daily := velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "daily-1"}, Spec: velerov1.BackupSpec{VolumeSnapshotLocations: []string{"ebs"}},
		Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted, CompletionTimestamp: &done}}
	run := func() []Finding {
		lc := &locationCheck{Checker: &Checker{Buckets: ec2api.NewFactory()}, vsl: *vsl("ebs", location.DefaultProvider, nil, ""),
			cfg:     model.Config{Vault: model.VaultConfig{Lock: model.Lock{Mode: model.LockModeGovernance, Days: 30}, Bucket: model.VaultBucket{Name: "velero-vault", Region: "us-west-2"}}},
			loc:     location.Location{Vault: &ec2api.Credentials{File: creds}},
			cluster: cluster{backups: []velerov1.Backup{daily}}}
		vaultRecords(t.Context(), lc)
		return lc.findings
	}
	if got := run(); len(got) != 2 || got[0].Status != Pass || got[1].Status != Pass || !strings.Contains(got[1].Detail, "record of backup daily-1") {
		t.Errorf("with the record replicated: %+v, want two passes naming daily-1", got)
	}
	if err := sim.DeleteBucket("velero-vault"); err != nil {
		t.Fatal(err)
	}
	if got := run(); len(got) != 1 || got[0].Status != Fail || !strings.Contains(got[0].Detail, "does not exist") {
		t.Errorf("with the vault bucket gone: %+v, want one failure saying so", got)
	}
}
