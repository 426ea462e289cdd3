package ec2sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3 Replication as the vault bucket receives it: each new object after the rule's lag, with
// its last-modified time; a deletion in the source (a delete marker) never reaches it; a
// deleted source bucket stops nothing already on its way.
func TestS3ReplicationAfterItsLag(t *testing.T) {
	f := start(t, Config{})
	sim := f.srv.Sim
	const lag = 15 * time.Minute
	for _, b := range []string{"source", "vault"} {
		if err := sim.CreateBucket("", b, "us-east-1", &ObjectLock{Mode: "GOVERNANCE", Days: 30}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.ReplicateBucket("source", "vault", lag); err != nil {
		t.Fatal(err)
	}
	put := func(key string) {
		if err := sim.PutObject("source", key, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	put("backups/a/velero-backup.json")
	putAt := f.clock.Now()
	f.clock.Advance(lag - time.Second)
	put("backups/b/velero-backup.json")
	steps := []struct {
		name    string
		advance time.Duration
		act     func()
		want    []string
	}{
		{name: "within the lag: nothing", want: []string{}},
		{name: "the first after its lag", advance: time.Second, want: []string{"backups/a/velero-backup.json"}},
		{name: "a deletion in the source stays there", act: func() {
			if err := sim.DeleteObject("source", "backups/a/velero-backup.json"); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"backups/a/velero-backup.json"}},
		{name: "the source bucket deleted: what was on its way arrives", act: func() {
			if err := sim.DeleteBucket("source"); err != nil {
				t.Fatal(err)
			}
		}, advance: lag, want: []string{"backups/a/velero-backup.json", "backups/b/velero-backup.json"}},
	}
	for _, s := range steps {
		if s.act != nil {
			s.act()
		}
		f.clock.Advance(s.advance)
		if got := sim.ObjectKeys("vault"); !slices.Equal(got, s.want) && !(len(got) == 0 && len(s.want) == 0) {
			t.Fatalf("%s: vault holds %v, want %v", s.name, got, s.want)
		}
	}
	c := s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		BaseEndpoint: aws.String(f.srv.URL)})
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("vault"), Prefix: aws.String("backups/a/")})
	if err != nil || len(out.Contents) != 1 || !aws.ToTime(out.Contents[0].LastModified).Equal(putAt) {
		t.Fatalf("ListObjectsV2: %+v, %v; want one object last modified at %v, when put in the source", out, err, putAt)
	}
}

// s3As is a single-attempt S3 client of the simulator in region signing with key.
func (f *fixture) s3As(key AccessKey, token, region string) *s3.Client {
	return s3.NewFromConfig(aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(key.AccessKeyID, key.SecretAccessKey, token),
		BaseEndpoint: aws.String(f.srv.URL), RetryMaxAttempts: 1})
}

// A BackupStorageLocation on a simulator bucket, as the upstream plugin reads it: objects put by
// a caller allowed s3:PutObject, read back whole, listed by prefix with a delimiter (the
// backups' names, page by page), found and missed by HeadObject, downloaded through presigned
// URLs until they expire; a caller without s3:PutObject cannot write.
func TestS3Objects(t *testing.T) {
	reader := AccessKey{AccessKeyID: "AKIAREADERREADER0001", SecretAccessKey: "secret-reader"}
	f := start(t, Config{Accounts: []Account{
		{ID: acctA, AccessKeys: []AccessKey{keyA}},
		{ID: acctC, AccessKeys: []AccessKey{reader}, AllowedActions: []string{"s3:ListBucket", "s3:GetObject", "s3:GetBucketLocation"}},
	}})
	f.clock.Set(time.Now()) // presigned URLs are signed at the SDK's time
	sim := f.srv.Sim
	for _, b := range []struct{ account, name string }{{acctA, "backups"}, {acctC, "vault"}} {
		if err := sim.CreateBucket(b.account, b.name, "us-west-2", &ObjectLock{Mode: "GOVERNANCE", Days: 1}); err != nil {
			t.Fatal(err)
		}
	}
	owner, ro := f.s3As(keyA, "", "us-west-2"), f.s3As(reader, "", "us-west-2")
	keys := []string{"rig/backups/a/velero-backup.json", "rig/backups/a/a-logs.gz", "rig/backups/b/velero-backup.json", "rig/restores/r/restore-r-logs.gz", "rig/top.json"}
	for _, k := range keys {
		if _, err := owner.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("backups"), Key: aws.String(k), Body: strings.NewReader("body of " + k),
			ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32}); err != nil {
			t.Fatalf("PutObject %s: %v", k, err)
		}
		if err := sim.PutObject("vault", k, []byte("body of "+k)); err != nil {
			t.Fatal(err)
		}
	}
	listAll := func(c *s3.Client, bucket, prefix string, pageSize int32) (got []string, err error) {
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/"), MaxKeys: aws.Int32(pageSize)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, cp := range page.CommonPrefixes {
				got = append(got, aws.ToString(cp.Prefix))
			}
			for _, o := range page.Contents {
				got = append(got, aws.ToString(o.Key))
			}
		}
		return got, nil
	}
	get := func(c *s3.Client, bucket, key string) (string, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return "", err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		return string(b), err
	}
	presign := func(key string) string {
		req, err := s3.NewPresignClient(ro).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vault"), Key: aws.String(key)},
			func(o *s3.PresignOptions) { o.Expires = 10 * time.Minute })
		if err != nil {
			t.Fatal(err)
		}
		return req.URL
	}
	download := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name string
		run  func() (string, error)
		want string
		code string
	}{
		{name: "the owner reads back what it put", run: func() (string, error) { return get(owner, "backups", keys[0]) }, want: "body of " + keys[0]},
		{name: "a reader reads the vault's object", run: func() (string, error) { return get(ro, "vault", keys[2]) }, want: "body of " + keys[2]},
		{name: "a missing key is NoSuchKey", run: func() (string, error) { return get(ro, "vault", "rig/backups/c/velero-backup.json") }, code: "NoSuchKey"},
		{name: "HeadObject finds an object", run: func() (string, error) {
			out, err := ro.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vault"), Key: aws.String(keys[0])})
			if err != nil {
				return "", err
			}
			return fmt.Sprint(aws.ToInt64(out.ContentLength)), nil
		}, want: fmt.Sprint(len("body of " + keys[0]))},
		{name: "HeadObject of a missing key is NotFound", run: func() (string, error) {
			_, err := ro.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vault"), Key: aws.String("nope")})
			var nf *s3types.NotFound
			if errors.As(err, &nf) {
				return "NotFound", nil
			}
			return "", err
		}, want: "NotFound"},
		{name: "the backups' names, one a page", run: func() (string, error) {
			got, err := listAll(ro, "vault", "rig/backups/", 1)
			return strings.Join(got, " "), err
		}, want: "rig/backups/a/ rig/backups/b/"},
		{name: "the prefix's top level, keys and prefixes", run: func() (string, error) {
			got, err := listAll(ro, "vault", "rig/", 1000)
			return strings.Join(got, " "), err
		}, want: "rig/backups/ rig/restores/ rig/top.json"},
		{name: "a reader without s3:PutObject cannot write", run: func() (string, error) {
			_, err := ro.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vault"), Key: aws.String("rig/restores/x/logs.gz"), Body: strings.NewReader("x")})
			return "", err
		}, code: "AccessDenied"},
		{name: "an aws-chunked upload (a checksum trailer) is not served", run: func() (string, error) {
			req, _ := http.NewRequest(http.MethodPut, f.srv.URL+"/backups/rig/x", strings.NewReader("x"))
			req.Header.Set(headerAmzContentSHA256, "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
			err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: keyA.AccessKeyID, SecretAccessKey: keyA.SecretAccessKey}, req,
				"STREAMING-UNSIGNED-PAYLOAD-TRAILER", "s3", "us-west-2", time.Now())
			if err != nil {
				return "", err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return fmt.Sprint(resp.StatusCode, " ", strings.Contains(string(body), "NotImplemented")), nil
		}, want: "501 true"},
		{name: "GetBucketLocation names the region", run: func() (string, error) {
			out, err := ro.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("vault")})
			if err != nil {
				return "", err
			}
			return string(out.LocationConstraint), nil
		}, want: "us-west-2"},
		{name: "a presigned URL downloads the object", run: func() (string, error) {
			status, body := download(presign(keys[1]))
			return fmt.Sprint(status, " ", body), nil
		}, want: "200 body of " + keys[1]},
		{name: "a presigned URL for another key is refused", run: func() (string, error) {
			status, body := download(strings.Replace(presign(keys[1]), "a-logs.gz", "velero-backup.json", 1))
			return fmt.Sprint(status, " ", strings.Contains(body, "SignatureDoesNotMatch")), nil
		}, want: "403 true"},
		{name: "a presigned URL past its expiry is refused", run: func() (string, error) {
			u := presign(keys[1])
			f.clock.Advance(11 * time.Minute)
			defer f.clock.Advance(-11 * time.Minute)
			status, body := download(u)
			return fmt.Sprint(status, " ", strings.Contains(body, "Request has expired")), nil
		}, want: "403 true"},
	}
	for _, tc := range tests {
		got, err := tc.run()
		if code := errCode(err); code != tc.code || err == nil && got != tc.want {
			t.Errorf("%s: %q, %v (code %q); want %q, code %q", tc.name, got, err, code, tc.want, tc.code)
		}
	}
}
