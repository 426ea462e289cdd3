//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// simObject is a snapshot or volume as the simulator's admin API reports it.
type simObject struct {
	ID       string
	State    string
	Region   string
	VolumeID string
	AZ       string
	// Source is the source snapshot of a copy, or the snapshot a volume was made from.
	Source string
	Tags   map[string]string
}

func (o simObject) String() string {
	var tags []string
	for _, k := range slices.Sorted(maps.Keys(o.Tags)) {
		tags = append(tags, k+"="+o.Tags[k])
	}
	return fmt.Sprintf("%s[%s %s vol=%s az=%s src=%s tags{%s}]", o.ID, o.Region, o.State, o.VolumeID, o.AZ, o.Source, strings.Join(tags, ","))
}

// simClient talks to the EC2 simulator's admin API.
type simClient struct {
	t   *testing.T
	url string
}

// getJSON decodes the answer to GET path into v.
func (s simClient) getJSON(path string, v any) {
	s.t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %s: %s", path, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		s.t.Fatalf("GET %s: %v: %s", path, err, b)
	}
}

// stats returns the simulator's counters.
func (s simClient) stats() ec2sim.Stats {
	s.t.Helper()
	var st ec2sim.Stats
	s.getJSON("/_sim/stats", &st)
	return st
}

func (s simClient) post(path string, body any) {
	s.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("POST %s: %s: %s", path, resp.Status, out)
	}
}

// list returns the snapshots or volumes ("snapshots"/"volumes") of a region in the simulator's
// default account (the first configured: account A).
func (s simClient) list(kind, region string) []simObject {
	s.t.Helper()
	return s.listIn(kind, region, "")
}

// listPath is the admin path listing kind in a region of an account ("" for the default one).
func listPath(kind, region, account string) string {
	path := "/_sim/" + kind + "?region=" + region
	if account != "" {
		path += "&account=" + account
	}
	return path
}

// snapshotsIn returns the snapshots of a region in an account as the simulator holds them, with
// their shares and locks.
func (s simClient) snapshotsIn(region, account string) []ec2sim.Snapshot {
	s.t.Helper()
	var snaps []ec2sim.Snapshot
	s.getJSON(listPath("snapshots", region, account), &snaps)
	return snaps
}

// listIn returns the snapshots or volumes of a region in an account ("" for the default one).
func (s simClient) listIn(kind, region, account string) []simObject {
	s.t.Helper()
	path := listPath(kind, region, account)
	var out []simObject
	switch kind {
	case "snapshots":
		for _, v := range s.snapshotsIn(region, account) {
			out = append(out, simObject{ID: v.ID, State: v.State, Region: v.Region, VolumeID: v.VolumeID, Source: v.SourceSnapshotID, Tags: v.Tags})
		}
	case "volumes":
		var vols []ec2sim.Volume
		s.getJSON(path, &vols)
		for _, v := range vols {
			out = append(out, simObject{ID: v.ID, State: v.State, Region: v.Region, VolumeID: v.ID, AZ: v.AvailabilityZone, Source: v.SnapshotID, Tags: v.Tags})
		}
	default:
		s.t.Fatalf("the simulator lists snapshots or volumes, not %q", kind)
	}
	return out
}

// live drops objects the simulator reports as deleted.
func live(objs []simObject) []simObject {
	var out []simObject
	for _, o := range objs {
		if o.State != "deleted" && o.State != "deleting" {
			out = append(out, o)
		}
	}
	return out
}
