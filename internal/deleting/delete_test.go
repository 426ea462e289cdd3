package deleting

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

func TestDeleteSnapshot(t *testing.T) {
	src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest())
	cp := mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStateCompleted)
	cp2 := mockec2.CopyOfSnap("snap-0000000c", src, types.SnapshotStatePending)
	east := model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion}
	west := model.Config{Region: mockec2.DstRegion}
	westBack := model.Config{Region: mockec2.DstRegion, CopyToRegion: mockec2.SrcRegion}
	tests := []struct {
		name       string
		cfg        model.Config
		id         string
		east, west []types.Snapshot
		setup      func(f *mockec2.Fixture)
		vaultAsOwn bool     // the vault's credentials reach the source's own account (a mistyped profile)
		wantEast   []string // DeleteSnapshot calls per region, sorted
		wantWest   []string
		wantErr    []string
	}{
		{name: "source and every copy", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp, cp2},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b", "snap-0000000c"}},
		{name: "copy region from the source's tag", cfg: model.Config{Region: mockec2.SrcRegion}, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b"}},
		{name: "source already gone", cfg: east, id: "snap-0000000a", west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b"}},
		{name: "everything already gone", cfg: east, id: "snap-0000000a", wantEast: []string{"snap-0000000a"}},
		{name: "no copy was made", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, wantEast: []string{"snap-0000000a"}},
		{name: "a failing piece does not stop the others", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp, cp2},
			setup: func(f *mockec2.Fixture) {
				f.Dst().DeleteErr["snap-0000000b"] = mockec2.HTTPErr(400, "UnauthorizedOperation")
			},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b", "snap-0000000c"},
			wantErr: []string{"snap-0000000b in us-west-2", "UnauthorizedOperation"}},
		{name: "a locked copy is kept, not a failure", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp, cp2},
			setup: func(f *mockec2.Fixture) {
				f.Dst().DeleteErr["snap-0000000b"] = mockec2.HTTPErr(400, "SnapshotLocked")
				f.Dst().Locks["snap-0000000b"] = types.LockStateCompliance
			},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b", "snap-0000000c"}},
		{name: "a source that cannot be deleted keeps its copies", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			setup:    func(f *mockec2.Fixture) { f.Src().DeleteErr["snap-0000000a"] = mockec2.NetErr() },
			wantEast: []string{"snap-0000000a"},
			wantErr:  []string{"snap-0000000a in us-east-1", "copies are kept"}},
		{name: "the source region cannot be asked (outage): nothing deleted", cfg: west, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			setup:   func(f *mockec2.Fixture) { f.Src().FailNext(mockec2.NetErr()) },
			wantErr: []string{"snap-0000000a in us-east-1", "nothing deleted"}},
		{name: "other snapshots of the recorded one's CreateSnapshot call go too", cfg: east, id: "snap-0000000a",
			east: []types.Snapshot{
				mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagCreateToken, "t1", model.TagRecorded, "true")),
				mockec2.Snapshot("snap-0000000d", mockec2.VolA, types.SnapshotStatePending, mockec2.ToDest(model.TagCreateToken, "t1")),
				mockec2.Snapshot("snap-0000000e", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagCreateToken, "another call")),
			}, west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a", "snap-0000000d"}, wantWest: []string{"snap-0000000b"}},
		{name: "copy-region location given a copy ID", cfg: west, id: "snap-0000000b", east: []types.Snapshot{src}, west: []types.Snapshot{cp, cp2},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b", "snap-0000000c"}},
		{name: "copy-region location given the source ID", cfg: west, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b"}},
		// A recovery cluster's location copying back to the source region: a source whose copy
		// never started is found there, not taken for deleted.
		{name: "copy-region location given a source with no copy deletes it in the region it copies back to", cfg: westBack, id: "snap-0000000a", east: []types.Snapshot{src},
			wantEast: []string{"snap-0000000a"}},
		{name: "copy-region location given a source with no copy, the source region down: nothing deleted, naming it", cfg: westBack, id: "snap-0000000a", east: []types.Snapshot{src},
			setup:   func(f *mockec2.Fixture) { f.Src().FailNext(mockec2.NetErr()) },
			wantErr: []string{"snap-0000000a in us-east-1", "nothing deleted"}},
		{name: "copy-region location given a source with no copy, the source region failing once the copies are listed: nothing deleted, naming it", cfg: westBack, id: "snap-0000000a", east: []types.Snapshot{src},
			setup: func(f *mockec2.Fixture) {
				f.Src().BeforeDescribe = func(n int) {
					if n == 1 {
						f.Src().Failures = append(f.Src().Failures, mockec2.NetErr())
					}
				}
			},
			wantErr: []string{"snapshot snap-0000000a is not in us-west-2 and may be a source in us-east-1", "nothing deleted"}},
		{name: "a snapshot of another backup tagged as a copy of the source is left alone", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src},
			west:     []types.Snapshot{cp, retagged(mockec2.CopyOfSnap("snap-0000000d", src, types.SnapshotStateCompleted), model.TagBackup, "another-tools-backup")},
			wantEast: []string{"snap-0000000a"}, wantWest: []string{"snap-0000000b"}},
		{name: "without the source, snapshots tagged as its copies that disagree on their backup: nothing deleted", cfg: east, id: "snap-0000000a",
			west:    []types.Snapshot{cp, retagged(mockec2.CopyOfSnap("snap-0000000d", src, types.SnapshotStateCompleted), model.TagBackup, "another-tools-backup")},
			wantErr: []string{"snap-0000000b in us-west-2", "snap-0000000d in us-west-2", "nothing deleted"}},
		{name: "a snapshot of the backup Velero recorded as failed goes with it; another install's and one still being made stay", cfg: east, id: "snap-0000000a",
			east: []types.Snapshot{src,
				mockec2.Snapshot("snap-00000011", "vol-0123456789abcdef1", types.SnapshotStateCompleted, mockec2.WithTags(model.TagRecorded, model.RecordedPending), mockec2.StartedAt(-time.Hour)),
				mockec2.Snapshot("snap-00000012", "vol-0123456789abcdef1", types.SnapshotStateCompleted, mockec2.WithTags(model.TagRecorded, model.RecordedPending, model.TagBackupUID, "uid-of-another-install"), mockec2.StartedAt(-time.Hour)),
				mockec2.Snapshot("snap-00000013", "vol-0123456789abcdef2", types.SnapshotStateCompleted, mockec2.WithTags(model.TagRecorded, model.RecordedReturned), mockec2.StartedAt(-time.Hour)),
			}, west: []types.Snapshot{cp},
			wantEast: []string{"snap-0000000a", "snap-00000011"}, wantWest: []string{"snap-0000000b"}},
		{name: "a failed snapshot that cannot be deleted keeps the recorded one, to be found again", cfg: east, id: "snap-0000000a",
			east: []types.Snapshot{src,
				mockec2.Snapshot("snap-00000011", "vol-0123456789abcdef1", types.SnapshotStateCompleted, mockec2.WithTags(model.TagRecorded, model.RecordedPending), mockec2.StartedAt(-time.Hour)),
			}, west: []types.Snapshot{cp},
			setup:    func(f *mockec2.Fixture) { f.Src().DeleteErr["snap-00000011"] = mockec2.NetErr() },
			wantEast: []string{"snap-00000011"},
			wantErr:  []string{"snap-00000011 in us-east-1", "returned an error to Velero", "recorded snapshot and its copies are kept"}},
		// The vault region is the old copy region (copyToRegion since moved) and the vault's
		// credentials are the source account's: what they list there is a regional copy, never
		// taken for a vault copy the location says to keep, nor tagged as one.
		{name: "vault credentials of the source's own account: a regional copy they find is left alone", id: "snap-0000000a", vaultAsOwn: true,
			cfg:      model.Config{Region: mockec2.SrcRegion, Vault: model.VaultConfig{AccountID: vaultAccount, Profile: "vault", Region: mockec2.DstRegion, RetainOnDelete: true}},
			west:     []types.Snapshot{mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStateCompleted, owned(ownAccount))},
			wantEast: []string{"snap-0000000a"}},
		{name: "a region that cannot be asked for copies: nothing deleted", cfg: east, id: "snap-0000000a", east: []types.Snapshot{src}, west: []types.Snapshot{cp},
			setup:   func(f *mockec2.Fixture) { f.Dst().FailNext(mockec2.HTTPErr(503, "Unavailable")) },
			wantErr: []string{"us-west-2", "nothing deleted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(tt.east...)
			f.Dst().Add(tt.west...)
			for _, r := range f.Regions {
				r.ServeDescribe()
				r.ServeDelete()
				r.ServeTags()
			}
			if tt.setup != nil {
				tt.setup(f)
			}
			var opts []ebs.Option
			if tt.vaultAsOwn {
				opts = append(opts, ebs.WithVaultClients(f.Clients()))
			}
			err := newDeleter(f, tt.cfg, opts...).DeleteSnapshot(context.Background(), tt.id)
			mockec2.WantErr(t, err, tt.wantErr...)
			for _, r := range []struct {
				r    *mockec2.Region
				want []string
			}{{f.Src(), tt.wantEast}, {f.Dst(), tt.wantWest}} {
				got := append([]string(nil), r.r.Deleted...)
				sort.Strings(got)
				if fmt.Sprint(got) != fmt.Sprint(r.want) && len(got)+len(r.want) > 0 {
					t.Errorf("deleted in %s: %v, want %v", r.r.Name, got, r.want)
				}
			}
			if tt.vaultAsOwn && len(f.Dst().Tagged) > 0 {
				t.Errorf("tagged %v in %s, want nothing marked as a kept vault copy", f.Dst().Tagged, mockec2.DstRegion)
			}
		})
	}
}

// A deletion racing a tracker that is starting the source's copy (or vault copy): the source is
// marked as being deleted, even while pending (a backup deleted while it waits for its
// operations, after a server restart), before its copy marks are read again, and a copy asked
// for just before is waited for and deleted, even though EC2 lists it only seconds later.
func TestDeleteSnapshotWhileACopyStarts(t *testing.T) {
	tests := []struct {
		name      string
		state     types.SnapshotState
		vault     bool
		requested bool // the tracker marks a copy as requested between the deletion's two reads
		refused   bool // IAM refuses the deletion's mark
		tagLimit  bool // the source carries EC2's limit of tags
	}{
		{name: "no copy asked for: the source alone is deleted", state: types.SnapshotStateCompleted},
		{name: "a copy asked for just before, listed late: waited for and deleted", state: types.SnapshotStateCompleted, requested: true},
		{name: "a vault copy asked for just before, listed late: waited for and deleted", state: types.SnapshotStateCompleted, vault: true, requested: true},
		{name: "a pending source is marked, so that no copy starts once it completes", state: types.SnapshotStatePending},
		{name: "a mark IAM refuses: nothing deleted, the error names the permission", state: types.SnapshotStatePending, refused: true},
		{name: "a source carrying EC2's limit of tags, which no tracker can mark for a copy either, is deleted without the mark", state: types.SnapshotStateCompleted, tagLimit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			intent, requestedTag := mockec2.ToDest(), model.TagCopyRequestedAt
			cfg := model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion}
			if tt.vault {
				intent, requestedTag = mockec2.WithTags(model.TagVaultRegion, mockec2.DstRegion, model.TagVaultAccount, vaultAccount), model.TagVaultRequestedAt
				cfg = model.Config{Region: mockec2.SrcRegion, Vault: model.VaultConfig{AccountID: vaultAccount, Profile: "vault", Region: mockec2.DstRegion}}
			}
			src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, tt.state, intent)
			f.Src().Add(src)
			switch {
			case tt.refused:
				f.Src().M.EXPECT().CreateTags(gomock.Any(), gomock.Any(), gomock.Any()).Return(nil, mockec2.HTTPErr(403, "UnauthorizedOperation"))
			case tt.tagLimit:
				f.Src().M.EXPECT().CreateTags(gomock.Any(), gomock.Any(), gomock.Any()).Return(nil, mockec2.HTTPErr(400, "TagLimitExceeded"))
			}
			for _, r := range f.Regions {
				r.ServeDescribe()
				r.ServeDelete()
				r.ServeTags()
			}
			f.Src().BeforeDescribe = func(n int) {
				if n == 1 && tt.requested {
					model.SetTag(&f.Src().Snaps[0], requestedTag, f.Clk.Now().UTC().Format(time.RFC3339))
				}
			}
			f.Dst().BeforeDescribe = func(n int) {
				if n == 2 && tt.requested { // EC2 lists the copy late
					cp := mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStatePending)
					if tt.vault {
						cp = retagged(cp, model.TagSourceAccount, ownAccount)
					}
					f.Dst().Snaps = append(f.Dst().Snaps, cp)
				}
			}
			s := newDeleter(f, cfg, ebs.WithVaultClients(f.Clients()))
			err, ok := mockec2.OnClock(f, time.Hour, func(ctx context.Context) error { return s.DeleteSnapshot(ctx, "snap-0000000a") })
			if !ok {
				t.Fatal("DeleteSnapshot did not return")
			}
			if tt.refused {
				mockec2.WantErr(t, err, "UnauthorizedOperation", "nothing deleted", "ec2:CreateTags")
				if len(f.Src().Deleted)+len(f.Dst().Deleted) > 0 {
					t.Errorf("deleted %v and %v, want nothing", f.Src().Deleted, f.Dst().Deleted)
				}
				return
			}
			mockec2.WantErr(t, err)
			if tt.tagLimit {
				if fmt.Sprint(f.Src().Deleted) != "[snap-0000000a]" {
					t.Errorf("deleted %v, want the source", f.Src().Deleted)
				}
				return
			}
			if len(f.Src().Tagged) != 1 || f.Src().Tagged[0] != "snap-0000000a "+model.TagDeletionRequestedAt {
				t.Errorf("CreateTags %v, want the deletion mark on the source", f.Src().Tagged)
			}
			want := []string(nil)
			if tt.requested {
				want = []string{"snap-0000000b"}
			}
			if fmt.Sprint(f.Dst().Deleted) != fmt.Sprint(want) || fmt.Sprint(f.Src().Deleted) != "[snap-0000000a]" {
				t.Errorf("deleted %v in %s and %v in %s, want %v and the source", f.Dst().Deleted, mockec2.DstRegion, f.Src().Deleted, mockec2.SrcRegion, want)
			}
		})
	}
}

// A copy asked for just before the deletion, that EC2 may list only after the deletion's time
// budget: the deletion fails saying so, and deletes nothing, so that deleting the backup again
// finds the copy.
func TestDeleteSnapshotWithinItsTimeBudget(t *testing.T) {
	f := mockec2.NewFixture(t)
	f.Src().Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(model.TagCopyRequestedAt, mockec2.T0.Format(time.RFC3339))))
	for _, r := range f.Regions {
		r.ServeDescribe()
		r.ServeDelete()
		r.ServeTags()
	}
	s := newDeleter(f, model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion}, ebs.WithListingLag(deleteBudget+time.Minute))
	err, ok := mockec2.OnClock(f, time.Hour, func(ctx context.Context) error { return s.DeleteSnapshot(ctx, "snap-0000000a") })
	if !ok {
		t.Fatal("DeleteSnapshot did not return")
	}
	mockec2.WantErr(t, err, "copy of snap-0000000a to us-west-2 requested at", "nothing deleted", deleteBudget.String())
	if len(f.Src().Deleted)+len(f.Dst().Deleted) > 0 {
		t.Errorf("deleted %v and %v, want nothing", f.Src().Deleted, f.Dst().Deleted)
	}
}

func TestDeleteSnapshotMalformedID(t *testing.T) {
	for _, id := range []string{"", "snap-XYZ", "vol-0123456789abcdef0", "snap-0123", "snap-0123456789ABCDEF0"} {
		t.Run(id, func(t *testing.T) {
			f := mockec2.NewFixture(t) // no EC2 call expected
			mockec2.WantErr(t, newDeleter(f, model.Config{Region: mockec2.SrcRegion}).DeleteSnapshot(context.Background(), id), fmt.Sprintf("%q", id), "not an EBS snapshot ID")
		})
	}
}

// Accounts of the decision's tests: the source account and a vault account.
const (
	ownAccount   = "111111111111"
	vaultAccount = "222222222222"
)

func owned(account string) mockec2.SnapOpt {
	return func(s *types.Snapshot) { s.OwnerId = aws.String(account) }
}

// retagged is a copy of s with tags set (or, with an empty value, removed) as key, value pairs.
func retagged(s types.Snapshot, kv ...string) types.Snapshot {
	s.Tags = slices.Clone(s.Tags)
	for i := 0; i+1 < len(kv); i += 2 {
		model.SetTag(&s, kv[i], kv[i+1])
	}
	return s
}

// vaultCopyOf is src's vault copy in dstRegion as the copy path tags it, owned by the vault.
func vaultCopyOf(id string, src types.Snapshot, kv ...string) types.Snapshot {
	return retagged(mockec2.CopyOfSnap(id, src, types.SnapshotStateCompleted, owned(vaultAccount)), append([]string{model.TagSourceAccount, ownAccount}, kv...)...)
}

// A read of EC2 whose answers come slowly (throttling, retries) is as old as its start: a copy
// a tracker asked for while it ran is waited for, though the listing lag has passed since the
// mark by the time the read ends.
func TestDeleteSnapshotSlowReadWaitsForACopyAskedMeanwhile(t *testing.T) {
	f := mockec2.NewFixture(t)
	src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest())
	f.Src().Add(src)
	for _, r := range f.Regions {
		r.ServeDescribe()
		r.ServeDelete()
		r.ServeTags()
	}
	const lag = 30 * time.Second
	f.Src().BeforeDescribe = func(n int) {
		if n == 2 { // the read after the mark: the tracker asks for the copy, then the read is slow
			model.SetTag(&f.Src().Snaps[0], model.TagCopyRequestedAt, f.Clk.Now().UTC().Format(time.RFC3339))
			f.Clk.Step(lag + 10*time.Second)
		}
	}
	f.Dst().BeforeDescribe = func(n int) {
		if n == 2 { // EC2 lists the copy only to the read after that
			f.Dst().Snaps = append(f.Dst().Snaps, mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStatePending))
		}
	}
	s := newDeleter(f, model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion}, ebs.WithListingLag(lag))
	err, ok := mockec2.OnClock(f, time.Hour, func(ctx context.Context) error { return s.DeleteSnapshot(ctx, "snap-0000000a") })
	if !ok {
		t.Fatal("DeleteSnapshot did not return")
	}
	mockec2.WantErr(t, err)
	if fmt.Sprint(f.Dst().Deleted) != "[snap-0000000b]" || fmt.Sprint(f.Src().Deleted) != "[snap-0000000a]" {
		t.Errorf("deleted %v in %s and %v in %s, want the copy asked for during the read, and the source", f.Dst().Deleted, mockec2.DstRegion, f.Src().Deleted, mockec2.SrcRegion)
	}
}

// The decision alone: what a deletion deletes, keeps, leaves alone, marks and waits for, from
// what it read, the location's policy and the time.
func TestDecideDeletion(t *testing.T) {
	at := func(d time.Duration) string { return mockec2.T0.Add(d).UTC().Format(time.RFC3339) }
	lag := 30 * time.Second
	src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(), owned(ownAccount))
	retainSrc := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, owned(ownAccount),
		mockec2.WithTags(model.TagVaultRegion, mockec2.DstRegion, model.TagVaultAccount, vaultAccount, model.TagVaultRetainOnDelete, "true"))
	retainBoth := retagged(retainSrc, model.TagCopyToRegion, mockec2.DstRegion)
	vaultSrc := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, owned(ownAccount),
		mockec2.WithTags(model.TagVaultRegion, mockec2.DstRegion, model.TagVaultAccount, vaultAccount))
	pending := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStatePending, mockec2.ToDest(), owned(ownAccount))
	marked := func(s types.Snapshot, kv ...string) *types.Snapshot {
		s = retagged(s, append([]string{model.TagDeletionRequestedAt, at(0)}, kv...)...)
		return &s
	}
	cp := mockec2.CopyOfSnap("snap-0000000b", src, types.SnapshotStateCompleted, owned(ownAccount))
	otherBackup := retagged(mockec2.CopyOfSnap("snap-0000000c", src, types.SnapshotStateCompleted), model.TagBackup, "another-backup")
	otherRegion := retagged(mockec2.CopyOfSnap("snap-0000000d", src, types.SnapshotStateCompleted), model.TagSourceRegion, "eu-west-1")
	otherUID := retagged(mockec2.CopyOfSnap("snap-0000000e", src, types.SnapshotStateCompleted), model.TagBackupUID, "uid-of-another-install")
	failedCreate := mockec2.Snapshot("snap-00000010", "vol-0123456789abcdef1", types.SnapshotStateCompleted, mockec2.WithTags(model.TagRecorded, model.RecordedPending))
	noUID := retagged(src, model.TagBackupUID, "")
	// What CreateSnapshot writes at creation, when the UID handoff was lost or not.
	const install, otherInstall = "cluster-uid/velero", "other-cluster-uid/velero"
	installed := retagged(src, model.TagInstall, install)
	installedNoUID := retagged(installed, model.TagBackupUID, "")
	failedMade := retagged(failedCreate, model.TagInstall, install, model.TagCreateToken, "token-1")
	failedNoUID := retagged(failedMade, model.TagBackupUID, "")
	failedEarlier := failedNoUID
	failedEarlier.StartTime = aws.Time(mockec2.T0.Add(-sameBackupSpan - time.Minute))
	// An earlier release's snapshots (no create token) of two static PVs on one volume: its
	// CreateSnapshot of pv-1, retried after a lost answer, made two.
	oldSrc := retagged(src, model.TagPV, "pv-1", model.TagRecorded, model.RecordedTrue)
	oldRetried := mockec2.Snapshot("snap-00000020", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-1"))
	oldOtherPV := mockec2.Snapshot("snap-00000021", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagPV, "pv-2", model.TagRecorded, model.RecordedTrue))
	sourceInSrc := regionalSnapshot{mockec2.SrcRegion, "snap-0000000a"}
	inSrc := func(snaps ...types.Snapshot) []foundSnapshot {
		var out []foundSnapshot
		for _, s := range snaps {
			out = append(out, found(mockec2.SrcRegion, locationCredentials, s))
		}
		return out
	}
	inDst := func(via credentialsOf, snaps ...types.Snapshot) []foundSnapshot {
		var out []foundSnapshot
		for _, s := range snaps {
			out = append(out, found(mockec2.DstRegion, via, s))
		}
		return out
	}
	tests := []struct {
		name   string
		seen   deletionSeen
		policy deletionPolicy
		now    time.Duration // after t0
		// want: "refuse", "mark ID", "wait until T", or the plan as "warn (text); delete ID; then ID,ID; keep ID (why); leave ID".
		want string
		// refusalSays is what a refusal's error says, in part.
		refusalSays string
	}{
		{name: "the source goes first, then its copy",
			seen: deletionSeen{source: &src, copies: inDst(locationCredentials, cp)},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		{name: "a source already gone is deleted all the same (EC2 answers not found), with its copies",
			seen: deletionSeen{copies: inDst(locationCredentials, cp)},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		{name: "a copy of another backup naming the same source is left alone",
			seen: deletionSeen{source: &src, copies: inDst(locationCredentials, cp, otherBackup)},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-0000000c in us-west-2"},
		{name: "a copy naming another source region is left alone",
			seen: deletionSeen{source: &src, copies: inDst(locationCredentials, cp, otherRegion)},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-0000000d in us-west-2"},
		{name: "a copy tagged with another install's backup UID is left alone",
			seen: deletionSeen{source: &src, copies: inDst(locationCredentials, cp, otherUID)},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-0000000e in us-west-2"},
		{name: "without the source, copies that disagree on their backup: nothing deleted",
			seen: deletionSeen{copies: inDst(locationCredentials, cp, otherBackup)},
			want: "refuse"},
		{name: "the recorded copy tells which copies are the backup's when the source is gone",
			seen: deletionSeen{recordedCopy: &cp, copies: inDst(locationCredentials, cp, otherBackup)},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-0000000c in us-west-2"},
		{name: "a locked vault copy is kept",
			seen: deletionSeen{source: &vaultSrc, copies: inDst(vaultCredentials, vaultCopyOf("snap-0000000f", vaultSrc, model.TagVaultLock, "compliance:1")),
				locks: map[regionalSnapshot]types.LockState{{mockec2.DstRegion, "snap-0000000f"}: types.LockStateCompliance}},
			want: "delete snap-0000000a in us-east-1; keep snap-0000000f in us-west-2 (its compliance lock has not expired)"},
		{name: "a vault copy asked to be locked and not locked yet: the source is marked first, so that no tracker locks it",
			seen: deletionSeen{source: &vaultSrc, copies: inDst(vaultCredentials, vaultCopyOf("snap-0000000f", vaultSrc, model.TagVaultLock, "governance:1"))},
			want: "mark snap-0000000a in us-east-1"},
		{name: "then a tracker that read the source before the mark may still lock it: waited for",
			seen: deletionSeen{source: marked(vaultSrc), markedAt: mockec2.T0, copies: inDst(vaultCredentials, vaultCopyOf("snap-0000000f", vaultSrc, model.TagVaultLock, "governance:1"))},
			now:  time.Second, want: "wait until " + at(lockSettle)},
		{name: "locked meanwhile: kept",
			seen: deletionSeen{source: marked(vaultSrc), markedAt: mockec2.T0, copies: inDst(vaultCredentials, vaultCopyOf("snap-0000000f", vaultSrc, model.TagVaultLock, "governance:1")),
				locks: map[regionalSnapshot]types.LockState{{mockec2.DstRegion, "snap-0000000f"}: types.LockStateGovernance}},
			now: time.Second, want: "delete snap-0000000a in us-east-1; keep snap-0000000f in us-west-2 (its governance lock has not expired)"},
		{name: "still unlocked once no tracker may lock it: it goes with its backup",
			seen: deletionSeen{source: marked(vaultSrc), markedAt: mockec2.T0, copies: inDst(vaultCredentials, vaultCopyOf("snap-0000000f", vaultSrc, model.TagVaultLock, "governance:1"))},
			now:  lockSettle, want: "delete snap-0000000a in us-east-1; then snap-0000000f in us-west-2"},
		{name: "an unlocked vault copy goes with its backup",
			seen: deletionSeen{source: &vaultSrc, copies: inDst(vaultCredentials, vaultCopyOf("snap-0000000f", vaultSrc))},
			want: "delete snap-0000000a in us-east-1; then snap-0000000f in us-west-2"},
		{name: "a vault copy is kept when the location says vaultRetainOnDelete",
			seen:   deletionSeen{source: &vaultSrc, copies: inDst(vaultCredentials, vaultCopyOf("snap-0000000f", vaultSrc))},
			policy: deletionPolicy{retainVaultCopies: true},
			want:   "delete snap-0000000a in us-east-1; keep snap-0000000f in us-west-2 (vaultRetainOnDelete is true)"},
		{name: "a vault copy is kept when its source says retain, whatever the location's config",
			seen: deletionSeen{source: &retainSrc, copies: inDst(vaultCredentials, retagged(vaultCopyOf("snap-0000000f", retainSrc), model.TagVaultRetainOnDelete, ""))},
			want: "delete snap-0000000a in us-east-1; keep snap-0000000f in us-west-2 (its source is tagged velero-async.io/vault-retain-on-delete)"},
		{name: "a recovery cluster restoring from the vault keeps a vault copy that says retain, and leaves the source to its account",
			seen: deletionSeen{here: mockec2.DstRegion, sourceRegion: mockec2.SrcRegion,
				copies: inDst(locationCredentials, vaultCopyOf("snap-0000000f", vaultSrc, model.TagVaultRetainOnDelete, "true"))},
			want: "keep snap-0000000f in us-west-2 (it is tagged velero-async.io/vault-retain-on-delete); leave snap-0000000a in us-east-1"},
		{name: "a recovery cluster restoring from the vault deletes a vault copy not retained, and leaves the source to its account",
			seen: deletionSeen{here: mockec2.DstRegion, sourceRegion: mockec2.SrcRegion, copies: inDst(locationCredentials, vaultCopyOf("snap-0000000f", vaultSrc))},
			want: "then snap-0000000f in us-west-2; leave snap-0000000a in us-east-1"},
		{name: "a regional copy is not retained by the vault's retain",
			seen: deletionSeen{source: &retainBoth, copies: append(inDst(locationCredentials, mockec2.CopyOfSnap("snap-0000000b", retainBoth, types.SnapshotStateCompleted)),
				inDst(vaultCredentials, vaultCopyOf("snap-0000000f", retainBoth))...)},
			policy: deletionPolicy{retainVaultCopies: true},
			want:   "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; keep snap-0000000f in us-west-2 (it is tagged velero-async.io/vault-retain-on-delete)"},
		{name: "a pending source whose copy has not started is marked first",
			seen: deletionSeen{source: &pending},
			want: "mark snap-0000000a in us-east-1"},
		{name: "a source marked by this deletion, no copy asked for: deleted at once",
			seen: deletionSeen{source: marked(src), markedAt: mockec2.T0},
			want: "delete snap-0000000a in us-east-1"},
		{name: "a copy asked for just before the mark is waited for, as long as its fill may send it and EC2 list it",
			seen: deletionSeen{source: marked(src, model.TagCopyRequestedAt, at(-2*time.Second)), markedAt: mockec2.T0}, now: time.Second,
			want: "wait until " + at(-2*time.Second+copyRequestSpread+lag)},
		{name: "a vault copy asked for just before the mark is waited for, as long as its fill may send it and EC2 list it",
			seen: deletionSeen{source: marked(vaultSrc, model.TagVaultRequestedAt, at(-2*time.Second)), markedAt: mockec2.T0}, now: time.Second,
			want: "wait until " + at(-2*time.Second+copyRequestSpread+lag)},
		{name: "a copy asked for long before the mark is waited for a listing lag after the mark",
			seen: deletionSeen{source: marked(src, model.TagCopyRequestedAt, at(-lag)), markedAt: mockec2.T0}, now: time.Second,
			want: "wait until " + at(lag)},
		{name: "once the listing lag has passed, a copy never listed is not waited for",
			seen: deletionSeen{source: marked(src, model.TagCopyRequestedAt, at(-2*time.Second)), markedAt: mockec2.T0}, now: -2*time.Second + copyRequestSpread + lag,
			want: "delete snap-0000000a in us-east-1"},
		{name: "a copy asked for long before the mark is not waited for",
			seen: deletionSeen{source: marked(src, model.TagCopyRequestedAt, at(-time.Hour)), markedAt: mockec2.T0}, now: time.Second,
			want: "delete snap-0000000a in us-east-1"},
		// EC2's answer to the deletion's mark of the source, judged before EC2's listings.
		{name: "a mark IAM refuses: nothing deleted, the error names the permission",
			seen: deletionSeen{source: &pending, markedAt: mockec2.T0, marked: markAnswer{sourceInSrc, mockec2.HTTPErr(403, "UnauthorizedOperation")}},
			want: "refuse", refusalSays: "UnauthorizedOperation; nothing deleted: allow the location's credentials ec2:CreateTags"},
		{name: "a mark whose outcome is unknown: nothing deleted, delete the backup again",
			seen: deletionSeen{source: &pending, markedAt: mockec2.T0, marked: markAnswer{sourceInSrc, mockec2.HTTPErr(503, "ServiceUnavailable")}},
			want: "refuse", refusalSays: "ServiceUnavailable; nothing deleted, delete the backup again"},
		{name: "a source carrying EC2's limit of tags, which no tracker can mark for a copy either, is deleted without the mark, with a warning",
			seen: deletionSeen{source: &pending, markedAt: mockec2.T0, marked: markAnswer{sourceInSrc, mockec2.HTTPErr(400, ec2api.CodeTagLimitExceeded)}},
			want: "warn (Could not mark snapshot snap-0000000a in us-east-1 as being deleted: it carries EC2's limit of tags, so no copy of it can be marked and started either); " +
				"delete snap-0000000a in us-east-1"},
		{name: "a source EC2 no longer knows when marked (gone meanwhile, still listed) needs no mark: its deletion goes on",
			seen: deletionSeen{source: &pending, markedAt: mockec2.T0, marked: markAnswer{sourceInSrc, mockec2.APIErr(ec2api.CodeSnapshotNotFound)}},
			want: "delete snap-0000000a in us-east-1"},
		{name: "a source marked by an earlier deletion is not marked again",
			seen: deletionSeen{source: marked(pending)}, now: time.Hour,
			want: "delete snap-0000000a in us-east-1"},
		// EC2 may not list a snapshot made moments ago: the deletion asks by marking it.
		{name: "a recorded snapshot listed nowhere is probed by marking it",
			seen: deletionSeen{},
			want: "probe snap-0000000a in us-east-1"},
		{name: "a recorded snapshot listed nowhere by a recovery cluster's location is probed in its copyToRegion too",
			seen: deletionSeen{here: mockec2.DstRegion, elsewhere: mockec2.SrcRegion},
			want: "probe snap-0000000a in us-west-2, snap-0000000a in us-east-1"},
		{name: "a recorded snapshot that took the mark but is not listed yet is waited for",
			seen: deletionSeen{probed: []markAnswer{{sourceInSrc, nil}}, markedAt: mockec2.T0}, now: time.Second,
			want: "wait until " + at(lag)},
		{name: "a recorded snapshot not listed a listing lag after its mark is deleted by its ID",
			seen: deletionSeen{probed: []markAnswer{{sourceInSrc, nil}}, markedAt: mockec2.T0}, now: lag,
			want: "delete snap-0000000a in us-east-1"},
		{name: "a recorded snapshot EC2 does not know is gone",
			seen: deletionSeen{probed: []markAnswer{{sourceInSrc, mockec2.APIErr(ec2api.CodeSnapshotNotFound)}}},
			want: "delete snap-0000000a in us-east-1"},
		{name: "a recorded snapshot not known in the copy region but taking the mark in the source region exists there",
			seen: deletionSeen{here: mockec2.DstRegion, elsewhere: mockec2.SrcRegion, markedAt: mockec2.T0,
				probed: []markAnswer{{regionalSnapshot{mockec2.DstRegion, "snap-0000000a"}, mockec2.APIErr(ec2api.CodeSnapshotNotFound)}, {sourceInSrc, nil}}}, now: time.Second,
			want: "wait until " + at(lag)},
		{name: "a recorded snapshot listed nowhere whose mark EC2 refuses (another account's) is not there",
			seen: deletionSeen{probed: []markAnswer{{sourceInSrc, mockec2.HTTPErr(403, "UnauthorizedOperation")}}},
			want: "delete snap-0000000a in us-east-1"},
		{name: "a recorded snapshot listed nowhere whose mark EC2 refuses for its limit of tags exists, not listed yet",
			seen: deletionSeen{probed: []markAnswer{{sourceInSrc, mockec2.HTTPErr(400, ec2api.CodeTagLimitExceeded)}}, markedAt: mockec2.T0}, now: time.Second,
			want: "wait until " + at(lag)},
		{name: "a recorded snapshot listed nowhere whose mark has no answer: nothing deleted, delete the backup again",
			seen: deletionSeen{probed: []markAnswer{{sourceInSrc, mockec2.HTTPErr(503, "ServiceUnavailable")}}},
			want: "refuse", refusalSays: "marking snapshot snap-0000000a in us-east-1, which EC2 does not list, as being deleted: "},
		{name: "a source with its copy listed needs no mark",
			seen: deletionSeen{source: &src, copies: inDst(locationCredentials, cp)},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		// Snapshots of the backup whose CreateSnapshot returned an error to Velero: Velero names
		// none of them, so the deletion of the snapshots it recorded deletes them, first.
		{name: "a snapshot of the backup Velero recorded as failed goes first",
			seen: deletionSeen{source: &src, copies: inDst(locationCredentials, cp), unreturned: inSrc(failedCreate)}, now: time.Hour,
			want: "first snap-00000010 in us-east-1; delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		// Velero deletes a backup only after its item phase: no call of it can still return one.
		{name: "a snapshot of the backup Velero recorded as failed moments ago goes too",
			seen: deletionSeen{source: &src, copies: inDst(locationCredentials, cp), unreturned: inSrc(failedCreate)}, now: time.Second,
			want: "first snap-00000010 in us-east-1; delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		{name: "a failed snapshot of another backup of the same name (another install's UID) is left alone",
			seen: deletionSeen{source: &src, copies: inDst(locationCredentials, cp), unreturned: inSrc(retagged(failedCreate, model.TagBackupUID, "uid-of-another-install"))}, now: time.Hour,
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-00000010 in us-east-1"},
		{name: "a failed snapshot tagged with another backup's name is left alone",
			seen: deletionSeen{source: &src, copies: inDst(locationCredentials, cp), unreturned: inSrc(retagged(failedCreate, model.TagBackup, "weekly"))}, now: time.Hour,
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-00000010 in us-east-1"},
		{name: "an earlier release's second snapshot of the recorded one's PV (its CreateSnapshot retried after a lost answer) goes first, so no operation follows it once the recorded one is gone",
			seen: deletionSeen{source: &oldSrc, copies: inDst(locationCredentials, cp), siblings: inSrc(oldRetried)},
			want: "first snap-00000020 in us-east-1; delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		{name: "an earlier release's snapshot of another static PV on the same volume stays",
			seen: deletionSeen{source: &oldSrc, copies: inDst(locationCredentials, cp), siblings: inSrc(oldOtherPV)},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		{name: "an earlier release's snapshot of the same PV and another backup's UID stays",
			seen: deletionSeen{source: &oldSrc, copies: inDst(locationCredentials, cp), siblings: inSrc(retagged(oldRetried, model.TagBackupUID, "uid-of-an-earlier-backup"))},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		{name: "a snapshot of this release with the UID and PV of an earlier release's recorded one is not its sibling",
			seen: deletionSeen{source: &oldSrc, copies: inDst(locationCredentials, cp), siblings: inSrc(retagged(oldRetried, model.TagCreateToken, "token-2"))},
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		{name: "without the source's UID or this install's identity no failed snapshot can be told as the backup's",
			seen: deletionSeen{source: &noUID, copies: inDst(locationCredentials, cp), unreturned: inSrc(failedCreate)}, now: time.Hour,
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-00000010 in us-east-1"},
		// The item phase's plugin process restarted before a CreateSnapshot: its snapshot has no
		// UID, and is the backup's by its name, this install's identity and its start.
		{name: "a failed snapshot made without the UID by a restarted plugin process goes with the backup",
			seen: deletionSeen{source: &installed, copies: inDst(locationCredentials, cp), unreturned: inSrc(failedNoUID)}, now: time.Hour,
			want: "first snap-00000010 in us-east-1; delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		{name: "a failed snapshot goes with a backup whose recorded snapshot was made without the UID",
			seen: deletionSeen{source: &installedNoUID, copies: inDst(locationCredentials, cp), unreturned: inSrc(failedMade)}, now: time.Hour,
			want: "first snap-00000010 in us-east-1; delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2"},
		{name: "a failed snapshot without the UID of another install's backup of the same name is left alone",
			seen: deletionSeen{source: &installedNoUID, copies: inDst(locationCredentials, cp), unreturned: inSrc(retagged(failedNoUID, model.TagInstall, otherInstall))}, now: time.Hour,
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-00000010 in us-east-1"},
		{name: "a failed snapshot without the UID of an install whose identity was not read is left alone",
			seen: deletionSeen{source: &installedNoUID, copies: inDst(locationCredentials, cp), unreturned: inSrc(retagged(failedNoUID, model.TagInstall, ""))}, now: time.Hour,
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-00000010 in us-east-1"},
		{name: "a failed snapshot without the UID started over a day before the recorded one (an earlier backup of the same name) is left alone",
			seen: deletionSeen{source: &installedNoUID, copies: inDst(locationCredentials, cp), unreturned: inSrc(failedEarlier)}, now: time.Hour,
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-00000010 in us-east-1"},
		{name: "a snapshot without the UID marked pending that no CreateSnapshot of this plugin made (no create token) is left alone",
			seen: deletionSeen{source: &installedNoUID, copies: inDst(locationCredentials, cp), unreturned: inSrc(retagged(failedNoUID, model.TagCreateToken, ""))}, now: time.Hour,
			want: "delete snap-0000000a in us-east-1; then snap-0000000b in us-west-2; leave snap-00000010 in us-east-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := tt.seen
			seen.sourceID, seen.recordedID = "snap-0000000a", "snap-0000000a"
			if seen.here == "" {
				// A row naming no region is a location in the source region, its source's.
				seen.here = mockec2.SrcRegion
				if seen.sourceRegion == "" {
					seen.sourceRegion = mockec2.SrcRegion
				}
			}
			tt.policy.listingLag = lag
			plan := decideDeletion(seen, tt.policy, mockec2.T0.Add(tt.now))
			if got := planText(plan); got != tt.want {
				t.Errorf("plan %q, want %q", got, tt.want)
			}
			if tt.refusalSays != "" && (plan.refusal == nil || !strings.Contains(plan.refusal.Error(), tt.refusalSays)) {
				t.Errorf("refusal %v, want it to say %q", plan.refusal, tt.refusalSays)
			}
		})
	}
}

// planText writes a plan as TestDecideDeletion's rows want it.
func planText(p deletionPlan) string {
	switch {
	case p.refusal != nil:
		return "refuse"
	case p.probe != nil:
		var where []string
		for _, t := range p.probe {
			where = append(where, t.String())
		}
		return "probe " + strings.Join(where, ", ")
	case p.mark != nil:
		return "mark " + p.mark.String()
	case !p.waitUntil.IsZero():
		return "wait until " + p.waitUntil.UTC().Format(time.RFC3339)
	}
	var parts, first []string
	if p.warning != "" {
		parts = append(parts, "warn ("+p.warning+")")
	}
	for _, t := range p.first {
		first = append(first, t.String())
	}
	if len(first) > 0 {
		parts = append(parts, "first "+strings.Join(first, ","))
	}
	if p.source != nil {
		parts = append(parts, "delete "+p.source.String())
	}
	var rest, leave []string
	for _, t := range p.rest {
		rest = append(rest, t.String())
	}
	if len(rest) > 0 {
		parts = append(parts, "then "+strings.Join(rest, ","))
	}
	for _, t := range p.keep {
		parts = append(parts, fmt.Sprintf("keep %s (%s)", t, t.why))
	}
	for _, t := range p.leave {
		leave = append(leave, t.String())
	}
	if len(leave) > 0 {
		parts = append(parts, "leave "+strings.Join(leave, ","))
	}
	return strings.Join(parts, "; ")
}

// Velero deletes a backup's snapshots one DeleteSnapshot each, in one plugin process: the
// backup's snapshots recorded as failed are looked for, and deleted, at the first, and the
// process asks EC2 for them no more for that backup.
func TestDeleteSnapshotLooksForFailedSnapshotsOncePerBackup(t *testing.T) {
	srcA := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest())
	srcE := mockec2.Snapshot("snap-0000000e", "vol-0123456789abcdef3", types.SnapshotStateCompleted, mockec2.ToDest())
	failed := mockec2.Snapshot("snap-00000011", "vol-0123456789abcdef1", types.SnapshotStateCompleted, mockec2.WithTags(model.TagRecorded, model.RecordedPending), mockec2.StartedAt(-time.Hour))
	cfg := model.Config{Region: mockec2.SrcRegion, CopyToRegion: mockec2.DstRegion}
	describesOfSecond := map[bool]int{}
	for _, sameProcess := range []bool{false, true} {
		f := mockec2.NewFixture(t)
		f.Src().Add(srcA, srcE, failed)
		f.Dst().Add(mockec2.CopyOfSnap("snap-0000000b", srcA, types.SnapshotStateCompleted), mockec2.CopyOfSnap("snap-0000000f", srcE, types.SnapshotStateCompleted))
		for _, r := range f.Regions {
			r.ServeDescribe()
			r.ServeDelete()
			r.ServeTags()
		}
		s := newDeleter(f, cfg)
		if err := s.DeleteSnapshot(context.Background(), "snap-0000000a"); err != nil {
			t.Fatal(err)
		}
		if !sameProcess {
			s = newDeleter(f, cfg)
		}
		before := f.Src().DescribeCount()
		if err := s.DeleteSnapshot(context.Background(), "snap-0000000e"); err != nil {
			t.Fatal(err)
		}
		describesOfSecond[sameProcess] = f.Src().DescribeCount() - before
		got := append([]string(nil), f.Src().Deleted...)
		sort.Strings(got)
		if want := []string{"snap-0000000a", "snap-0000000e", "snap-00000011"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("same process %t: deleted in %s: %v, want %v", sameProcess, mockec2.SrcRegion, got, want)
		}
	}
	if describesOfSecond[true] != describesOfSecond[false]-1 {
		t.Errorf("the second deletion made %d DescribeSnapshots in %s in the process of the first, %d in a fresh one; want one fewer (no second look for failed snapshots)",
			describesOfSecond[true], mockec2.SrcRegion, describesOfSecond[false])
	}
}

// What EC2's answer to deleting a snapshot means.
func TestWhatADeletionAnswerMeans(t *testing.T) {
	target := deletionTarget{regionalSnapshot: regionalSnapshot{region: mockec2.DstRegion, id: "snap-c0000001"}}
	refused := mockec2.APIErr("InvalidParameterValue")
	until := mockec2.T0.Add(24 * time.Hour)
	tests := []struct {
		name string
		err  error
		lock *types.LockedSnapshotsInfo
		want deleteAnswer
	}{
		{name: "deleted", want: deleteAnswer{}},
		{name: "already gone counts as deleted", err: mockec2.APIErr(ec2api.CodeSnapshotNotFound), want: deleteAnswer{}},
		{name: "a refusal is first checked against the snapshot's lock", err: refused, want: deleteAnswer{readLock: true}},
		{name: "a snapshot its lock holds is kept, not a failure", err: refused, lock: &types.LockedSnapshotsInfo{LockState: types.LockStateGovernance, LockExpiresOn: &until},
			want: deleteAnswer{keep: "its governance lock lasts until " + until.Format(time.RFC3339)}},
		{name: "a refusal with no lock holding fails the deletion", err: refused, lock: &types.LockedSnapshotsInfo{LockState: types.LockStateExpired}},
		{name: "a transient failure fails the deletion, which Velero tries again", err: mockec2.HTTPErr(503, "ServiceUnavailable")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideDeleteAnswer(target, tt.err, tt.lock)
			if got.readLock != tt.want.readLock || got.keep != tt.want.keep {
				t.Errorf("decideDeleteAnswer = %+v, want %+v", got, tt.want)
			}
			if failed := tt.want.keep == "" && tt.err != nil && !ec2api.IsNotFound(tt.err); (got.err != nil) != failed {
				t.Errorf("error %v, want one: %v", got.err, failed)
			}
		})
	}
}
