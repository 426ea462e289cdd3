package restoring_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/restoring"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// A restore waiting for initialization shows the figure EC2 reports, and completes when EC2
// reports 100%, though DescribeVolumeStatus was throttled three times in a row: the read is
// tried again within the call's budget, and the operation never reads 0 of 100 meanwhile.
func TestRestoreWaitingForInitializationShowsEC2sFigureThroughThreeThrottles(t *testing.T) {
	const region = "us-east-1"
	waiting := map[string]string{model.ConfigRegion: region, model.ConfigVolumeInitializationRate: "300", model.ConfigWaitForVolumeInitialization: "true"}
	tests := []struct {
		name          string
		after         time.Duration // after CreateVolume; the 100 GiB volume takes 10 s to create, then about 341 s at 300 MiB/s
		wantCompleted bool
	}{
		{name: "initializing: the figure EC2 reports, not 0", after: 3 * time.Minute},
		{name: "EC2 reports 100%: the restore's volume completes", after: time.Hour, wantCompleted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := rig.NewAccounts(t, ec2sim.Config{
				Unthrottled:          true,
				SnapshotDuration:     ec2sim.Fixed(10 * time.Second),
				VolumeCreateDuration: ec2sim.Fixed(10 * time.Second),
				Seed:                 7,
			}, nil, nil)
			snapID, _, err := a.Snapshot(model.Config{Region: region}, region, ec2sim.VolumeSpec{Type: "gp3", SizeGiB: 100})
			if err != nil {
				t.Fatal(err)
			}
			a.Clock.Step(time.Minute)
			cfg, err := model.ParseConfig(waiting)
			if err != nil {
				t.Fatal(err)
			}
			volID, err := restoring.NewRestorer(cfg, a.Source, a.Options()...).CreateVolumeFromSnapshot(context.Background(), snapID, "gp3", region+"a", nil)
			if err != nil {
				t.Fatal(err)
			}
			a.Clock.Step(tt.after)
			op := model.VolumeOperation{Operation: model.Operation{Region: region, VolumeID: volID, Issued: a.Clock.Now()}}.String()
			restore := &velerov1.Restore{Spec: velerov1.RestoreSpec{BackupName: rig.AccountsBackup}}
			progress := func(clients ec2api.Regional) (int64, bool) {
				t.Helper()
				loc := oneLocation{{Location: "default", Clients: clients, Config: waiting}}
				p, err := restoring.NewVolumeWatcher(clients, append(a.Options(), ebs.WithLocator(loc))...).Progress(context.Background(), op, restore)
				if err != nil || p.Err != "" || p.NTotal != 100 {
					t.Fatalf("progress %+v, %v; want a figure of 100", p, err)
				}
				return p.NCompleted, p.Completed
			}
			throttled := &throttleFirst{action: "DescribeVolumeStatus", n: 3}
			got, completed := progress(throttledClients(a.Source, throttled))
			want, _ := progress(a.Source)
			if throttled.seen != 4 {
				t.Errorf("DescribeVolumeStatus sent %d times, want 3 throttled and 1 answered", throttled.seen)
			}
			if got != want || got == 0 || completed != tt.wantCompleted {
				t.Errorf("throttled three times: %d%% (completed %v); EC2 reports %d%%, want that figure (completed %v)", got, completed, want, tt.wantCompleted)
			}
		})
	}
}

// oneLocation is a Locator of fixed places.
type oneLocation []ebs.Place

func (l oneLocation) BackupPlaces(context.Context, *velerov1.Backup, string) ([]ebs.Place, error) {
	return l, nil
}

func (l oneLocation) RestorePlaces(context.Context, *velerov1.Restore, string) ([]ebs.Place, error) {
	return l, nil
}

// throttleFirst answers the first n requests of action with RequestLimitExceeded and carries
// every other request to EC2; seen counts the requests of action.
type throttleFirst struct {
	action  string
	n, seen int
	next    http.RoundTripper
}

func (tf *throttleFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(strings.NewReader(string(body)))
	if strings.Contains(string(body), "Action="+tf.action+"&") {
		if tf.seen++; tf.seen <= tf.n {
			doc := `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>throttled</RequestID></Response>`
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
				Header: http.Header{"Content-Type": []string{"text/xml;charset=UTF-8"}}, Body: io.NopCloser(strings.NewReader(doc)),
				ContentLength: int64(len(doc)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
		}
	}
	return tf.next.RoundTrip(req)
}

// throttledClients are clients whose requests pass through tf.
func throttledClients(clients ec2api.Regional, tf *throttleFirst) ec2api.Regional {
	return func(ctx context.Context, region string) (ec2api.EC2, error) {
		c, err := clients(ctx, region)
		if err != nil {
			return nil, err
		}
		o := c.(*ec2.Client).Options()
		tf.next = http.DefaultTransport
		o.HTTPClient = &http.Client{Transport: tf}
		return ec2.New(o), nil
	}
}
