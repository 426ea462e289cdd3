package ec2sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func postJSON(t *testing.T, url string, body, v any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestAdminEndpoints(t *testing.T) {
	f := start(t, Config{})
	var ids []string
	postJSON(t, f.srv.URL+"/_sim/volumes", map[string]any{
		"region":  "eu-west-1",
		"volumes": []VolumeSpec{{ID: "vol-0123456789abcdef0", SizeGiB: 5, Type: "io1", IOPS: 300}, {Tags: map[string]string{"a": "b"}}},
	}, &ids)
	if len(ids) != 2 || ids[0] != "vol-0123456789abcdef0" || !wellFormed(ids[1], "vol") {
		t.Fatalf("POST /_sim/volumes = %v", ids)
	}
	var vols []Volume
	getJSON(t, f.srv.URL+"/_sim/volumes?region=eu-west-1", &vols)
	if len(vols) != 2 || vols[0].IOPS != 300 || vols[0].AvailabilityZone != "eu-west-1a" || vols[1].Tags["a"] != "b" || vols[1].State != "available" {
		t.Errorf("GET /_sim/volumes = %+v", vols)
	}
	snap := f.snapshot("eu-west-1", ids[0], map[string]string{"x": "y"})
	var snaps []Snapshot
	getJSON(t, f.srv.URL+"/_sim/snapshots?region=eu-west-1", &snaps)
	if len(snaps) != 1 || snaps[0].ID != snap || snaps[0].State != "pending" || snaps[0].SizeGiB != 5 || snaps[0].Tags["x"] != "y" || snaps[0].Region != "eu-west-1" {
		t.Errorf("GET /_sim/snapshots = %+v", snaps)
	}
	var faults Faults
	postJSON(t, f.srv.URL+"/_sim/faults", map[string]any{"serverErrorRate": 1, "latency": map[string]string{"min": "1ms"}}, &faults)
	if faults.ServerErrorRate != 1 || faults.Latency.Min.Duration != time.Millisecond {
		t.Errorf("POST /_sim/faults = %+v", faults)
	}
	if _, err := f.client("eu-west-1").DescribeVolumes(ctx, &ec2.DescribeVolumesInput{}); errCode(err) != "InternalError" {
		t.Errorf("after POST /_sim/faults: %v", err)
	}
	var st Stats
	getJSON(t, f.srv.URL+"/_sim/stats", &st)
	if st.Calls["eu-west-1"]["CreateSnapshot"]["ok"] != 1 || st.Calls["eu-west-1"]["DescribeVolumes"]["InternalError"] != 1 ||
		st.Snapshots["eu-west-1"]["pending"] != 1 || st.Volumes["eu-west-1"]["available"] != 2 {
		t.Errorf("GET /_sim/stats = %+v", st)
	}
	resp, err := http.Get(f.srv.URL + "/_sim/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown admin endpoint: %s", resp.Status)
	}
}

// TestLoadConfigAndEnvEndpoint loads a JSON config, runs on the real clock, and reaches the
// simulator through config.LoadDefaultConfig and AWS_ENDPOINT_URL_EC2, as the plugin does.
func TestLoadConfigAndEnvEndpoint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sim.json")
	const cfgJSON = `{
	  "regions": {"us-east-2": {"availabilityZones": ["us-east-2b"],
	    "volumes": [{"id": "vol-0aaaaaaaaaaaaaaa1", "type": "gp3", "sizeGiB": 9, "tags": {"pv": "data"}}]}},
	  "snapshotDuration": {"min": "50ms", "max": "100ms"},
	  "copyDuration": {"min": "1m30s"},
	  "throttleScale": 0.5,
	  "copyLimit": 3,
	  "faults": {"invisibleFor": {"min": "0s"}, "dropActions": ["CopySnapshot"]},
	  "seed": 42
	}`
	if err := os.WriteFile(path, []byte(cfgJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CopyDuration.Min.Duration != 90*time.Second || cfg.SnapshotDuration.Max.Duration != 100*time.Millisecond ||
		cfg.ThrottleScale != 0.5 || cfg.CopyLimit != 3 || cfg.Seed != 42 || cfg.Regions["us-east-2"].Volumes[0].SizeGiB != 9 {
		t.Fatalf("LoadConfig = %+v", cfg)
	}
	for name, content := range map[string]string{
		"missing.json": "",
		"number.json":  `{"snapshotDuration": {"min": 5}}`,
		"bad.json":     `{"copyDuration": {"min": "five seconds"}}`,
		"broken.json":  `{`,
	} {
		p := filepath.Join(dir, name)
		if content != "" {
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := LoadConfig(p); err == nil {
			t.Errorf("LoadConfig(%s) succeeded", name)
		}
	}
	srv, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	t.Setenv("AWS_ENDPOINT_URL_EC2", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SECRET")
	t.Setenv("AWS_REGION", "us-east-2")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := ec2.NewFromConfig(awsCfg)
	out, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String("vol-0aaaaaaaaaaaaaaa1")})
	if err != nil {
		t.Fatal(err)
	}
	w := ec2.NewSnapshotCompletedWaiter(c, func(o *ec2.SnapshotCompletedWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 100*time.Millisecond
	})
	if err := w.Wait(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{aws.ToString(out.SnapshotId)}}, 5*time.Second); err != nil {
		t.Fatalf("waiting for completion on the real clock: %v", err)
	}
	if _, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-2a"), Size: aws.Int32(1)}); errCode(err) != "InvalidParameterValue" {
		t.Errorf("AZ outside the configured list: %v", err)
	}
}
