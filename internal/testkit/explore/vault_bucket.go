package explore

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"pgregory.net/rapid"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The vault bucket (internal/vault/README.md): the location names one, and S3 Replication
// copies the storage location's bucket into it, in the vault account, after a drawn lag, or
// never (the replication broken). Velero writes the backup's record into the storage
// location's bucket once its item phase is over and deletes it with the backup (a delete
// marker, which replication does not carry). The audit reads the vault bucket with the vault's
// credentials, through the world's transport; an audit may find it refusing or throttling.
//
// The promise: the audit calls the backup vault-restorable only when the listing it read held
// the record and the vault copies are completed (and locked, where asked); a vault bucket it
// did not read makes the verdict unknown, never a missing record; a listing that held the
// record never makes it a missing one, and one that did not always does; and the recovery
// point without the source account names only a backup that is vault-restorable so.

// The buckets and their keys.
const (
	storageBucketName = "velero-backups"
	vaultBucketName   = "velero-vault"
	// s3Endpoint is the simulator's address as the S3 clients see it: an IP address, so that the
	// SDK addresses buckets by path, as the simulator serves them. Requests never leave the
	// process.
	s3Endpoint = "http://127.0.0.1"
	// vaultBucketLockMode and vaultBucketLockDays are the vault bucket's default retention
	// (internal/vault/README.md's).
	vaultBucketLockMode = "GOVERNANCE"
	vaultBucketLockDays = 30
)

// recordKeys are the files of the backup's record the vault bucket must hold for a restore.
var recordKeys = []string{"backups/" + backupName + "/velero-backup.json", "backups/" + backupName + "/" + backupName + "-volumesnapshots.json.gz"}

// accountLossPlace is the recovery place without the source account, as the audit names it.
const accountLossPlace = "without the source account"

// recordsNeverArrive is the lag of a broken replication.
const recordsNeverArrive time.Duration = -1

// recordLags are the replication lags drawn: none, S3's usual minutes, RTC's bound, more than
// an audit waits for (a day), and never.
var recordLags = []time.Duration{0, 3 * time.Minute, 15 * time.Minute, 24 * time.Hour, recordsNeverArrive}

// replicationText describes the replication of lag.
func replicationText(lag time.Duration) string {
	if lag == recordsNeverArrive {
		return "vault bucket " + vaultBucketName + ", its replication broken"
	}
	return fmt.Sprintf("vault bucket %s, the records replicated %s after they are written", vaultBucketName, lag)
}

// actVaultAudit is the operator's audit of the backup once its item phase is over, when its
// record may be in the vault bucket: drawn a while after the last step, at most maxVaultAudits
// times a run.
const (
	actVaultAudit  = "audit: of the backup with its vault bucket, its item phase over"
	maxVaultAudits = 2
)

// vaultAuditDelays are how long after the last step the audit of actVaultAudit runs: the
// replication lags drawn fall before and after them.
var vaultAuditDelays = []time.Duration{0, 5 * time.Minute, 20 * time.Minute, 2 * time.Hour}

// The vault bucket's answers to an audit that fail.
const (
	vaultBucketRefused   = "AccessDenied"
	vaultBucketThrottled = "SlowDown"
)

// drawVaultBucketFault draws the vault bucket's answer to the next audit (settle's too): mostly an answer,
// sometimes a refusal (the VaultRecords statement missing) or throttling.
func (w *world) drawVaultBucketFault(t *rapid.T) {
	if !w.setup.vaultBucket {
		return
	}
	w.vaultBucketFault = rapid.SampledFrom([]string{"", "", "", vaultBucketRefused, vaultBucketThrottled}).Draw(t, "the vault bucket's answer to the audit (\"\": it answers)")
}

// auditVaultBucket is the operator's audit once the operations have ended, with the vault
// bucket's answer drawn for it, when the location names a vault bucket.
func (w *world) auditVaultBucket() {
	if !w.setup.vaultBucket {
		return
	}
	w.deleteOrphans("", audit.DefaultOrphanGrace, true)
	w.vaultBucketFault = ""
}

// makeBuckets makes the storage location's bucket, the vault bucket with its Object Lock, and
// the replication rule between them unless it is broken.
func (w *world) makeBuckets() error {
	if err := w.sim.CreateBucket(sourceAccount, storageBucketName, sourceRegion, nil); err != nil {
		return err
	}
	lock := &ec2sim.ObjectLock{Mode: vaultBucketLockMode, Days: vaultBucketLockDays}
	if err := w.sim.CreateBucket(vaultAccount, vaultBucketName, w.setup.vaultRegion, lock); err != nil {
		return err
	}
	if w.setup.recordLag == recordsNeverArrive {
		return nil
	}
	return w.sim.ReplicateBucket(storageBucketName, vaultBucketName, w.setup.recordLag)
}

// writeRecord is Velero writing the backup's record into the storage location's bucket, once
// its item phase is over.
func (w *world) writeRecord() {
	if !w.setup.vaultBucket || w.recordWritten || !w.itemPhaseDone() {
		return
	}
	for _, k := range recordKeys {
		if err := w.sim.PutObject(storageBucketName, k, []byte(k)); err != nil {
			panic(err) // the bucket is the world's own
		}
	}
	w.recordWritten = true
	w.logf("velero: the backup's record written into bucket %s", storageBucketName)
}

// deleteRecord is Velero deleting the backup's record with the backup: delete markers, which
// replication does not carry.
func (w *world) deleteRecord() {
	if !w.recordWritten {
		return
	}
	for _, k := range recordKeys {
		if err := w.sim.DeleteObject(storageBucketName, k); err != nil {
			panic(err)
		}
	}
	w.logf("velero: the backup's record deleted from bucket %s (delete markers, not replicated)", storageBucketName)
}

// recordInVault reports whether the vault bucket holds the backup's record now.
func (w *world) recordInVault() bool {
	keys := w.sim.ObjectKeys(vaultBucketName)
	for _, k := range recordKeys {
		if !slices.Contains(keys, k) {
			return false
		}
	}
	return true
}

// vaultListing is what the audit's last listing of the vault bucket saw: whether S3 answered
// it, and whether the bucket held the backup's record when it did.
type vaultListing struct{ answered, held bool }

// noteVaultListing notes an audit's listing of the vault bucket, once it is answered.
func (w *world) noteVaultListing(q request) {
	if q.role == auditRole && q.action == s3ListAction {
		w.vaultListing = vaultListing{answered: q.answered, held: q.answered && w.recordInVault()}
	}
}

// The S3 actions the audit may send.
const (
	s3ListAction = "ListObjectsV2"
	s3LockAction = "GetObjectLockConfiguration"
	s3HeadAction = "HeadBucket"
)

// s3Action names an S3 request as the simulator serves it; "" for an EC2 or STS request.
func s3Action(req *http.Request) string {
	if !strings.Contains(req.Header.Get("Authorization"), "/s3/aws4_request") {
		return ""
	}
	switch q := req.URL.Query(); {
	case q.Has("object-lock"):
		return s3LockAction
	case q.Get("list-type") == "2":
		return s3ListAction
	}
	return s3HeadAction
}

// s3ErrorResponse is S3's error document for code: 403 for a refusal, 503 for throttling.
func s3ErrorResponse(req *http.Request, code string) *http.Response {
	status := http.StatusForbidden
	if code == vaultBucketThrottled {
		status = http.StatusServiceUnavailable
	}
	doc := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>explore</RequestId></Error>`, code, http.StatusText(status))
	return documentResponse(req, status, "application/xml", doc)
}

// vaultBuckets loads the audit's S3 configs: signing as the account of the credentials, through
// the world's transport and its faults.
type vaultBuckets struct{ w *world }

// Config is the config of an S3 client of region signing with creds.
func (b vaultBuckets) Config(_ context.Context, region string, creds ec2api.Credentials) (aws.Config, error) {
	account, err := b.w.accountOfCredentials(creds)
	if err != nil {
		return aws.Config{}, err
	}
	return aws.Config{
		Region:       region,
		BaseEndpoint: aws.String(s3Endpoint),
		HTTPClient:   &http.Client{Transport: &transport{w: b.w, role: auditRole, signer: account, faulty: true}},
		Credentials:  staticCredentials(keys[account]),
		Retryer:      quickRetryer,
	}, nil
}

// catVaultRestorable is the promise the audit's verdict without the source account breaks.
const catVaultRestorable category = "audit called a backup vault-restorable without its record in the vault bucket, its vault copies completed and locked, or a read of the vault bucket; said a record was missing from a vault bucket it did not read, or held; or named a backup not vault-restorable as the recovery point without the source account"

// checkAccountLoss checks the audit's verdict on the backup without the source account.
func (w *world) checkAccountLoss(rep audit.Report) {
	seen := w.vaultListing
	for _, b := range rep.Backups {
		l := b.AccountLoss
		if b.Name != backupName || l == nil {
			continue
		}
		saysMissing := strings.Contains(l.Why, "no record of it in vault bucket")
		switch {
		case l.Restorable && !seen.answered:
			w.violate(catVaultRestorable, "%s called vault-restorable though the audit's listing of vault bucket %s was not answered", backupName, vaultBucketName)
		case l.Restorable && !seen.held:
			w.violate(catVaultRestorable, "%s called vault-restorable though vault bucket %s did not hold its record when the audit listed it", backupName, vaultBucketName)
		case l.Restorable:
			if missing := w.vaultCopiesMissing(); missing != "" {
				w.violate(catVaultRestorable, "%s called vault-restorable though %s", backupName, missing)
			}
		case !seen.answered && saysMissing:
			w.violate(catVaultRestorable, "%s: the audit says its record is missing from vault bucket %s, which it did not read (%q)", backupName, vaultBucketName, l.Why)
		case !seen.answered && l.Why == "" && !strings.Contains(l.Unknown, vaultBucketName):
			w.violate(catVaultRestorable, "%s: the audit did not read vault bucket %s, and its verdict does not say so (%q)", backupName, vaultBucketName, l.Unknown)
		case seen.held && saysMissing:
			w.violate(catVaultRestorable, "%s: the audit says its record is missing from vault bucket %s, whose listing held it (%q)", backupName, vaultBucketName, l.Why)
		case seen.answered && !seen.held && !saysMissing:
			w.violate(catVaultRestorable, "%s: vault bucket %s did not hold its record when the audit listed it, and the verdict does not say so (%q)", backupName, vaultBucketName, l.Why)
		}
	}
	for _, rp := range rep.RecoveryPoints {
		if rp.Place != accountLossPlace || rp.Backup != backupName {
			continue
		}
		if !seen.held {
			w.violate(catVaultRestorable, "the recovery point %s is %s, whose record the audit did not list in vault bucket %s", rp.Place, backupName, vaultBucketName)
		} else if missing := w.vaultCopiesMissing(); missing != "" {
			w.violate(catVaultRestorable, "the recovery point %s is %s, though %s", rp.Place, backupName, missing)
		}
	}
}

// vaultCopiesMissing says which source of the backup has no completed vault copy, or one not
// locked where the location asks for a lock; "" when none.
func (w *world) vaultCopiesMissing() string {
	snaps := w.everything()
	for _, op := range w.ops {
		src, ok := snaps[op.snapshotID]
		if op.snapshotID == "" || op.upstream || !ok {
			continue
		}
		for _, want := range askedCopies(src.Tags) {
			if want.account == sourceAccount {
				continue
			}
			c := w.copyIn(snaps, op.snapshotID, want.account, want.region)
			switch {
			case c == nil:
				return fmt.Sprintf("%s has no completed vault copy in %s of %s", op.snapshotID, want.region, want.account)
			case w.setup.lock && !lockedNow(*c):
				return fmt.Sprintf("the vault copy %s of %s is not locked", c.ID, op.snapshotID)
			}
		}
	}
	return ""
}
