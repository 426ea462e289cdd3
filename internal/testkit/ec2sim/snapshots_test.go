package ec2sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestSnapshotLifecycle(t *testing.T) {
	f := start(t, Config{})
	vol := f.volume("us-east-1", VolumeSpec{SizeGiB: 42, Encrypted: true, KmsKeyID: "key-1"})
	t0 := f.clock.Now()
	out, err := f.client("us-east-1").CreateSnapshot(ctx, &ec2.CreateSnapshotInput{
		VolumeId: aws.String(vol), Description: aws.String("nightly"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.State != types.SnapshotStatePending || aws.ToString(out.Progress) != "0%" ||
		aws.ToInt32(out.VolumeSize) != 42 || !aws.ToBool(out.Encrypted) || aws.ToString(out.KmsKeyId) != "key-1" ||
		aws.ToString(out.Description) != "nightly" || !aws.ToTime(out.StartTime).Equal(t0) ||
		aws.ToString(out.OwnerId) != DefaultAccountID || aws.ToString(out.VolumeId) != vol {
		t.Fatalf("CreateSnapshot = %+v", out)
	}
	id := aws.ToString(out.SnapshotId)
	if !wellFormed(id, "snap") {
		t.Errorf("ID %q is not an EC2 snapshot ID", id)
	}
	for _, step := range []struct {
		after    time.Duration
		state    types.SnapshotState
		progress string
	}{
		{0, types.SnapshotStatePending, "0%"},
		{2500 * time.Millisecond, types.SnapshotStatePending, "25%"},
		{9999 * time.Millisecond, types.SnapshotStatePending, "99%"},
		{10 * time.Second, types.SnapshotStateCompleted, "100%"},
		{time.Hour, types.SnapshotStateCompleted, "100%"},
	} {
		f.clock.Set(t0.Add(step.after))
		s := f.describe("us-east-1", id)
		if s.State != step.state || aws.ToString(s.Progress) != step.progress || !aws.ToTime(s.StartTime).Equal(t0) {
			t.Errorf("after %v: state %s progress %s start %v; want %s %s %v",
				step.after, s.State, aws.ToString(s.Progress), aws.ToTime(s.StartTime), step.state, step.progress, t0)
		}
	}
}

func TestDescribeSnapshotsFilters(t *testing.T) {
	f := start(t, Config{})
	v1 := f.volume("us-east-1", VolumeSpec{})
	v2 := f.volume("us-east-1", VolumeSpec{})
	a := f.snapshot("us-east-1", v1, map[string]string{"velero.io/backup": "b1", "env": "prod"})
	b := f.snapshot("us-east-1", v2, map[string]string{"velero.io/backup": "b1"})
	f.clock.Advance(20 * time.Second) // a and b complete
	c := f.snapshot("us-east-1", v1, map[string]string{"velero.io/backup": "b2"})
	if _, err := f.client("us-east-1").CreateSnapshot(ctx, &ec2.CreateSnapshotInput{
		VolumeId: aws.String(v2), Description: aws.String("special one"),
	}); err != nil {
		t.Fatal(err)
	}
	d := f.srv.Sim.Snapshots("us-east-1")[3].ID
	other := f.snapshot("eu-west-1", f.volume("eu-west-1", VolumeSpec{}), map[string]string{"velero.io/backup": "b1"})

	flt := func(name string, values ...string) types.Filter {
		return types.Filter{Name: aws.String(name), Values: values}
	}
	tests := []struct {
		name    string
		in      ec2.DescribeSnapshotsInput
		want    []string
		wantErr string
	}{
		{"all", ec2.DescribeSnapshotsInput{}, []string{a, b, c, d}, ""},
		{"owner self", ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}}, []string{a, b, c, d}, ""},
		{"owner account", ec2.DescribeSnapshotsInput{OwnerIds: []string{DefaultAccountID}}, []string{a, b, c, d}, ""},
		{"owner amazon", ec2.DescribeSnapshotsInput{OwnerIds: []string{"amazon"}}, nil, ""},
		{"ids", ec2.DescribeSnapshotsInput{SnapshotIds: []string{c, a}}, []string{c, a}, ""},
		{"tag", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("tag:velero.io/backup", "b1")}}, []string{a, b}, ""},
		{"tag two values", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("tag:velero.io/backup", "b1", "b2")}}, []string{a, b, c}, ""},
		{"tag wildcard", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("tag:velero.io/backup", "b*")}}, []string{a, b, c}, ""},
		{"two tags", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("tag:velero.io/backup", "b1"), flt("tag:env", "prod")}}, []string{a}, ""},
		{"tag-key", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("tag-key", "env")}}, []string{a}, ""},
		{"volume-id", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("volume-id", v1)}}, []string{a, c}, ""},
		{"snapshot-id", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("snapshot-id", b, d)}}, []string{b, d}, ""},
		{"status pending", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("status", "pending")}}, []string{c, d}, ""},
		{"status completed", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("status", "completed")}}, []string{a, b}, ""},
		{"owner-id", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("owner-id", DefaultAccountID)}}, []string{a, b, c, d}, ""},
		{"encrypted", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("encrypted", "true")}}, nil, ""},
		{"volume-size", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("volume-size", "8")}}, []string{a, b, c, d}, ""},
		{"progress", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("progress", "100%")}}, []string{a, b}, ""},
		{"description", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("description", "special*")}}, []string{d}, ""},
		{"ids and filter", ec2.DescribeSnapshotsInput{SnapshotIds: []string{a, c}, Filters: []types.Filter{flt("status", "completed")}}, []string{a}, ""},
		{"no match", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("tag:velero.io/backup", "nope")}}, nil, ""},
		{"other region only", ec2.DescribeSnapshotsInput{SnapshotIds: []string{other}}, nil, "InvalidSnapshot.NotFound"},
		{"unknown filter", ec2.DescribeSnapshotsInput{Filters: []types.Filter{flt("flavour", "x")}}, nil, "InvalidParameterValue"},
		{"unknown id", ec2.DescribeSnapshotsInput{SnapshotIds: []string{"snap-0123456789abcdef0"}}, nil, "InvalidSnapshot.NotFound"},
		{"malformed id", ec2.DescribeSnapshotsInput{SnapshotIds: []string{"snapshot-1"}}, nil, "InvalidSnapshotID.Malformed"},
		{"ids with max results", ec2.DescribeSnapshotsInput{SnapshotIds: []string{a}, MaxResults: aws.Int32(5)}, nil, "InvalidParameterCombination"},
		{"max results too small", ec2.DescribeSnapshotsInput{MaxResults: aws.Int32(4)}, nil, "InvalidParameterValue"},
		{"bad next token", ec2.DescribeSnapshotsInput{MaxResults: aws.Int32(5), NextToken: aws.String("???")}, nil, "InvalidPaginationToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := f.client("us-east-1").DescribeSnapshots(ctx, &tt.in)
			if errCode(err) != tt.wantErr {
				t.Fatalf("error %v, want code %q", err, tt.wantErr)
			}
			if err != nil {
				if httpStatus(err) != 400 {
					t.Errorf("HTTP status %d, want 400", httpStatus(err))
				}
				return
			}
			var got []string
			for _, s := range out.Snapshots {
				got = append(got, aws.ToString(s.SnapshotId))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDescribeSnapshotsPagination(t *testing.T) {
	f := start(t, Config{})
	var want []string
	for i := range 23 {
		vol := f.volume("us-east-1", VolumeSpec{})
		tags := map[string]string{"velero.io/backup": "big"}
		if i%2 == 1 {
			tags["velero.io/backup"] = "other"
		}
		id := f.snapshot("us-east-1", vol, tags)
		if i%2 == 0 {
			want = append(want, id)
		}
	}
	tests := []struct {
		name      string
		max       int32
		filter    bool
		wantPages int
		wantN     int
	}{
		{"unfiltered by 5", 5, false, 5, 23},
		{"unfiltered by 1000", 1000, false, 1, 23},
		{"over 1000 is cut to 1000", 5000, false, 1, 23},
		{"filtered by 5", 5, true, 3, 12},
		{"filtered by 6", 6, true, 2, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &ec2.DescribeSnapshotsInput{MaxResults: aws.Int32(tt.max), OwnerIds: []string{"self"}}
			if tt.filter {
				in.Filters = []types.Filter{{Name: aws.String("tag:velero.io/backup"), Values: []string{"big"}}}
			}
			p := ec2.NewDescribeSnapshotsPaginator(f.client("us-east-1"), in)
			pages, n := 0, 0
			var got []string
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				n += len(out.Snapshots)
				if len(out.Snapshots) > int(tt.max) {
					t.Errorf("page of %d > MaxResults %d", len(out.Snapshots), tt.max)
				}
				for _, s := range out.Snapshots {
					got = append(got, aws.ToString(s.SnapshotId))
				}
			}
			if pages != tt.wantPages || n != tt.wantN {
				t.Errorf("%d pages, %d snapshots; want %d, %d", pages, n, tt.wantPages, tt.wantN)
			}
			if tt.filter && !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestCreateSnapshotErrors(t *testing.T) {
	f := start(t, Config{SnapshotDuration: Fixed(time.Hour)})
	gp3 := f.volume("us-east-1", VolumeSpec{Type: "gp3"})
	st1 := f.volume("us-east-1", VolumeSpec{Type: "st1"})
	c := f.client("us-east-1")

	// Five pending snapshots of gp3, 15 s apart; one of st1.
	for range 5 {
		f.snapshot("us-east-1", gp3, nil)
		f.clock.Advance(15 * time.Second)
	}
	f.snapshot("us-east-1", st1, nil)

	tooMany := map[string]string{}
	for i := range 51 {
		tooMany["k"+strings.Repeat("x", i)] = "v"
	}
	tests := []struct {
		name    string
		vol     string
		advance time.Duration
		tags    map[string]string
		want    string
	}{
		{"rate per volume", st1, 0, nil, "SnapshotCreationPerVolumeRateExceeded"},
		{"rate per volume 14s later", st1, 14 * time.Second, nil, "SnapshotCreationPerVolumeRateExceeded"},
		{"one pending for st1", st1, time.Second, nil, "ConcurrentSnapshotLimitExceeded"},
		{"five pending for gp3", gp3, 0, nil, "ConcurrentSnapshotLimitExceeded"},
		{"unknown volume", "vol-0123456789abcdef0", 0, nil, "InvalidVolume.NotFound"},
		{"malformed volume", "volume-7", 0, nil, "InvalidVolumeID.Malformed"},
		{"51 tags", gp3, 0, tooMany, "TagLimitExceeded"},
		{"aws: tag", gp3, 0, map[string]string{"aws:backup": "x"}, "InvalidParameterValue"},
		{"key too long", gp3, 0, map[string]string{strings.Repeat("k", 129): "x"}, "InvalidParameterValue"},
		{"value too long", gp3, 0, map[string]string{"k": strings.Repeat("v", 257)}, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Advance(tt.advance)
			in := &ec2.CreateSnapshotInput{VolumeId: aws.String(tt.vol), TagSpecifications: tagSpec(types.ResourceTypeSnapshot, tt.tags)}
			_, err := c.CreateSnapshot(ctx, in)
			if errCode(err) != tt.want || httpStatus(err) != 400 {
				t.Errorf("error %v (HTTP %d), want %s (400)", err, httpStatus(err), tt.want)
			}
		})
	}
	// Boundaries: 128-char key and 256-char value, 50 tags, are accepted.
	fifty := map[string]string{strings.Repeat("k", 128): strings.Repeat("v", 256)}
	for i := range 49 {
		fifty["k"+strings.Repeat("x", i)] = "v"
	}
	f.clock.Advance(time.Hour)
	f.snapshot("us-east-1", gp3, fifty)
}

func TestDeleteSnapshot(t *testing.T) {
	f := start(t, Config{})
	c := f.client("us-east-1")
	vol := f.volume("us-east-1", VolumeSpec{})
	done := f.snapshot("us-east-1", vol, nil)
	f.clock.Advance(15 * time.Second)
	pending := f.snapshot("us-east-1", vol, nil)

	if _, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(done)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{done}}); errCode(err) != "InvalidSnapshot.NotFound" {
		t.Errorf("completed snapshot after delete: %v", err)
	}
	if _, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(pending)}); err != nil {
		t.Fatal(err)
	}
	// Accepted, but the snapshot stays until it would have completed.
	f.clock.Advance(9 * time.Second)
	if s := f.describe("us-east-1", pending); s.State != types.SnapshotStatePending {
		t.Errorf("delete-pending snapshot state %s", s.State)
	}
	if got := f.srv.Sim.Snapshots("us-east-1"); len(got) != 1 || !got[0].DeletePending {
		t.Errorf("Snapshots() = %+v, want one delete-pending", got)
	}
	f.clock.Advance(time.Second)
	if _, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{pending}}); errCode(err) != "InvalidSnapshot.NotFound" {
		t.Errorf("pending snapshot after completion: %v", err)
	}
	if got := f.srv.Sim.Snapshots("us-east-1"); len(got) != 0 {
		t.Errorf("Snapshots() = %+v, want none", got)
	}

	for _, tt := range []struct{ id, want string }{
		{done, "InvalidSnapshot.NotFound"},
		{"snap-12345678", "InvalidSnapshot.NotFound"},
		{"snap-xyz", "InvalidSnapshotID.Malformed"},
	} {
		_, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(tt.id)})
		if errCode(err) != tt.want {
			t.Errorf("DeleteSnapshot(%s): %v, want %s", tt.id, err, tt.want)
		}
	}
}

// TestConcurrentLimitCounts: snapshots deleted while pending and snapshots in state "error" count
// against a volume's concurrent snapshot limit, as AWS documents.
func TestConcurrentLimitCounts(t *testing.T) {
	f := start(t, Config{SnapshotDuration: Fixed(30 * time.Second), Faults: Faults{ErrorVolumes: []string{"vol-0000000000000bad0"}}})
	c := f.client("us-east-1")
	create := func(vol string) error {
		_, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
		return err
	}
	del := func(id string) {
		if _, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(id)}); err != nil {
			t.Fatal(err)
		}
	}
	good := f.volume("us-east-1", VolumeSpec{Type: "st1"})
	bad := f.volume("us-east-1", VolumeSpec{ID: "vol-0000000000000bad0", Type: "sc1"})
	del(f.snapshot("us-east-1", good, nil))
	failed := f.snapshot("us-east-1", bad, nil)

	f.clock.Advance(15 * time.Second)
	if err := create(good); errCode(err) != "ConcurrentSnapshotLimitExceeded" {
		t.Errorf("with a snapshot deleted while pending: %v", err)
	}
	f.clock.Advance(15 * time.Second) // the deleted one completes and goes; the other fails
	if err := create(good); err != nil {
		t.Errorf("after the deleted snapshot completed: %v", err)
	}
	if err := create(bad); errCode(err) != "ConcurrentSnapshotLimitExceeded" {
		t.Errorf("with a snapshot in state error: %v", err)
	}
	del(failed)
	if err := create(bad); err != nil {
		t.Errorf("after deleting the failed snapshot: %v", err)
	}
}

// The full size, as the SDK decodes it: none while pending, half the volume once completed.
func TestSnapshotFullSizeOnceCompleted(t *testing.T) {
	f := start(t, Config{})
	vol := f.volume("us-east-1", VolumeSpec{SizeGiB: 8})
	id := f.snapshot("us-east-1", vol, nil)
	if got := f.describe("us-east-1", id).FullSnapshotSizeInBytes; got != nil {
		t.Errorf("pending snapshot: FullSnapshotSizeInBytes = %d, want none", *got)
	}
	f.clock.Advance(time.Hour)
	if got, want := aws.ToInt64(f.describe("us-east-1", id).FullSnapshotSizeInBytes), int64(4<<30); got != want {
		t.Errorf("completed snapshot: FullSnapshotSizeInBytes = %d, want %d", got, want)
	}
}

// TestAddSnapshotsTo: seeded snapshots and copies are described, paged and locked as if EC2 had
// made them, at the simulator's now.
func TestAddSnapshotsTo(t *testing.T) {
	f := start(t, Config{})
	now := f.clock.Now()
	tags := map[string]string{"velero.io/backup": "nightly"}
	ids := f.srv.Sim.AddSnapshotsTo("", "us-west-2",
		SnapshotSpec{VolumeID: "vol-1", Tags: tags, Started: now.Add(-time.Hour), Completed: now.Add(-50 * time.Minute)},
		SnapshotSpec{VolumeID: "vol-2", Tags: tags, Started: now.Add(-time.Minute), Completed: now.Add(time.Minute), SizeGiB: 100},
		SnapshotSpec{VolumeID: "vol-1", Tags: tags, SourceID: "snap-0source", SourceRegion: "us-east-1", Started: now.Add(-10 * 24 * time.Hour),
			Completed: now.Add(-10*24*time.Hour + time.Hour), Lock: &LockSpec{Mode: lockModeGovernance, Days: 7}},
		SnapshotSpec{VolumeID: "vol-2", Tags: tags, SourceID: "snap-0source", SourceRegion: "us-east-1", Started: now.Add(-time.Hour),
			Completed: now.Add(-time.Hour), Lock: &LockSpec{Mode: lockModeCompliance, Days: 7}},
		SnapshotSpec{ID: "snap-0untagged", VolumeID: "vol-3"},
	)
	byID := map[string]types.Snapshot{}
	in := &ec2.DescribeSnapshotsInput{MaxResults: aws.Int32(5), OwnerIds: []string{"self"},
		Filters: []types.Filter{{Name: aws.String("tag-key"), Values: []string{"velero.io/backup"}}}}
	for p := ec2.NewDescribeSnapshotsPaginator(f.client("us-west-2"), in); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range out.Snapshots {
			byID[aws.ToString(s.SnapshotId)] = s
		}
	}
	locks, err := f.client("us-west-2").DescribeLockedSnapshots(ctx, &ec2.DescribeLockedSnapshotsInput{})
	if err != nil {
		t.Fatal(err)
	}
	lockOf := map[string]types.LockState{}
	for _, l := range locks.Snapshots {
		lockOf[aws.ToString(l.SnapshotId)] = l.LockState
	}
	tests := []struct {
		name, id string
		state    types.SnapshotState
		source   string
		lock     types.LockState
	}{
		{"a completed source", ids[0], types.SnapshotStateCompleted, "", ""},
		{"a pending source", ids[1], types.SnapshotStatePending, "", ""},
		{"a copy whose lock expired 7 days after it completed", ids[2], types.SnapshotStateCompleted, "vol-ffffffff", types.LockStateExpired},
		{"a copy still locked", ids[3], types.SnapshotStateCompleted, "vol-ffffffff", types.LockStateCompliance},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := byID[tt.id]
			if !ok {
				t.Fatalf("%s not listed by its tag", tt.id)
			}
			if s.State != tt.state || tt.source != "" && aws.ToString(s.VolumeId) != tt.source || lockOf[tt.id] != tt.lock {
				t.Errorf("%s: state %s, volume %s, lock %q; want %s, %s, %q", tt.id, s.State, aws.ToString(s.VolumeId), lockOf[tt.id], tt.state, tt.source, tt.lock)
			}
		})
	}
	if len(byID) != 4 || ids[4] != "snap-0untagged" {
		t.Errorf("listed %d by the tag, IDs %v; want the 4 tagged, and the untagged one's own ID", len(byID), ids)
	}
	if n := f.srv.Sim.Stats().Total("", ""); n != 2 {
		t.Errorf("%d calls counted; want only the page and the locks' listing", n)
	}
}
