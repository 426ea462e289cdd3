package ebs

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestDeleteSnapshot(t *testing.T) {
	src := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest())
	cp := copyOfSnap("snap-0000000b", src, types.SnapshotStateCompleted)
	cp2 := copyOfSnap("snap-0000000c", src, types.SnapshotStatePending)
	east := Config{Region: srcRegion, CopyToRegion: dstRegion}
	west := Config{Region: dstRegion}
	tests := []struct {
		name       string
		cfg        Config
		id         string
		east, west []types.Snapshot
		setup      func(f *fixture)
		wantEast   []string // DeleteSnapshot calls per region, sorted
		wantWest   []string
		wantErr    []string
		bug        string
	}{
		{name: "source and every copy", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp, cp2},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b", "snap-0000000c"}},
		{name: "copy region from the source's tag", cfg: Config{Region: srcRegion}, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b"}},
		{name: "source already gone", cfg: east, id: "snap-0000000a", west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b"}},
		{name: "everything already gone", cfg: east, id: "snap-0000000a", wantEast: []string{"snap-0000000a"}},
		{name: "no copy was made", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, wantEast: []string{"snap-0000000a"}},
		{name: "a failing piece does not stop the others", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp, cp2},
			setup:    func(f *fixture) { f.dst().deleteErr["snap-0000000b"] = httpErr(400, "UnauthorizedOperation") },
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b", "snap-0000000c"},
			wantErr: []string{"snap-0000000b in us-west-2", "UnauthorizedOperation"}},
		{name: "every failure named", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			setup: func(f *fixture) {
				f.src().deleteErr["snap-0000000a"] = netErr()
				f.dst().deleteErr["snap-0000000b"] = httpErr(500, "InternalError")
			},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b"},
			wantErr: []string{"snap-0000000a in us-east-1", "snap-0000000b in us-west-2"}},
		{name: "copy-region location given a copy ID", cfg: west, id: "snap-0000000b", east: []types.Snapshot{src}, west: []types.Snapshot{cp, cp2},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b", "snap-0000000c"}},
		{name: "copy-region location given the source ID", cfg: west, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b"},
			bug: "DeleteSnapshot in a location whose region holds only the copy, given the source's ID (what Velero " +
				"recorded), deletes nothing: source.region starts as this region, so the loop skips this region " +
				"(region == source.region) and never looks for the copy here; the '!found && region == here' branch " +
				"is dead, and the only request is DeleteSnapshot(source ID) in the copy region, which is NotFound = success"},
		{name: "copy lookup failing does not stop the source", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			setup:    func(f *fixture) { f.dst().failNext(httpErr(503, "Unavailable")) },
			wantEast: []string{"snap-0000000a"}, wantErr: []string{"us-west-2"},
			bug: "DeleteSnapshot returns at once when looking for copies in one region fails (copiesOf error), " +
				"so the source and the copies in other regions are not deleted: one failing piece stops the others"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bug != "" {
			}
			f := newFixture(t)
			f.src().add(tt.east...)
			f.dst().add(tt.west...)
			for _, r := range f.regions {
				r.serveDescribe()
				r.serveDelete()
			}
			if tt.setup != nil {
				tt.setup(f)
			}
			err := f.snapshotter(tt.cfg).DeleteSnapshot(context.Background(), tt.id)
			wantErr(t, err, tt.wantErr...)
			for _, r := range []struct {
				r    *region
				want []string
			}{{f.src(), tt.wantEast}, {f.dst(), tt.wantWest}} {
				got := append([]string(nil), r.r.deleted...)
				sort.Strings(got)
				if fmt.Sprint(got) != fmt.Sprint(r.want) && len(got)+len(r.want) > 0 {
					t.Errorf("deleted in %s: %v, want %v", r.r.name, got, r.want)
				}
			}
		})
	}
}

func TestDeleteSnapshotMalformedID(t *testing.T) {
	for _, id := range []string{"", "snap-XYZ", "vol-0123456789abcdef0", "snap-0123", "snap-0123456789ABCDEF0"} {
		t.Run(id, func(t *testing.T) {
			f := newFixture(t) // no EC2 call expected
			wantErr(t, f.snapshotter(Config{Region: srcRegion}).DeleteSnapshot(context.Background(), id), fmt.Sprintf("%q", id), "not an EBS snapshot ID")
		})
	}
}
