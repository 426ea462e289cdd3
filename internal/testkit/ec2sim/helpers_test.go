package ec2sim

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// fakeClock is a Clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixture is a running simulator on a fake clock.
type fixture struct {
	t     *testing.T
	srv   *Server
	clock *fakeClock
}

// start runs a simulator on a fake clock with fixed, easy durations unless cfg sets them.
func start(t *testing.T, cfg Config) *fixture {
	t.Helper()
	if cfg.SnapshotDuration.isZero() {
		cfg.SnapshotDuration = Fixed(10 * time.Second)
	}
	if cfg.CopyDuration.isZero() {
		cfg.CopyDuration = Fixed(20 * time.Second)
	}
	if cfg.VolumeCreateDuration.isZero() {
		cfg.VolumeCreateDuration = Fixed(2 * time.Second)
	}
	clock := newFakeClock()
	srv, err := Start(cfg, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &fixture{t: t, srv: srv, clock: clock}
}

// client returns an SDK client for region that makes a single attempt per call, so every
// error the simulator sends is visible.
func (f *fixture) client(region string) *ec2.Client {
	return newClient(f.srv.URL, region, 1)
}

func newClient(url, region string, attempts int) *ec2.Client {
	return ec2.NewFromConfig(aws.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		BaseEndpoint: aws.String(url),
		Retryer: func() aws.Retryer {
			return retry.AddWithMaxAttempts(retry.NewStandard(), attempts)
		},
	})
}

// volume seeds one volume and returns its ID.
func (f *fixture) volume(region string, spec VolumeSpec) string {
	return f.srv.Sim.AddVolumes(region, spec)[0]
}

// snapshot creates a snapshot of vol through the API and returns its ID.
func (f *fixture) snapshot(region, vol string, tags map[string]string) string {
	f.t.Helper()
	out, err := f.client(region).CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{
		VolumeId:          aws.String(vol),
		TagSpecifications: tagSpec(types.ResourceTypeSnapshot, tags),
	})
	if err != nil {
		f.t.Fatalf("CreateSnapshot(%s): %v", vol, err)
	}
	return aws.ToString(out.SnapshotId)
}

func tagSpec(rt types.ResourceType, tags map[string]string) []types.TagSpecification {
	if len(tags) == 0 {
		return nil
	}
	spec := types.TagSpecification{ResourceType: rt}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		spec.Tags = append(spec.Tags, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return []types.TagSpecification{spec}
}

func tagMap(tags []types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// errCode is the EC2 error code of err, or "" for nil.
func errCode(err error) string {
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return "non-API error: " + err.Error()
}

// httpStatus is the HTTP status code of a failed call.
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// describe returns the snapshot with id as DescribeSnapshots shows it.
func (f *fixture) describe(region, id string) types.Snapshot {
	f.t.Helper()
	out, err := f.client(region).DescribeSnapshots(context.Background(), &ec2.DescribeSnapshotsInput{
		SnapshotIds: []string{id},
	})
	if err != nil || len(out.Snapshots) != 1 {
		f.t.Fatalf("DescribeSnapshots(%s) = %v, %v", id, out, err)
	}
	return out.Snapshots[0]
}

var ctx = context.Background()

// clientAs returns a single-attempt SDK client for region that signs with the given key; an
// empty key sends unsigned requests.
func (f *fixture) clientAs(region string, key AccessKey, token string) *ec2.Client {
	var creds aws.CredentialsProvider = aws.AnonymousCredentials{}
	if key.AccessKeyID != "" {
		creds = credentials.NewStaticCredentialsProvider(key.AccessKeyID, key.SecretAccessKey, token)
	}
	return ec2.NewFromConfig(aws.Config{
		Region:       region,
		Credentials:  creds,
		BaseEndpoint: aws.String(f.srv.URL),
		Retryer: func() aws.Retryer {
			return retry.AddWithMaxAttempts(retry.NewStandard(), 1)
		},
	})
}
