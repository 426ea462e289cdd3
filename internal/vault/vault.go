// Package vault reads the vault account's bucket of backup records, with the vault's
// credentials as the plugin loads them: its Object Lock configuration, and which backups'
// records it holds and since when.
package vault

import (
	"context"

	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// S3 is the part of the S3 API the reader uses. *s3.Client satisfies it.
type S3 interface {
	GetObjectLockConfiguration(ctx context.Context, in *s3.GetObjectLockConfigurationInput, optFns ...func(*s3.Options)) (*s3.GetObjectLockConfigurationOutput, error)
	s3.ListObjectsV2APIClient
}

var _ S3 = (*s3.Client)(nil)

// Configs loads the AWS config of credentials in a region (*ec2api.Factory).
type Configs interface {
	Config(ctx context.Context, region string, creds ec2api.Credentials) (aws.Config, error)
}

// Client returns the S3 client of a bucket in region with creds, loaded as the plugin loads its
// EC2 clients there (keys, a profile, an assumed role).
func Client(ctx context.Context, configs Configs, region string, creds ec2api.Credentials) (S3, error) {
	cfg, err := configs.Config(ctx, region, creds)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg), nil
}

// Files of a backup's record in a BackupStorageLocation, as Velero writes them under
// "backups/<name>/": the Backup, and its volume snapshots; a restore needs both.
const (
	backupFile          = "velero-backup.json"
	volumeSnapshotsFile = "-volumesnapshots.json.gz"
)

// daysPerYear counts an Object Lock year at its shortest.
const daysPerYear = 365

// Lock is a bucket's Object Lock configuration.
type Lock struct {
	// Enabled is whether the bucket has Object Lock.
	Enabled bool
	// Mode is the default retention's mode, model.LockModeGovernance or model.LockModeCompliance,
	// "" without a default retention.
	Mode string
	// Days is the default retention's length (a year counts daysPerYear days).
	Days int32
}

// String names the lock for messages.
func (l Lock) String() string {
	switch {
	case !l.Enabled:
		return "Object Lock off"
	case l.Mode == "":
		return "Object Lock on, without a default retention"
	}
	days := "days"
	if l.Days == 1 {
		days = "day"
	}
	return fmt.Sprintf("Object Lock on, default retention %s for %d %s", l.Mode, l.Days, days)
}

// Bucket is what the vault bucket holds.
type Bucket struct {
	Lock Lock
	// Records maps each backup whose record the bucket holds in full to when it was complete:
	// the later last-modified time of its two files.
	Records map[string]time.Time
}

// Problem is why a bucket could not be read.
type Problem int

// The problems of a read.
const (
	// Unreachable: no answer, no credentials, or an answer that says nothing of the bucket.
	Unreachable Problem = iota
	// Missing: S3 says the bucket does not exist.
	Missing
	// Refused: S3 refused the credentials or the request (not the bucket's owner, no
	// permission, the wrong region).
	Refused
)

// ReadError is a failed read of the bucket.
type ReadError struct {
	Problem Problem
	// Code is S3's error code, "" when S3 did not answer.
	Code string
	Err  error
}

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// S3 error codes the reader tells apart.
const (
	codeNoSuchBucket        = "NoSuchBucket"
	codeNoLockConfiguration = "ObjectLockConfigurationNotFoundError"
)

// readError classifies err.
func readError(err error) *ReadError {
	code := ec2api.Code(err)
	switch {
	case code == codeNoSuchBucket:
		return &ReadError{Problem: Missing, Code: code, Err: err}
	case code != "":
		return &ReadError{Problem: Refused, Code: code, Err: err}
	}
	return &ReadError{Problem: Unreachable, Err: err}
}

// Read reads the bucket's Object Lock configuration and the records it holds under its prefix.
// An error is a *ReadError.
func Read(ctx context.Context, c S3, b model.VaultBucket) (Bucket, error) {
	lock, err := ReadLock(ctx, c, b)
	if err != nil {
		return Bucket{}, err
	}
	records, err := ReadRecords(ctx, c, b)
	if err != nil {
		return Bucket{}, err
	}
	return Bucket{Lock: lock, Records: records}, nil
}

// ReadLock reads the bucket's Object Lock configuration (s3:GetBucketObjectLockConfiguration).
// An error is a *ReadError.
func ReadLock(ctx context.Context, c S3, b model.VaultBucket) (Lock, error) {
	lc, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(b.Name)})
	switch {
	case ec2api.Code(err) == codeNoLockConfiguration:
		return Lock{}, nil
	case err != nil:
		return Lock{}, readError(fmt.Errorf("reading the Object Lock configuration of bucket %s in %s: %w", b.Name, b.Region, err))
	}
	return lockOf(lc.ObjectLockConfiguration), nil
}

// ReadRecords lists the backups whose records the bucket holds in full under its prefix, each
// with when it was complete (s3:ListBucket). An error is a *ReadError.
func ReadRecords(ctx context.Context, c S3, b model.VaultBucket) (map[string]time.Time, error) {
	keys := map[string]time.Time{}
	pages := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name), Prefix: aws.String(b.BackupsPrefix())})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, readError(fmt.Errorf("listing %s in bucket %s in %s: %w", b.BackupsPrefix(), b.Name, b.Region, err))
		}
		for _, o := range page.Contents {
			keys[strings.TrimPrefix(aws.ToString(o.Key), b.BackupsPrefix())] = aws.ToTime(o.LastModified)
		}
	}
	return recordsOf(keys), nil
}

// lockOf reads an Object Lock configuration.
func lockOf(c *types.ObjectLockConfiguration) Lock {
	if c == nil || c.ObjectLockEnabled != types.ObjectLockEnabledEnabled {
		return Lock{}
	}
	l := Lock{Enabled: true}
	if c.Rule == nil || c.Rule.DefaultRetention == nil {
		return l
	}
	r := c.Rule.DefaultRetention
	l.Mode = strings.ToLower(string(r.Mode))
	l.Days = aws.ToInt32(r.Days) + aws.ToInt32(r.Years)*daysPerYear
	return l
}

// recordsOf finds the complete records among keys relative to the backups prefix
// ("<name>/<file>"), each with the later last-modified time of its two files.
func recordsOf(keys map[string]time.Time) map[string]time.Time {
	records := map[string]time.Time{}
	for key, backupAt := range keys {
		name, file, ok := strings.Cut(key, "/")
		if !ok || file != backupFile {
			continue
		}
		snapshotsAt, ok := keys[name+"/"+name+volumeSnapshotsFile]
		if !ok {
			continue
		}
		records[name] = backupAt
		if snapshotsAt.After(backupAt) {
			records[name] = snapshotsAt
		}
	}
	return records
}
