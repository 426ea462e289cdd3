package ec2sim

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func deleteSnapshot(c *ec2.Client, id string) error {
	_, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(id)})
	return err
}

func unlock(c *ec2.Client, id string) error {
	_, err := c.UnlockSnapshot(ctx, &ec2.UnlockSnapshotInput{SnapshotId: aws.String(id)})
	return err
}

// TestComplianceLock: the lock moves from cooling-off to compliance to expired with the clock;
// it can be undone only while cooling off, extended but not shortened after, and keeps the
// snapshot from being deleted until it expires.
func TestComplianceLock(t *testing.T) {
	f := start(t, sharingConfig())
	a := f.clientAs("us-east-1", keyA, "")
	snap := f.snapshotOf(a, acctA, VolumeSpec{})
	t0 := f.clock.Now()
	out, err := a.LockSnapshot(ctx, &ec2.LockSnapshotInput{SnapshotId: aws.String(snap), LockMode: types.LockModeCompliance,
		CoolOffPeriod: aws.Int32(2), LockDuration: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.SnapshotId) != snap || out.LockState != types.LockStateComplianceCooloff || aws.ToInt32(out.LockDuration) != 1 ||
		aws.ToInt32(out.CoolOffPeriod) != 2 || !aws.ToTime(out.CoolOffPeriodExpiresOn).Equal(t0.Add(2*time.Hour)) ||
		!aws.ToTime(out.LockCreatedOn).Equal(t0) || !aws.ToTime(out.LockDurationStartTime).Equal(t0) ||
		!aws.ToTime(out.LockExpiresOn).Equal(t0.AddDate(0, 0, 1)) {
		t.Errorf("LockSnapshot = %+v", out)
	}
	if err := deleteSnapshot(a, snap); errCode(err) != "SnapshotLocked" {
		t.Errorf("delete while cooling off: %v, want SnapshotLocked", err)
	}
	f.clock.Advance(2 * time.Hour)
	if got := f.srv.Sim.Snapshots("us-east-1")[0]; got.LockState != lockModeCompliance {
		t.Errorf("state after the cooling-off period = %q", got.LockState)
	}
	relock := func(in ec2.LockSnapshotInput) error {
		in.SnapshotId = aws.String(snap)
		_, err := a.LockSnapshot(ctx, &in)
		return err
	}
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"delete", func() error { return deleteSnapshot(a, snap) }, "SnapshotLocked"},
		{"unlock", func() error { return unlock(a, snap) }, "IncorrectState"},
		{"shorten", func() error {
			return relock(ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, ExpirationDate: aws.Time(f.clock.Now().Add(time.Hour))})
		}, "InvalidParameterValue"},
		{"to governance", func() error {
			return relock(ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, LockDuration: aws.Int32(5)})
		}, "InvalidParameterValue"},
		{"with a cooling-off period", func() error {
			return relock(ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, CoolOffPeriod: aws.Int32(1), LockDuration: aws.Int32(5)})
		}, "InvalidParameterCombination"},
		{"extend", func() error {
			return relock(ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, LockDuration: aws.Int32(2)})
		}, ""},
	}
	for _, tt := range tests {
		if err := tt.call(); errCode(err) != tt.code {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.code)
		}
	}
	f.clock.Advance(45 * time.Hour)
	if err := deleteSnapshot(a, snap); errCode(err) != "SnapshotLocked" {
		t.Errorf("delete before the extended lock expires: %v", err)
	}
	f.clock.Advance(time.Hour)
	locked, err := a.DescribeLockedSnapshots(ctx, &ec2.DescribeLockedSnapshotsInput{SnapshotIds: []string{snap}})
	if err != nil || len(locked.Snapshots) != 1 || locked.Snapshots[0].LockState != types.LockStateExpired ||
		!aws.ToTime(locked.Snapshots[0].LockExpiresOn).Equal(t0.AddDate(0, 0, 2)) {
		t.Errorf("DescribeLockedSnapshots after expiry = %+v, %v", locked, err)
	}
	if err := deleteSnapshot(a, snap); err != nil {
		t.Errorf("delete after expiry: %v", err)
	}
}

// TestGovernanceLock: governance and cooling-off locks can be unlocked any time, and then the
// snapshot can be deleted; a snapshot that is not locked can't be unlocked.
func TestGovernanceLock(t *testing.T) {
	f := start(t, sharingConfig())
	a := f.clientAs("us-east-1", keyA, "")
	for _, in := range []ec2.LockSnapshotInput{
		{LockMode: types.LockModeGovernance, LockDuration: aws.Int32(30)},
		{LockMode: types.LockModeCompliance, CoolOffPeriod: aws.Int32(72), ExpirationDate: aws.Time(f.clock.Now().AddDate(1, 0, 0))},
	} {
		snap := f.snapshotOf(a, acctA, VolumeSpec{})
		in.SnapshotId = aws.String(snap)
		if _, err := a.LockSnapshot(ctx, &in); err != nil {
			t.Fatal(err)
		}
		if err := deleteSnapshot(a, snap); errCode(err) != "SnapshotLocked" {
			t.Errorf("%s: delete: %v", in.LockMode, err)
		}
		if err := unlock(a, snap); err != nil {
			t.Errorf("%s: unlock: %v", in.LockMode, err)
		}
		if err := unlock(a, snap); errCode(err) != "IncorrectState" {
			t.Errorf("%s: unlock twice: %v", in.LockMode, err)
		}
		if err := deleteSnapshot(a, snap); err != nil {
			t.Errorf("%s: delete after unlock: %v", in.LockMode, err)
		}
	}
}

// TestChangingALock: as EC2 documents LockSnapshot on a locked snapshot, a governance lock and
// a compliance lock in its cooling-off period take any change (shorter, longer, the other mode);
// a compliance lock past it only a longer duration (TestComplianceLock). A shortened lock that
// ends lets the snapshot be deleted.
func TestChangingALock(t *testing.T) {
	f := start(t, sharingConfig())
	a := f.clientAs("us-east-1", keyA, "")
	governance := ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, LockDuration: aws.Int32(30)}
	coolingOff := ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, CoolOffPeriod: aws.Int32(72), LockDuration: aws.Int32(30)}
	soon := func() *time.Time { return aws.Time(f.clock.Now().Add(time.Hour)) }
	tests := []struct {
		name       string
		first      ec2.LockSnapshotInput
		then       func() ec2.LockSnapshotInput
		wantState  types.LockState
		endsWithin time.Duration // 0: the changed lock does not end within a day
	}{
		{"governance, shortened", governance, func() ec2.LockSnapshotInput {
			return ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, ExpirationDate: soon()}
		}, types.LockStateGovernance, time.Hour},
		{"governance, lengthened", governance, func() ec2.LockSnapshotInput {
			return ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, LockDuration: aws.Int32(60)}
		}, types.LockStateGovernance, 0},
		{"governance, turned compliance", governance, func() ec2.LockSnapshotInput {
			return ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, LockDuration: aws.Int32(30)}
		}, types.LockStateCompliance, 0},
		{"compliance cooling off, shortened", coolingOff, func() ec2.LockSnapshotInput {
			return ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, CoolOffPeriod: aws.Int32(1), ExpirationDate: soon()}
		}, types.LockStateComplianceCooloff, time.Hour},
		{"compliance cooling off, turned governance", coolingOff, func() ec2.LockSnapshotInput {
			return ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, ExpirationDate: soon()}
		}, types.LockStateGovernance, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := f.snapshotOf(a, acctA, VolumeSpec{})
			first, then := tt.first, tt.then()
			first.SnapshotId, then.SnapshotId = aws.String(snap), aws.String(snap)
			if _, err := a.LockSnapshot(ctx, &first); err != nil {
				t.Fatal(err)
			}
			out, err := a.LockSnapshot(ctx, &then)
			if err != nil || out.LockState != tt.wantState {
				t.Fatalf("changing the lock: %+v, %v; want it taken, %s", out, err, tt.wantState)
			}
			f.clock.Advance(tt.endsWithin + time.Minute)
			err = deleteSnapshot(a, snap)
			switch {
			case tt.endsWithin > 0 && err != nil:
				t.Errorf("delete once the changed lock ended: %v", err)
			case tt.endsWithin == 0 && errCode(err) != "SnapshotLocked":
				t.Errorf("delete under the changed lock: %v, want SnapshotLocked", err)
			}
		})
	}
}

// TestLockPendingSnapshot: a pending snapshot can be locked; the lock duration starts when it
// completes.
func TestLockPendingSnapshot(t *testing.T) {
	f := start(t, sharingConfig())
	a := f.clientAs("us-east-1", keyA, "")
	vol := f.srv.Sim.AddVolumesTo(acctA, "us-east-1", VolumeSpec{})[0]
	cs, err := a.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol)})
	if err != nil {
		t.Fatal(err)
	}
	t0 := f.clock.Now()
	out, err := a.LockSnapshot(ctx, &ec2.LockSnapshotInput{SnapshotId: cs.SnapshotId, LockMode: types.LockModeGovernance, LockDuration: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	done := t0.Add(10 * time.Second)
	if !aws.ToTime(out.LockCreatedOn).Equal(t0) || !aws.ToTime(out.LockDurationStartTime).Equal(done) ||
		!aws.ToTime(out.LockExpiresOn).Equal(done.AddDate(0, 0, 1)) || out.LockState != types.LockStateGovernance {
		t.Errorf("lock of a pending snapshot = %+v", out)
	}
}

// TestLockSnapshotValidation: LockSnapshot's parameters and their ranges, as EC2 checks them.
func TestLockSnapshotValidation(t *testing.T) {
	f := start(t, sharingConfig())
	a := f.clientAs("us-east-1", keyA, "")
	snap := f.snapshotOf(a, acctA, VolumeSpec{})
	now := f.clock.Now()
	tests := []struct {
		name string
		in   ec2.LockSnapshotInput
		code string
	}{
		{"unknown mode", ec2.LockSnapshotInput{LockMode: "forever", LockDuration: aws.Int32(1)}, "InvalidParameterValue"},
		{"cool-off in governance", ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, CoolOffPeriod: aws.Int32(1), LockDuration: aws.Int32(1)}, "InvalidParameterCombination"},
		{"cool-off 0", ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, CoolOffPeriod: aws.Int32(0), LockDuration: aws.Int32(1)}, "InvalidParameterValue"},
		{"cool-off 73", ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, CoolOffPeriod: aws.Int32(73), LockDuration: aws.Int32(1)}, "InvalidParameterValue"},
		{"duration 0", ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, LockDuration: aws.Int32(0)}, "InvalidParameterValue"},
		{"duration 36501", ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, LockDuration: aws.Int32(36501)}, "InvalidParameterValue"},
		{"duration and date", ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, LockDuration: aws.Int32(1), ExpirationDate: aws.Time(now.Add(time.Hour))}, "InvalidParameterCombination"},
		{"neither", ec2.LockSnapshotInput{LockMode: types.LockModeGovernance}, "MissingParameter"},
		{"past date", ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, ExpirationDate: aws.Time(now.Add(-time.Hour))}, "InvalidParameterValue"},
		{"duration 36500", ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, LockDuration: aws.Int32(36500)}, ""},
	}
	for _, tt := range tests {
		tt.in.SnapshotId = aws.String(snap)
		if _, err := a.LockSnapshot(ctx, &tt.in); errCode(err) != tt.code {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.code)
		}
	}
	if _, err := f.clientAs("us-east-1", keyB, "").LockSnapshot(ctx, &ec2.LockSnapshotInput{SnapshotId: aws.String(snap),
		LockMode: types.LockModeGovernance, LockDuration: aws.Int32(1)}); errCode(err) != "InvalidSnapshot.NotFound" {
		t.Errorf("B locks A's snapshot: %v", err)
	}
}

// TestDescribeLockedSnapshots: the owner's locked snapshots only, by lock state, paginated.
func TestDescribeLockedSnapshots(t *testing.T) {
	f := start(t, Config{Unthrottled: true, Accounts: sharingConfig().Accounts})
	a, b := f.clientAs("us-east-1", keyA, ""), f.clientAs("us-east-1", keyB, "")
	f.snapshotOf(a, acctA, VolumeSpec{}) // never locked
	for i := range 6 {
		snap := f.snapshotOf(a, acctA, VolumeSpec{})
		mode := types.LockModeGovernance
		if i%2 == 1 {
			mode = types.LockModeCompliance
		}
		if _, err := a.LockSnapshot(ctx, &ec2.LockSnapshotInput{SnapshotId: aws.String(snap), LockMode: mode, LockDuration: aws.Int32(1)}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(c *ec2.Client, in *ec2.DescribeLockedSnapshotsInput) (int, error) {
		n := 0
		for {
			out, err := c.DescribeLockedSnapshots(ctx, in)
			if err != nil {
				return n, err
			}
			for _, s := range out.Snapshots {
				if aws.ToString(s.OwnerId) != acctA {
					t.Errorf("locked snapshot owned by %s", aws.ToString(s.OwnerId))
				}
			}
			n += len(out.Snapshots)
			if out.NextToken == nil {
				return n, nil
			}
			in.NextToken = out.NextToken
		}
	}
	state := func(v string) []types.Filter {
		return []types.Filter{{Name: aws.String("lock-state"), Values: []string{v}}}
	}
	tests := []struct {
		name   string
		client *ec2.Client
		in     ec2.DescribeLockedSnapshotsInput
		want   int
		code   string
	}{
		{"all", a, ec2.DescribeLockedSnapshotsInput{}, 6, ""},
		{"paginated", a, ec2.DescribeLockedSnapshotsInput{MaxResults: aws.Int32(5)}, 6, ""},
		{"governance", a, ec2.DescribeLockedSnapshotsInput{Filters: state("governance")}, 3, ""},
		{"compliance", a, ec2.DescribeLockedSnapshotsInput{Filters: state("compliance")}, 3, ""},
		{"another account", b, ec2.DescribeLockedSnapshotsInput{}, 0, ""},
		{"unknown filter", a, ec2.DescribeLockedSnapshotsInput{Filters: []types.Filter{{Name: aws.String("owner-id"), Values: []string{acctA}}}}, 0, "InvalidParameterValue"},
		{"MaxResults 4", a, ec2.DescribeLockedSnapshotsInput{MaxResults: aws.Int32(4)}, 0, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		n, err := count(tt.client, &tt.in)
		if errCode(err) != tt.code || err == nil && n != tt.want {
			t.Errorf("%s: %d locked snapshots, %v; want %d, %q", tt.name, n, err, tt.want, tt.code)
		}
	}
}
