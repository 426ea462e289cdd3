package ec2sim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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
