package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/vault"
)

// replicationAllowance is how long after a backup completes its record may still be on its way
// to the vault bucket. S3 Replication Time Control replicates 99.99% of objects within 15
// minutes; without it S3 promises no time, most objects arrive within minutes, and an hour
// leaves room for a burst. The check does not know whether the rule uses RTC (it is the source
// bucket's, which the vault's credentials cannot read): it allows the hour either way, so that a
// backup that just completed is never reported stale.
const replicationAllowance = time.Hour

// recordsGuide is where the README explains the vault bucket.
const recordsGuide = "README, The records in the vault account"

// vaultRecords checks the vault bucket with the vault's credentials: it exists and is readable,
// its Object Lock, and that it holds the record of the location's newest Completed backup old
// enough to have been replicated.
func vaultRecords(ctx context.Context, lc *locationCheck) {
	ctx, cancel := context.WithTimeout(ctx, regionTimeout)
	defer cancel()
	b := lc.cfg.Vault.Bucket
	f := recordFacts{bucket: b, snapshotLock: lc.cfg.Vault.Lock, backups: locationBackups(lc), backupsProblem: lc.cluster.backupProblem, now: time.Now()}
	c, err := vault.Client(ctx, lc.Buckets, b.Region, *lc.loc.Vault)
	if err == nil {
		f.read, err = vault.Read(ctx, c, b)
	}
	f.readErr = err
	lc.add(decideRecords(f)...)
}

// locationBackups are Velero's Backups that used the location.
func locationBackups(lc *locationCheck) []velerov1.Backup {
	var out []velerov1.Backup
	for _, b := range lc.cluster.backups {
		if slices.Contains(b.Spec.VolumeSnapshotLocations, lc.vsl.Name) {
			out = append(out, b)
		}
	}
	return out
}

// recordFacts is what the check read for the vault bucket.
type recordFacts struct {
	bucket       model.VaultBucket
	snapshotLock model.Lock
	read         vault.Bucket
	readErr      error
	// backups are the location's Backups; backupsProblem, when set, why they are not known.
	backups        []velerov1.Backup
	backupsProblem *unreadable
	now            time.Time
}

// decideRecords judges the vault bucket: one line for a bucket not read, else one for its
// Object Lock and one for its records.
func decideRecords(f recordFacts) []Finding {
	name := vaultPrefix + "bucket " + f.bucket.Name
	if f.readErr != nil {
		return []Finding{bucketUnread(name, f.bucket, f.readErr)}
	}
	return []Finding{judgeBucketLock(f), judgeRecords(f)}
}

// bucketUnread is the failure of a bucket the vault's credentials could not read.
func bucketUnread(check string, b model.VaultBucket, err error) Finding {
	var re *vault.ReadError
	if !errors.As(err, &re) {
		return fail(check, err.Error(), "correct the vault credentials' profile and files")
	}
	grant := fmt.Sprintf("allow the vault credentials s3:ListBucket and s3:GetBucketObjectLockConfiguration on arn:aws:s3:::%s in the vault account (%s)", b.Name, recordsGuide)
	switch {
	case re.Problem == vault.Missing:
		return fail(check, fmt.Sprintf("does not exist in %s (S3 %s): the backups' records are not kept in the vault account", b.Region, re.Code),
			fmt.Sprintf("create it in the vault account with Object Lock and replicate the BackupStorageLocation's bucket to it (%s), or correct %s", recordsGuide, model.ConfigVaultBucket))
	case re.Code == "AuthorizationHeaderMalformed" || re.Code == "PermanentRedirect":
		return fail(check, fmt.Sprintf("is not in %s: %v", b.Region, err), fmt.Sprintf("set %s to the bucket's region", model.ConfigVaultBucketRegion))
	case re.Problem == vault.Refused:
		return fail(check, "not readable with the vault credentials: "+err.Error(), grant)
	}
	return fail(check, "not readable: "+err.Error(), "make S3 in "+b.Region+" reachable from where the check runs, or "+grant)
}

// lockStrength orders lock modes: a compliance lock holds where a governance one may be lifted.
func lockStrength(mode string) int {
	switch mode {
	case model.LockModeCompliance:
		return 2
	case model.LockModeGovernance:
		return 1
	}
	return 0
}

// judgeBucketLock: Object Lock on, with a default retention no shorter nor weaker than the
// vault copies' lock, so that the records last as long as the snapshots they restore.
func judgeBucketLock(f recordFacts) Finding {
	check := vaultPrefix + "bucket " + f.bucket.Name + " Object Lock"
	l, want := f.read.Lock, f.snapshotLock
	wantMode, wantDays := want.Mode, want.Days
	if wantMode == "" { // no snapshot lock: any default retention keeps the records from deletion
		wantMode, wantDays = model.LockModeGovernance, 1
	}
	fix := fmt.Sprintf(`aws s3api put-object-lock-configuration --bucket %s --object-lock-configuration '{"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "%s", "Days": %d}}}' with the vault account's administrator (%s)`,
		f.bucket.Name, upper(wantMode), wantDays, recordsGuide)
	switch {
	case !l.Enabled || l.Mode == "":
		return fail(check, l.String()+": a thief or a mistake holding the vault bucket's permissions can delete the records", fix)
	case want.Mode == "":
		return pass(check, l.String())
	case l.Days < want.Days:
		return fail(check, fmt.Sprintf("%s, shorter than the vault copies' %d-day lock: their records can go before them", l, want.Days), fix)
	case lockStrength(l.Mode) < lockStrength(want.Mode):
		return fail(check, fmt.Sprintf("%s, weaker than the vault copies' %s lock: a governance retention can be lifted", l, want.Mode), fix)
	}
	return pass(check, fmt.Sprintf("%s, not shorter nor weaker than the vault copies' lock (%s, %d days)", l, want.Mode, want.Days))
}

// upper writes a lock mode as S3 spells it.
func upper(mode string) string {
	if mode == model.LockModeCompliance {
		return "COMPLIANCE"
	}
	return "GOVERNANCE"
}

// judgeRecords: the bucket holds the record of the newest Completed backup of the location that
// completed more than replicationAllowance ago.
func judgeRecords(f recordFacts) Finding {
	check := vaultPrefix + "backup records in " + f.bucket.Name
	held := fmt.Sprintf("%s under %s", plural(len(f.read.Records), "backup record"), f.bucket.BackupsPrefix())
	if f.backupsProblem != nil {
		return f.backupsProblem.finding(check, held)
	}
	var newest *velerov1.Backup
	for i, b := range f.backups {
		done := b.Status.CompletionTimestamp
		if b.Status.Phase != velerov1.BackupPhaseCompleted || done == nil || f.now.Sub(done.Time) < replicationAllowance {
			continue
		}
		if newest == nil || done.After(newest.Status.CompletionTimestamp.Time) {
			newest = &f.backups[i]
		}
	}
	if newest == nil {
		return notChecked(check, fmt.Sprintf("%s; no Completed backup of the location older than %s to look for yet", held, human(replicationAllowance)))
	}
	done := newest.Status.CompletionTimestamp.Time.UTC().Format(time.RFC3339)
	if _, ok := f.read.Records[newest.Name]; !ok {
		return fail(check, fmt.Sprintf("no record of backup %s (the newest Completed, at %s, more than %s ago): %s; the records are stale, a restore without the source account would miss it",
			newest.Name, done, human(replicationAllowance), held),
			fmt.Sprintf("check the replication rule of the BackupStorageLocation's bucket to %s (its prefix is %s, delete markers not replicated) and the replication role's permissions: aws s3api get-bucket-replication --bucket BSL-BUCKET (%s)",
				f.bucket.Name, f.bucket.BackupsPrefix(), recordsGuide))
	}
	return pass(check, fmt.Sprintf("holds the record of backup %s, the newest Completed (at %s); %s", newest.Name, done, held))
}
