package bench

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"
)

// The paging bound: per place a page of DescribeSnapshots per 1,000 snapshots, a page of
// DescribeLockedSnapshots per 1,000 locked where the vault copies are, and one DescribeVolumes
// per place of the location's own account.
func TestPagingBound(t *testing.T) {
	tests := []struct {
		name   string
		places []auditPlace
		want   map[string]int
	}{
		{"1,000 backups of 20 volumes in three places", []auditPlace{{Snapshots: 20000}, {Snapshots: 20000}, {Snapshots: 20000, Locked: 20000, Vault: true}},
			map[string]int{"DescribeSnapshots": 60, "DescribeLockedSnapshots": 20, "DescribeVolumes": 2}},
		{"a snapshot over a page takes another", []auditPlace{{Snapshots: 1001}}, map[string]int{"DescribeSnapshots": 2, "DescribeVolumes": 1}},
		{"listing nothing takes a request", []auditPlace{{}, {Vault: true}},
			map[string]int{"DescribeSnapshots": 2, "DescribeLockedSnapshots": 1, "DescribeVolumes": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pagingBound(tc.places); !maps.Equal(got, tc.want) {
				t.Errorf("bound %v, want %v", got, tc.want)
			}
		})
	}
}

// The world plants one gone backup in each run of GoneEvery: its sources and copies are
// orphans, and its vault copies too once their lock has expired, else kept.
func TestAuditWorld(t *testing.T) {
	tests := []struct {
		name                  string
		backups               int
		wantGone, wantOrphans int
		wantKept, wantListed  int
		// every place holds wantSnapshotsPerPlace, all locked in the vault
		wantSnapshotsPerPlace int
	}{
		// backup 100 started 150 h ago: its vault copies' 7-day locks hold
		{"250 backups: one gone within its lock", 250, 1, 40, 20, 249 + 11, 5000},
		// backups 100 and 300 started 400 h and 200 h ago: their locks have expired
		{"500 backups: two gone after their locks", 500, 2, 120, 0, 498 + 21, 10000},
		{"1,000 backups: four gone after their locks, one within", 1000, 5, 280, 20, 995 + 42, 20000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := StandardAudit().world(tc.backups, time.Now())
			want := AuditVerdicts{Backups: tc.backups - tc.wantGone, DRReady: tc.backups - tc.wantGone, Orphans: tc.wantOrphans, Kept: tc.wantKept}
			if w.want != want {
				t.Errorf("planted %+v, want %+v", w.want, want)
			}
			if len(w.listing) != tc.wantListed || len(w.records) != tc.backups-tc.wantGone {
				t.Errorf("%d backups listed, %d records; want %d, %d", len(w.listing), len(w.records), tc.wantListed, tc.backups-tc.wantGone)
			}
			for _, p := range w.places {
				wantLocked := 0
				if p.Vault {
					wantLocked = tc.wantSnapshotsPerPlace
				}
				if p.Snapshots != tc.wantSnapshotsPerPlace || p.Locked != wantLocked {
					t.Errorf("%s: %d snapshots, %d locked", p.Name, p.Snapshots, p.Locked)
				}
			}
		})
	}
}

// An audit of a small world, over HTTP at AWS's rates: the report is as planted, it makes at
// least the paging bound's requests and no other kind, and the Kubernetes and object-store
// reads are counted.
func TestAuditRun(t *testing.T) {
	a := StandardAudit()
	a.VolumesPerBackup, a.GoneEvery, a.MetadataEvery = 3, 4, 5
	res, err := a.runAt(context.Background(), 12)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Differences) > 0 || res.Verdicts.Orphans == 0 || res.Verdicts.Kept == 0 {
		t.Errorf("verdicts %+v: %v", res.Verdicts, res.Differences)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(res.Calls)), slices.Sorted(maps.Keys(res.Bound))) {
		t.Errorf("EC2 calls %v, bound %v: another kind of request", res.Calls, res.Bound)
	}
	for action, pages := range res.Bound {
		if res.Calls[action] < pages {
			t.Errorf("%d %s, fewer than the %d pages the world takes", res.Calls[action], action, pages)
		}
	}
	if res.KubeRequests["list BackupList"] != 1 || res.StoreReads["Backups"] != 1 || res.StoreReads["VolumeSnapshots"] != 9 {
		t.Errorf("Kubernetes requests %v, object-store reads %v", res.KubeRequests, res.StoreReads)
	}
}
