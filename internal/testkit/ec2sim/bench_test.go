package ec2sim

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// BenchmarkDescribeSnapshots measures DescribeSnapshots requests per second with 5,000 snapshots
// in the region, filtered by a backup tag and paginated with MaxResults 1000, from parallel
// clients, the way the plugin's per-reconcile lookup asks. Sub-benchmarks vary how many snapshots
// the tag matches (the size of a backup); "sdk" drives real aws-sdk-go-v2 clients in the same
// process (their XML decoding and signing share the CPU), "http" sends the same form the SDK sends
// with a plain HTTP client, measuring the simulator's own capacity. Run it with:
//
//	go test ./internal/testkit/ec2sim -run '^$' -bench DescribeSnapshots -benchtime 3s
func BenchmarkDescribeSnapshots(b *testing.B) {
	for _, perBackup := range []int{10, 50, 200} {
		b.Run(fmt.Sprintf("sdk/match=%d", perBackup), func(b *testing.B) { benchSDK(b, perBackup) })
	}
	for _, perBackup := range []int{10, 200} {
		b.Run(fmt.Sprintf("http/match=%d", perBackup), func(b *testing.B) { benchHTTP(b, perBackup) })
	}
}

const benchSnapshots = 5000

// benchServer starts a simulator holding benchSnapshots snapshots, perBackup to a backup tag.
func benchServer(b *testing.B, perBackup int) *Server {
	srv, err := Start(Config{}, WithClock(newFakeClock()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	seed := newClient(srv.URL, "us-east-1", 1)
	vols := srv.Sim.AddVolumes("us-east-1", make([]VolumeSpec, benchSnapshots)...)
	for i, vol := range vols {
		if _, err := seed.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{
			VolumeId: aws.String(vol),
			TagSpecifications: tagSpec(types.ResourceTypeSnapshot, map[string]string{
				"velero.io/backup": fmt.Sprint("backup-", i/perBackup),
				"velero.io/pv":     fmt.Sprint("pv-", i),
			}),
		}); err != nil {
			b.Fatal(err)
		}
	}
	return srv
}

func benchHTTP(b *testing.B, perBackup int) {
	srv := benchServer(b, perBackup)
	backups := int64(benchSnapshots / perBackup)
	var requests, next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	begin := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		for pb.Next() {
			form := url.Values{
				"Action": {"DescribeSnapshots"}, "Version": {"2016-11-15"}, "MaxResults": {"1000"}, "Owner.1": {"self"},
				"Filter.1.Name": {"tag:velero.io/backup"}, "Filter.1.Value.1": {fmt.Sprint("backup-", next.Add(1)%backups)},
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
			req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260102/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || bytes.Count(body, []byte("<snapshotId>")) != perBackup {
				b.Errorf("HTTP %d, %v: %.200s", resp.StatusCode, err, body)
				return
			}
			requests.Add(1)
		}
	})
	b.ReportMetric(float64(requests.Load())/time.Since(begin).Seconds(), "req/s")
}

func benchSDK(b *testing.B, perBackup int) {
	srv := benchServer(b, perBackup)
	backups := benchSnapshots / perBackup
	var requests, next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	begin := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c := newClient(srv.URL, "us-east-1", 1)
		for pb.Next() {
			backup := fmt.Sprint("backup-", next.Add(1)%int64(backups))
			p := ec2.NewDescribeSnapshotsPaginator(c, &ec2.DescribeSnapshotsInput{
				OwnerIds:   []string{"self"},
				MaxResults: aws.Int32(1000),
				Filters:    []types.Filter{{Name: aws.String("tag:velero.io/backup"), Values: []string{backup}}},
			})
			n := 0
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				requests.Add(1)
				n += len(out.Snapshots)
			}
			if n != perBackup {
				b.Errorf("%s: %d snapshots, want %d", backup, n, perBackup)
				return
			}
		}
	})
	elapsed := time.Since(begin)
	b.ReportMetric(float64(requests.Load())/elapsed.Seconds(), "req/s")
}
