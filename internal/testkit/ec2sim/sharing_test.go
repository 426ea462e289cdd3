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

// Customer keys of the sharing tests: A's key granted to B, A's key granted to nobody, B's key.
const (
	keyAShared  = "arn:aws:kms:us-east-1:111111111111:key/11111111-aaaa-4aaa-8aaa-111111111111"
	keyAPrivate = "arn:aws:kms:us-east-1:111111111111:key/22222222-aaaa-4aaa-8aaa-222222222222"
	keyBVault   = "arn:aws:kms:us-west-2:222222222222:key/33333333-bbbb-4bbb-8bbb-333333333333"
)

func sharingConfig() Config {
	cfg := accountsConfig()
	cfg.KMSKeys = []KMSKey{
		{ARN: keyAShared, GrantAccounts: []string{acctB}},
		{ARN: keyAPrivate},
		{ARN: keyBVault},
	}
	return cfg
}

// snapshotOf seeds a volume for account in us-east-1, snapshots it through c and lets the
// snapshot complete.
func (f *fixture) snapshotOf(c *ec2.Client, account string, spec VolumeSpec) string {
	f.t.Helper()
	vol := f.srv.Sim.AddVolumesTo(account, "us-east-1", spec)[0]
	out, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{
		VolumeId: aws.String(vol), TagSpecifications: tagSpec(types.ResourceTypeSnapshot, map[string]string{"owner": account}),
	})
	if err != nil {
		f.t.Fatalf("CreateSnapshot: %v", err)
	}
	f.clock.Advance(10 * time.Second)
	return aws.ToString(out.SnapshotId)
}

func shareWith(c *ec2.Client, snap string, users ...string) error {
	_, err := c.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{
		SnapshotId: aws.String(snap), Attribute: types.SnapshotAttributeNameCreateVolumePermission,
		UserIds: users, OperationType: types.OperationTypeAdd,
	})
	return err
}

func permissions(t *testing.T, c *ec2.Client, snap string) []string {
	t.Helper()
	out, err := c.DescribeSnapshotAttribute(ctx, &ec2.DescribeSnapshotAttributeInput{
		SnapshotId: aws.String(snap), Attribute: types.SnapshotAttributeNameCreateVolumePermission,
	})
	if err != nil {
		t.Fatalf("DescribeSnapshotAttribute: %v", err)
	}
	if aws.ToString(out.SnapshotId) != snap {
		t.Errorf("DescribeSnapshotAttribute names %s, want %s", aws.ToString(out.SnapshotId), snap)
	}
	var got []string
	for _, p := range out.CreateVolumePermissions {
		got = append(got, aws.ToString(p.UserId)+string(p.Group))
	}
	return got
}

func snapshotIDs(out *ec2.DescribeSnapshotsOutput) []string {
	var ids []string
	for _, s := range out.Snapshots {
		ids = append(ids, aws.ToString(s.SnapshotId))
	}
	slices.Sort(ids)
	return ids
}

// TestShareSnapshot: both request forms share and unshare; the share makes the snapshot
// visible to the other account without its tags, as DescribeSnapshots' owner and restorable-by
// options say, and only the owner sees or changes its permissions.
func TestShareSnapshot(t *testing.T) {
	f := start(t, sharingConfig())
	a, b := f.clientAs("us-east-1", keyA, ""), f.clientAs("us-east-1", keyB, "")
	snapA := f.snapshotOf(a, acctA, VolumeSpec{})
	snapB := f.snapshotOf(b, acctB, VolumeSpec{})

	_, err := a.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{
		SnapshotId: aws.String(snapA), Attribute: types.SnapshotAttributeNameCreateVolumePermission,
		CreateVolumePermission: &types.CreateVolumePermissionModifications{
			Add: []types.CreateVolumePermission{{UserId: aws.String(acctB)}, {UserId: aws.String(acctC)}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := permissions(t, a, snapA); !slices.Equal(got, []string{acctB, acctC}) {
		t.Errorf("permissions = %v", got)
	}
	if got := f.srv.Sim.SharedSnapshots(acctA); len(got) != 1 || !slices.Equal(got[0].SharedWith, []string{acctB, acctC}) {
		t.Errorf("SharedSnapshots(A) = %+v", got)
	}
	s, err := b.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{snapA}})
	if err != nil || len(s.Snapshots) != 1 || aws.ToString(s.Snapshots[0].OwnerId) != acctA || len(s.Snapshots[0].Tags) != 0 {
		t.Fatalf("B's DescribeSnapshots(A's shared snapshot) = %+v, %v; want it owned by A, without tags", s, err)
	}
	both := []string{snapA, snapB}
	slices.Sort(both)
	views := []struct {
		name string
		in   ec2.DescribeSnapshotsInput
		want []string
	}{
		{"no owner: own and shared", ec2.DescribeSnapshotsInput{}, both},
		{"owner self", ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}}, []string{snapB}},
		{"owner A", ec2.DescribeSnapshotsInput{OwnerIds: []string{acctA}}, []string{snapA}},
		{"restorable by self", ec2.DescribeSnapshotsInput{RestorableByUserIds: []string{"self"}}, both},
		{"restorable by all", ec2.DescribeSnapshotsInput{RestorableByUserIds: []string{"all"}}, nil},
		{"filter owner-id", ec2.DescribeSnapshotsInput{Filters: []types.Filter{{Name: aws.String("owner-id"), Values: []string{acctA}}}}, []string{snapA}},
		{"tag filter: A's tags are not B's", ec2.DescribeSnapshotsInput{Filters: []types.Filter{{Name: aws.String("tag:owner"), Values: []string{acctA}}}}, nil},
	}
	for _, v := range views {
		out, err := b.DescribeSnapshots(ctx, &v.in)
		if err != nil || !slices.Equal(snapshotIDs(out), v.want) {
			t.Errorf("%s: B sees %v, %v; want %v", v.name, snapshotIDs(out), err, v.want)
		}
	}
	if out, err := a.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{RestorableByUserIds: []string{acctB}}); err != nil || !slices.Equal(snapshotIDs(out), []string{snapA}) {
		t.Errorf("A's snapshots restorable by B = %v, %v", snapshotIDs(out), err)
	}

	refusals := []struct {
		name string
		call func() error
		code string
	}{
		{"B modifies A's snapshot", func() error { return shareWith(b, snapA, acctB) }, "InvalidSnapshot.NotFound"},
		{"B describes A's permissions", func() error {
			_, err := b.DescribeSnapshotAttribute(ctx, &ec2.DescribeSnapshotAttributeInput{
				SnapshotId: aws.String(snapA), Attribute: types.SnapshotAttributeNameCreateVolumePermission})
			return err
		}, "InvalidSnapshot.NotFound"},
		{"malformed user ID", func() error { return shareWith(a, snapA, "12345") }, "InvalidUserID.Malformed"},
		{"add and remove at once", func() error {
			_, err := a.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(snapA),
				CreateVolumePermission: &types.CreateVolumePermissionModifications{
					Add:    []types.CreateVolumePermission{{UserId: aws.String(acctB)}},
					Remove: []types.CreateVolumePermission{{UserId: aws.String(acctC)}}}})
			return err
		}, "InvalidParameterCombination"},
		{"no operation type", func() error {
			_, err := a.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(snapA), UserIds: []string{acctB}})
			return err
		}, "MissingParameter"},
		{"attribute productCodes", func() error {
			_, err := a.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(snapA),
				Attribute: types.SnapshotAttributeNameProductCodes, UserIds: []string{acctB}, OperationType: types.OperationTypeAdd})
			return err
		}, "InvalidParameterValue"},
		{"describe attribute volumeSize", func() error {
			_, err := a.DescribeSnapshotAttribute(ctx, &ec2.DescribeSnapshotAttributeInput{
				SnapshotId: aws.String(snapA), Attribute: "volumeSize"})
			return err
		}, "InvalidParameterValue"},
	}
	for _, r := range refusals {
		if err := r.call(); errCode(err) != r.code {
			t.Errorf("%s: %v, want %s", r.name, err, r.code)
		}
	}
	if out, err := a.DescribeSnapshotAttribute(ctx, &ec2.DescribeSnapshotAttributeInput{
		SnapshotId: aws.String(snapA), Attribute: types.SnapshotAttributeNameProductCodes}); err != nil || len(out.ProductCodes) != 0 {
		t.Errorf("productCodes = %+v, %v", out, err)
	}

	// Unsharing (the UserId.N form), also of a share that does not exist, is fine.
	for range 2 {
		if _, err := a.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(snapA),
			UserIds: []string{acctB, acctC}, OperationType: types.OperationTypeRemove}); err != nil {
			t.Fatal(err)
		}
	}
	if got := permissions(t, a, snapA); len(got) != 0 {
		t.Errorf("permissions after removal = %v", got)
	}
	if _, err := b.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{snapA}}); errCode(err) != "InvalidSnapshot.NotFound" {
		t.Errorf("B's DescribeSnapshots of an unshared snapshot: %v", err)
	}
	if got := f.srv.Sim.SharedSnapshots(acctA); len(got) != 0 {
		t.Errorf("SharedSnapshots(A) after removal = %+v", got)
	}
}

// TestShareEncryptedSnapshot: a snapshot under the owner's AWS managed key can't be shared, an
// encrypted one can't be public, an unencrypted public one is seen by every account.
func TestShareEncryptedSnapshot(t *testing.T) {
	f := start(t, sharingConfig())
	a := f.clientAs("us-east-1", keyA, "")
	defaultKey := f.snapshotOf(a, acctA, VolumeSpec{Encrypted: true})
	customer := f.snapshotOf(a, acctA, VolumeSpec{KmsKeyID: keyAShared})
	plain := f.snapshotOf(a, acctA, VolumeSpec{})
	public := &types.CreateVolumePermissionModifications{Add: []types.CreateVolumePermission{{Group: types.PermissionGroupAll}}}
	tests := []struct {
		name string
		in   ec2.ModifySnapshotAttributeInput
		code string
	}{
		{"default key with B", ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(defaultKey),
			UserIds: []string{acctB}, OperationType: types.OperationTypeAdd}, "OperationNotPermitted"},
		{"customer key with B", ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(customer),
			UserIds: []string{acctB}, OperationType: types.OperationTypeAdd}, ""},
		{"encrypted public", ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(customer), CreateVolumePermission: public}, "OperationNotPermitted"},
		{"unencrypted public", ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(plain), CreateVolumePermission: public}, ""},
	}
	for _, tt := range tests {
		if _, err := a.ModifySnapshotAttribute(ctx, &tt.in); errCode(err) != tt.code {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.code)
		}
	}
	if got := permissions(t, a, plain); !slices.Equal(got, []string{"all"}) {
		t.Errorf("public snapshot's permissions = %v", got)
	}
	out, err := f.clientAs("us-east-1", keyC, "").DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{RestorableByUserIds: []string{"all"}})
	if err != nil || !slices.Equal(snapshotIDs(out), []string{plain}) {
		t.Errorf("C's public snapshots = %v, %v", snapshotIDs(out), err)
	}
}

// TestCrossAccountCopy: B copies A's snapshots into its own account when they are shared with it;
// a key B may not use makes the copy end in "error", as EC2 copies encrypted snapshots
// asynchronously.
func TestCrossAccountCopy(t *testing.T) {
	tests := []struct {
		name     string
		spec     VolumeSpec
		share    bool
		kmsKeyID string
		code     string // the CopySnapshot error
		state    types.SnapshotState
		wantKey  string
	}{
		{"not shared", VolumeSpec{}, false, "", "InvalidSnapshot.NotFound", "", ""},
		{"shared, unencrypted", VolumeSpec{}, true, "", "", types.SnapshotStateCompleted, ""},
		{"shared, key granted to B", VolumeSpec{KmsKeyID: keyAShared}, true, "", "", types.SnapshotStateCompleted, defaultKmsKey(acctB, "us-west-2")},
		{"shared, key granted to B, B's key", VolumeSpec{KmsKeyID: keyAShared}, true, keyBVault, "", types.SnapshotStateCompleted, keyBVault},
		{"shared, key not granted", VolumeSpec{KmsKeyID: keyAPrivate}, true, "", "", types.SnapshotStateError, defaultKmsKey(acctB, "us-west-2")},
		{"shared, copy under A's key", VolumeSpec{}, true, "arn:aws:kms:us-west-2:111111111111:key/x", "", types.SnapshotStateError, "arn:aws:kms:us-west-2:111111111111:key/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, sharingConfig())
			a, vault := f.clientAs("us-east-1", keyA, ""), f.clientAs("us-west-2", keyB, "")
			src := f.snapshotOf(a, acctA, tt.spec)
			if tt.share {
				if err := shareWith(a, src, acctB); err != nil {
					t.Fatal(err)
				}
			}
			in := &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(src)}
			if tt.kmsKeyID != "" {
				in.KmsKeyId = aws.String(tt.kmsKeyID)
			}
			out, err := vault.CopySnapshot(ctx, in)
			if errCode(err) != tt.code || err != nil {
				if errCode(err) != tt.code {
					t.Errorf("CopySnapshot: %v, want %q", err, tt.code)
				}
				return
			}
			if tt.share { // removing the share once the copy started changes nothing
				if _, err := a.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(src),
					UserIds: []string{acctB}, OperationType: types.OperationTypeRemove}); err != nil {
					t.Fatal(err)
				}
			}
			f.clock.Advance(20 * time.Second)
			got, err := vault.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{aws.ToString(out.SnapshotId)}})
			if err != nil || len(got.Snapshots) != 1 {
				t.Fatalf("DescribeSnapshots(copy) = %+v, %v", got, err)
			}
			c := got.Snapshots[0]
			if c.State != tt.state || aws.ToString(c.OwnerId) != acctB || aws.ToString(c.KmsKeyId) != tt.wantKey ||
				(tt.state == types.SnapshotStateError) != strings.Contains(aws.ToString(c.StateMessage), "not accessible") {
				t.Errorf("copy = state %s, owner %s, key %s, message %q; want %s, %s, %s",
					c.State, aws.ToString(c.OwnerId), aws.ToString(c.KmsKeyId), aws.ToString(c.StateMessage), tt.state, acctB, tt.wantKey)
			}
			if held := f.srv.Sim.SnapshotsIn(acctB, "us-west-2"); len(held) != 1 || held[0].SourceSnapshotID != src ||
				held[0].SourceRegion != "us-east-1" || held[0].Account != acctB {
				t.Errorf("SnapshotsIn(B, us-west-2) = %+v", held)
			}
		})
	}
}

// TestCrossAccountCopyLimit: copies from another account count against the copying account's
// limit in the destination region; same-account copies keep the source's key in its region.
func TestCrossAccountCopyLimit(t *testing.T) {
	cfg := sharingConfig()
	cfg.CopyLimit = 1
	f := start(t, cfg)
	a, vault := f.clientAs("us-east-1", keyA, ""), f.clientAs("us-west-2", keyB, "")
	var srcs []string
	for range 2 {
		src := f.snapshotOf(a, acctA, VolumeSpec{KmsKeyID: keyAShared})
		if err := shareWith(a, src, acctB); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	copyOf := func(c *ec2.Client, src string) error {
		_, err := c.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(src)})
		return err
	}
	if err := copyOf(vault, srcs[0]); err != nil {
		t.Fatal(err)
	}
	if err := copyOf(vault, srcs[1]); errCode(err) != "ResourceLimitExceeded" {
		t.Errorf("second copy into B: %v, want ResourceLimitExceeded", err)
	}
	if err := copyOf(f.clientAs("us-west-2", keyA, ""), srcs[1]); err != nil {
		t.Errorf("A's own copy, under its own limit: %v", err)
	}
	if err := copyOf(a, srcs[1]); err != nil {
		t.Fatal(err)
	}
	if got := f.srv.Sim.SnapshotsIn(acctA, "us-east-1"); got[len(got)-1].KmsKeyID != keyAShared {
		t.Errorf("same-region same-account copy key = %s, want the source's", got[len(got)-1].KmsKeyID)
	}
}

// TestAccountAllowedActions: an account's allow-list restricts its callers only, on top of the
// global one.
func TestAccountAllowedActions(t *testing.T) {
	cfg := sharingConfig()
	cfg.Accounts[1].AllowedActions = []string{"DescribeSnapshots", "CopySnapshot"}
	cfg.AllowedActions = []string{"DescribeSnapshots", "CopySnapshot", "CreateSnapshot", "ModifySnapshotAttribute", "CreateTags"}
	f := start(t, cfg)
	a, vault := f.clientAs("us-east-1", keyA, ""), f.clientAs("us-west-2", keyB, "")
	src := f.snapshotOf(a, acctA, VolumeSpec{})
	if err := shareWith(a, src, acctB); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"B copies", func() error {
			_, err := vault.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(src)})
			return err
		}, ""},
		{"B copies with tags: tagging on create needs CreateTags", func() error {
			_, err := vault.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(src),
				TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}}})
			return err
		}, "UnauthorizedOperation"},
		{"B describes", func() error { _, err := vault.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{}); return err }, ""},
		{"B shares", func() error { return shareWith(vault, src, acctC) }, "UnauthorizedOperation"},
		{"A shares", func() error { return shareWith(a, src, acctC) }, ""},
		{"A locks: not globally allowed", func() error {
			_, err := a.LockSnapshot(ctx, &ec2.LockSnapshotInput{SnapshotId: aws.String(src), LockMode: types.LockModeGovernance, LockDuration: aws.Int32(1)})
			return err
		}, "UnauthorizedOperation"},
	}
	for _, tt := range tests {
		err := tt.call()
		if errCode(err) != tt.code || tt.code != "" && httpStatus(err) != 403 {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.code)
		}
	}
}

// TestSharingFaults: after-effect drops lose the answer but not the share, the lock or the
// cross-account copy; server errors come before any effect; the new actions take tokens from
// the buckets EC2 puts them in.
func TestSharingFaults(t *testing.T) {
	f := start(t, sharingConfig())
	a, vault := f.clientAs("us-east-1", keyA, ""), f.clientAs("us-west-2", keyB, "")
	src := f.snapshotOf(a, acctA, VolumeSpec{})
	drops := []string{"ModifySnapshotAttribute", "LockSnapshot", "CopySnapshot"}
	f.srv.Sim.SetFaults(Faults{DropAfterEffectRate: 1, DropActions: drops})
	if err := shareWith(a, src, acctB); err == nil {
		t.Error("ModifySnapshotAttribute answered despite the drop")
	}
	if _, err := a.LockSnapshot(ctx, &ec2.LockSnapshotInput{SnapshotId: aws.String(src), LockMode: types.LockModeGovernance, LockDuration: aws.Int32(1)}); err == nil {
		t.Error("LockSnapshot answered despite the drop")
	}
	if _, err := vault.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(src)}); err == nil {
		t.Error("CopySnapshot answered despite the drop")
	}
	got := f.srv.Sim.SnapshotsIn(acctA, "us-east-1")[0]
	if !slices.Equal(got.SharedWith, []string{acctB}) || got.LockMode != lockModeGovernance || got.LockState != lockModeGovernance ||
		!got.LockExpiresOn.Equal(f.clock.Now().AddDate(0, 0, 1)) {
		t.Errorf("source after dropped answers = %+v", got)
	}
	if copies := f.srv.Sim.SnapshotsIn(acctB, "us-west-2"); len(copies) != 1 {
		t.Errorf("B holds %d copies, want the one whose answer was dropped", len(copies))
	}
	st := f.srv.Sim.Stats()
	for _, action := range drops {
		if n := st.Total(action, "ConnectionClosed") + st.Total(action, "InternalError"); n != 1 {
			t.Errorf("%s: %d dropped answers counted, want 1", action, n)
		}
	}

	f.srv.Sim.SetFaults(Faults{ServerErrorRate: 1})
	if _, err := a.UnlockSnapshot(ctx, &ec2.UnlockSnapshotInput{SnapshotId: aws.String(src)}); errCode(err) != "InternalError" {
		t.Errorf("UnlockSnapshot under server errors: %v", err)
	}
	if got := f.srv.Sim.SnapshotsIn(acctA, "us-east-1")[0]; got.LockMode == "" {
		t.Error("a 500 before the effect unlocked the snapshot")
	}

	classes := map[string]bucketClass{
		"ModifySnapshotAttribute": classMutating, "LockSnapshot": classMutating, "UnlockSnapshot": classMutating,
		"DescribeSnapshotAttribute": classDescribe, "DescribeLockedSnapshots": classDescribe,
	}
	for action, want := range classes {
		if got := classOf(&request{action: action}); got != want {
			t.Errorf("classOf(%s) = %s, want %s", action, got, want)
		}
	}
}

// TestKMSKeyConfig: Validate checks key ARNs, their accounts and the keys of seeded volumes;
// keys can be added and listed at run time.
func TestKMSKeyConfig(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string // part of the error; "" for none
	}{
		{"valid", func(*Config) {}, ""},
		{"alias ARN", func(c *Config) {
			c.KMSKeys = append(c.KMSKeys, KMSKey{ARN: "arn:aws:kms:us-east-1:111111111111:alias/x"})
		}, "not a KMS key ARN"},
		{"duplicate", func(c *Config) { c.KMSKeys = append(c.KMSKeys, KMSKey{ARN: keyAShared}) }, "twice"},
		{"unknown owner", func(c *Config) {
			c.KMSKeys = append(c.KMSKeys, KMSKey{ARN: "arn:aws:kms:us-east-1:999999999999:key/k"})
		}, "account 999999999999 is not configured"},
		{"unknown grant", func(c *Config) { c.KMSKeys[0].GrantAccounts = []string{"999999999999"} }, "not configured"},
		{"malformed grant", func(c *Config) { c.KMSKeys[0].GrantAccounts = []string{"b"} }, "12 digits"},
		{"volume under a usable key", func(c *Config) {
			c.Regions = map[string]RegionConfig{"us-east-1": {Volumes: []VolumeSpec{{Account: acctB, KmsKeyID: keyAShared}}}}
		}, ""},
		{"volume under another account's key", func(c *Config) {
			c.Regions = map[string]RegionConfig{"us-east-1": {Volumes: []VolumeSpec{{Account: acctB, KmsKeyID: keyAPrivate}}}}
		}, "not accessible"},
	}
	for _, tt := range tests {
		cfg := sharingConfig()
		tt.edit(&cfg)
		err := cfg.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tt.name, err, tt.want)
		}
	}

	cfg := sharingConfig()
	cfg.Regions = map[string]RegionConfig{"us-east-1": {Volumes: []VolumeSpec{{KmsKeyID: keyAShared}}}}
	sim := New(cfg)
	if v := sim.Volumes("us-east-1"); len(v) != 1 || !v[0].Encrypted || v[0].KmsKeyID != keyAShared {
		t.Errorf("volume seeded with a key = %+v; want encrypted under it", v)
	}
	if err := sim.AddKMSKeys(KMSKey{ARN: "nope"}); err == nil {
		t.Error("AddKMSKeys took a malformed ARN")
	}
	if err := sim.AddKMSKeys(KMSKey{ARN: keyAPrivate, GrantAccounts: []string{acctB}}); err != nil {
		t.Fatal(err)
	}
	if keys := sim.KMSKeys(); len(keys) != 3 || keys[1].ARN != keyAPrivate || !slices.Equal(keys[1].GrantAccounts, []string{acctB}) {
		t.Errorf("KMSKeys() = %+v", keys)
	}
}
