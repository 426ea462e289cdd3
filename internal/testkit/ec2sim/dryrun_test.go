package ec2sim

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// exampleSnapshot is EC2's documentation snapshot ID, which no test seeds.
const exampleSnapshot = "snap-1234567890abcdef0"

// dryRuns are a dry run of every action the plugin uses, on a volume and a snapshot of the
// caller's, by the IAM action each needs.
func dryRuns(vol, snap string) map[string]func(c *ec2.Client) error {
	dry := aws.Bool(true)
	tags := tagSpec(types.ResourceTypeSnapshot, map[string]string{"k": "v"})
	return map[string]func(c *ec2.Client) error{
		"CreateSnapshot": func(c *ec2.Client) error {
			_, err := c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(vol), TagSpecifications: tags, DryRun: dry})
			return err
		},
		"CopySnapshot": func(c *ec2.Client) error {
			_, err := c.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceRegion: aws.String("us-east-1"), SourceSnapshotId: aws.String(snap), TagSpecifications: tags, DryRun: dry})
			return err
		},
		"DeleteSnapshot": func(c *ec2.Client) error {
			_, err := c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(snap), DryRun: dry})
			return err
		},
		"CreateVolume": func(c *ec2.Client) error {
			_, err := c.CreateVolume(ctx, &ec2.CreateVolumeInput{AvailabilityZone: aws.String("us-east-1a"), SnapshotId: aws.String(snap),
				TagSpecifications: tagSpec(types.ResourceTypeVolume, map[string]string{"k": "v"}), DryRun: dry})
			return err
		},
		"DeleteVolume": func(c *ec2.Client) error {
			_, err := c.DeleteVolume(ctx, &ec2.DeleteVolumeInput{VolumeId: aws.String(vol), DryRun: dry})
			return err
		},
		"CreateTags": func(c *ec2.Client) error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{snap}, Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}, DryRun: dry})
			return err
		},
		"DeleteTags": func(c *ec2.Client) error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{snap}, Tags: []types.Tag{{Key: aws.String("k")}}, DryRun: dry})
			return err
		},
		"ModifySnapshotAttribute": func(c *ec2.Client) error {
			_, err := c.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(snap),
				Attribute: types.SnapshotAttributeNameCreateVolumePermission, DryRun: dry,
				CreateVolumePermission: &types.CreateVolumePermissionModifications{Add: []types.CreateVolumePermission{{UserId: aws.String("222222222222")}}}})
			return err
		},
		"DescribeSnapshotAttribute": func(c *ec2.Client) error {
			_, err := c.DescribeSnapshotAttribute(ctx, &ec2.DescribeSnapshotAttributeInput{SnapshotId: aws.String(snap),
				Attribute: types.SnapshotAttributeNameCreateVolumePermission, DryRun: dry})
			return err
		},
		"LockSnapshot": func(c *ec2.Client) error {
			_, err := c.LockSnapshot(ctx, &ec2.LockSnapshotInput{SnapshotId: aws.String(snap), LockMode: types.LockModeGovernance, LockDuration: aws.Int32(1), DryRun: dry})
			return err
		},
		"UnlockSnapshot": func(c *ec2.Client) error {
			_, err := c.UnlockSnapshot(ctx, &ec2.UnlockSnapshotInput{SnapshotId: aws.String(snap), DryRun: dry})
			return err
		},
		"DescribeLockedSnapshots": func(c *ec2.Client) error {
			_, err := c.DescribeLockedSnapshots(ctx, &ec2.DescribeLockedSnapshotsInput{DryRun: dry})
			return err
		},
		"DescribeSnapshots": func(c *ec2.Client) error {
			_, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{DryRun: dry})
			return err
		},
		"DescribeVolumes": func(c *ec2.Client) error {
			_, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{DryRun: dry})
			return err
		},
		"DescribeVolumeStatus": func(c *ec2.Client) error {
			_, err := c.DescribeVolumeStatus(ctx, &ec2.DescribeVolumeStatusInput{DryRun: dry})
			return err
		},
		"DescribeAvailabilityZones": func(c *ec2.Client) error {
			_, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{DryRun: dry})
			return err
		},
	}
}

// A dry run of every action the simulator serves answers as EC2 does: 412 DryRunOperation when
// IAM would permit the request (the SDK surfaces it as an API error of that code), 403
// UnauthorizedOperation naming the action when not, and ec2:CreateTags when only the tagging
// on create is not permitted. Nothing is created, changed or deleted.
func TestDryRunAnswersByIAM(t *testing.T) {
	calls := dryRuns("", "")
	for action := range actions {
		if calls[action] == nil {
			t.Errorf("no dry run of %s in the test", action)
		}
	}
	every := make([]string, 0, len(actions))
	for a := range actions {
		every = append(every, a)
	}
	for action := range calls {
		t.Run(action, func(t *testing.T) {
			for _, tt := range []struct {
				name    string
				allowed []string
				code    string
				status  int
				names   string
			}{
				{"permitted", every, "DryRunOperation", 412, ""},
				{"not permitted", without(every, action), "UnauthorizedOperation", 403, "ec2:" + action},
			} {
				f := start(t, Config{AllowedActions: tt.allowed})
				vol := f.volume("us-east-1", VolumeSpec{AvailabilityZone: "us-east-1a"})
				snap := exampleSnapshot // dry runs do not look snapshots up
				if tt.status != 403 {
					snap = f.snapshot("us-east-1", vol, nil)
				}
				before := f.srv.Sim.Stats()
				err := dryRuns(vol, snap)[action](f.client("us-east-1"))
				if errCode(err) != tt.code || httpStatus(err) != tt.status || !strings.Contains(err.Error(), tt.names) {
					t.Errorf("%s: error %v (HTTP %d), want %s (%d) naming %q", tt.name, err, httpStatus(err), tt.code, tt.status, tt.names)
				}
				requireUnchanged(t, f, before, vol, snap)
			}
		})
	}
}

// A create that tags what it makes, dry-run without ec2:CreateTags, is refused naming
// ec2:CreateTags, as IAM does.
func TestDryRunOfATaggingCreateNeedsCreateTags(t *testing.T) {
	for _, action := range []string{"CreateSnapshot", "CopySnapshot", "CreateVolume"} {
		t.Run(action, func(t *testing.T) {
			f := start(t, Config{AllowedActions: []string{action}})
			vol := f.volume("us-east-1", VolumeSpec{AvailabilityZone: "us-east-1a"})
			err := dryRuns(vol, exampleSnapshot)[action](f.client("us-east-1"))
			if errCode(err) != "UnauthorizedOperation" || !strings.Contains(err.Error(), "ec2:CreateTags") {
				t.Errorf("error %v, want UnauthorizedOperation naming ec2:CreateTags", err)
			}
		})
	}
}

// A dry run without a parameter the action requires is refused for it, as the real request is.
func TestDryRunWithoutARequiredParameter(t *testing.T) {
	f := start(t, Config{})
	_, err := f.client("us-east-1").CreateVolume(ctx, &ec2.CreateVolumeInput{Size: aws.Int32(1), DryRun: aws.Bool(true)})
	if errCode(err) != "MissingParameter" || !strings.Contains(err.Error(), "AvailabilityZone") {
		t.Errorf("error %v, want MissingParameter naming AvailabilityZone", err)
	}
}

// requireUnchanged fails the test unless the volume and snapshot are as they were, nothing else
// exists and the dry run counted as no action run.
func requireUnchanged(t *testing.T, f *fixture, before Stats, vol, snap string) {
	t.Helper()
	snaps, vols := f.srv.Sim.Snapshots("us-east-1"), f.srv.Sim.Volumes("us-east-1")
	wantSnaps := 1
	if snap == exampleSnapshot {
		wantSnaps = 0
	}
	if len(snaps) != wantSnaps || wantSnaps == 1 && (snaps[0].ID != snap || len(snaps[0].Tags) != 0 || len(snaps[0].SharedWith) != 0 || snaps[0].LockState != "") ||
		len(vols) != 1 || vols[0].ID != vol || vols[0].State != "available" {
		t.Errorf("after the dry run: snapshots %+v, volumes %+v", snaps, vols)
	}
	if n := len(f.srv.Sim.Snapshots("us-west-2")); n != 0 {
		t.Errorf("%d snapshots in us-west-2 after the dry run", n)
	}
	after := f.srv.Sim.Stats()
	if ok := after.Total("", "ok") - before.Total("", "ok"); ok != 0 {
		t.Errorf("%d requests answered ok by the dry run", ok)
	}
}

func without(list []string, drop string) []string {
	var out []string
	for _, a := range list {
		if a != drop {
			out = append(out, a)
		}
	}
	return out
}
