//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// simObject is a snapshot or volume as reported by the simulator's admin API, normalised.
type simObject struct {
	ID       string
	State    string
	Region   string
	VolumeID string
	AZ       string
	Source   string // source snapshot of a copy, if the simulator reports it
	Tags     map[string]string
	Raw      map[string]any
}

func (o simObject) String() string {
	keys := make([]string, 0, len(o.Tags))
	for k := range o.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var tags []string
	for _, k := range keys {
		tags = append(tags, k+"="+o.Tags[k])
	}
	return fmt.Sprintf("%s[%s %s vol=%s az=%s src=%s tags{%s}]", o.ID, o.Region, o.State, o.VolumeID, o.AZ, o.Source, strings.Join(tags, ","))
}

// simClient talks to the EC2 simulator's admin API.
type simClient struct {
	t   *testing.T
	url string
}

func (s simClient) get(path string) any {
	s.t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		s.t.Fatalf("GET %s: %s: %s", path, resp.Status, b)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		s.t.Fatalf("GET %s: %v: %s", path, err, b)
	}
	return v
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

// listIn returns the snapshots or volumes of a region in an account ("" for the default one).
func (s simClient) listIn(kind, region, account string) []simObject {
	s.t.Helper()
	path := "/_sim/" + kind + "?region=" + region
	if account != "" {
		path += "&account=" + account
	}
	// The admin API answers a JSON array of ec2sim.Snapshot or ec2sim.Volume.
	items, ok := s.get(path).([]any)
	if !ok {
		s.t.Fatalf("GET %s: not a JSON array", path)
	}
	var out []simObject
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		o := simObject{Raw: m, Region: region, Tags: map[string]string{}}
		if kind == "snapshots" {
			o.ID = str(m, "snapshotId", "SnapshotId", "id", "ID", "Id")
			o.VolumeID = str(m, "volumeId", "VolumeId")
		} else {
			o.ID = str(m, "volumeId", "VolumeId", "id", "ID", "Id")
			o.Source = str(m, "snapshotId", "SnapshotId")
		}
		o.State = str(m, "state", "State")
		o.AZ = str(m, "availabilityZone", "AvailabilityZone", "az")
		if src := str(m, "sourceSnapshotId", "SourceSnapshotId", "copiedFrom", "sourceSnapshot"); src != "" {
			o.Source = src
		}
		if r := str(m, "region", "Region"); r != "" {
			o.Region = r
		}
		switch tags := first(m, "tags", "Tags").(type) {
		case map[string]any:
			for k, v := range tags {
				o.Tags[k] = fmt.Sprint(v)
			}
		case []any:
			for _, t := range tags {
				if tm, ok := t.(map[string]any); ok {
					o.Tags[str(tm, "key", "Key")] = str(tm, "value", "Value")
				}
			}
		}
		out = append(out, o)
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

func first(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return v
		}
	}
	return nil
}

func str(m map[string]any, keys ...string) string {
	if v := first(m, keys...); v != nil {
		return fmt.Sprint(v)
	}
	return ""
}
