package ebs

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

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
		{name: "a locked copy is kept, not a failure", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp, cp2},
			setup: func(f *fixture) {
				f.dst().deleteErr["snap-0000000b"] = httpErr(400, "SnapshotLocked")
				f.dst().locks["snap-0000000b"] = types.LockStateCompliance
			},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b", "snap-0000000c"}},
		{name: "a source that cannot be deleted keeps its copies", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			setup:    func(f *fixture) { f.src().deleteErr["snap-0000000a"] = netErr() },
			wantEast: []string{"snap-0000000a"},
			wantErr:  []string{"snap-0000000a in us-east-1", "copies are kept"}},
		{name: "the source region cannot be asked (outage): nothing deleted", cfg: west, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			setup:   func(f *fixture) { f.src().failNext(netErr()) },
			wantErr: []string{"snap-0000000a in us-east-1", "nothing deleted"}},
		{name: "other snapshots of the recorded one's CreateSnapshot call go too", cfg: east, id: "snap-0000000a",
			east: []types.Snapshot{
				snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest(TagCreateToken, "t1", TagRecorded, "true")),
				snapshot("snap-0000000d", volA, types.SnapshotStatePending, toDest(TagCreateToken, "t1")),
				snapshot("snap-0000000e", volA, types.SnapshotStateCompleted, toDest(TagCreateToken, "another call")),
			}, west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a", "snap-0000000d"}, wantWest: []string{"snap-0000000b"}},
		{name: "copy-region location given a copy ID", cfg: west, id: "snap-0000000b", east: []types.Snapshot{src}, west: []types.Snapshot{cp, cp2},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b", "snap-0000000c"}},
		{name: "copy-region location given the source ID", cfg: west, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b"}},
		{name: "a region that cannot be asked for copies: nothing deleted", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			setup:   func(f *fixture) { f.dst().failNext(httpErr(503, "Unavailable")) },
			wantErr: []string{"us-west-2", "nothing deleted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.src().add(tt.east...)
			f.dst().add(tt.west...)
			for _, r := range f.regions {
				r.serveDescribe()
				r.serveDelete()
				r.serveTags()
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

// A deletion racing a tracker that is starting the source's copy: the source is marked as being
// deleted before its copy mark is read again, and a copy asked for just before is waited for and
// deleted, even though EC2 lists it only seconds later.
func TestDeleteSnapshotWhileACopyStarts(t *testing.T) {
	for _, requested := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy requested %v", requested), func(t *testing.T) {
			f := newFixture(t)
			src := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest())
			f.src().add(src)
			for _, r := range f.regions {
				r.serveDescribe()
				r.serveDelete()
				r.serveTags()
			}
			f.src().beforeDescribe = func(n int) {
				if n == 1 && requested { // the tracker marks the source between the deletion's two reads
					setTag(&f.src().snaps[0], TagCopyRequestedAt, f.clk.Now().UTC().Format("2006-01-02T15:04:05Z07:00"))
				}
			}
			f.dst().beforeDescribe = func(n int) {
				if n == 2 && requested { // EC2 lists the copy late
					f.dst().snaps = append(f.dst().snaps, copyOfSnap("snap-0000000b", src, types.SnapshotStatePending))
				}
			}
			s := f.snapshotter(Config{Region: srcRegion, CopyToRegion: dstRegion})
			err, ok := onClock(f, time.Hour, func(ctx context.Context) error { return s.DeleteSnapshot(ctx, "snap-0000000a") })
			if !ok {
				t.Fatal("DeleteSnapshot did not return")
			}
			wantErr(t, err)
			if len(f.src().tagged) != 1 || f.src().tagged[0] != "snap-0000000a "+TagDeletionRequestedAt {
				t.Errorf("CreateTags %v, want the deletion mark on the source", f.src().tagged)
			}
			want := []string(nil)
			if requested {
				want = []string{"snap-0000000b"}
			}
			if fmt.Sprint(f.dst().deleted) != fmt.Sprint(want) || fmt.Sprint(f.src().deleted) != "[snap-0000000a]" {
				t.Errorf("deleted %v in %s and %v in %s, want %v and the source", f.dst().deleted, dstRegion, f.src().deleted, srcRegion, want)
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
