package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// TagDrill, on a volume a drill created, is the identity of the install whose drill made it: a
// drill deletes every volume it makes, and the next drill or `audit --delete-orphans` deletes
// those an interrupted drill left. IAM lets the plugin's credentials delete only volumes with
// this tag.
const TagDrill = "velero-async.io/drill"

// DrillMaxDuration bounds a drill, waits for initialization included: a drill volume older than
// this was left by an interrupted drill, never one still running.
const DrillMaxDuration = 6 * time.Hour

// codeDryRunOperation is EC2's answer to a DryRun request it would have permitted.
const codeDryRunOperation = "DryRunOperation"

// describePage is the page size of the audit's listings (DescribeSnapshots takes 5 to 1000).
const describePage = 1000

// DrillVolume is a volume a drill created, as EC2 described it.
type DrillVolume struct {
	ID      string    `json:"id"`
	Region  string    `json:"region"`
	State   string    `json:"state"`
	Created time.Time `json:"created"`
	// Install is its TagDrill.
	Install string             `json:"install"`
	Creds   ec2api.Credentials `json:"-"`
}

// Leftover reports whether v was left by an interrupted drill of install: a drill's volume of
// that install older than DrillMaxDuration.
func (v DrillVolume) Leftover(install string, now time.Time) bool {
	return install != "" && v.Install == install && now.Sub(v.Created) > DrillMaxDuration
}

// VolumeDeleter deletes volumes (*ec2.Client does).
type VolumeDeleter interface {
	DeleteVolume(ctx context.Context, in *ec2.DeleteVolumeInput, optFns ...func(*ec2.Options)) (*ec2.DeleteVolumeOutput, error)
}

// ListDrillVolumes lists the drills' volumes of c's account in region.
func ListDrillVolumes(ctx context.Context, c ec2api.EC2, region string, creds ec2api.Credentials) ([]DrillVolume, error) {
	in := &ec2.DescribeVolumesInput{MaxResults: aws.Int32(describePage), Filters: []types.Filter{{Name: aws.String("tag-key"), Values: []string{TagDrill}}}}
	var out []DrillVolume
	for pages := ec2.NewDescribeVolumesPaginator(c, in); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the drills' volumes: %w", err)
		}
		for _, v := range page.Volumes {
			d := DrillVolume{ID: aws.ToString(v.VolumeId), Region: region, State: string(v.State), Created: aws.ToTime(v.CreateTime), Creds: creds}
			for _, t := range v.Tags {
				if aws.ToString(t.Key) == TagDrill {
					d.Install = aws.ToString(t.Value)
				}
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// DeleteVolume deletes a volume after a DryRun of its deletion. A volume already gone counts as
// deleted.
func DeleteVolume(ctx context.Context, c ec2api.EC2, id string) error {
	d, ok := c.(VolumeDeleter)
	if !ok {
		return fmt.Errorf("the EC2 client %T cannot delete volumes", c)
	}
	in := &ec2.DeleteVolumeInput{VolumeId: aws.String(id), DryRun: aws.Bool(true)}
	if _, err := d.DeleteVolume(ctx, in); ec2api.Code(err) != codeDryRunOperation {
		if ec2api.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the dry run of deleting volume %s was refused: %w", id, err)
	}
	in.DryRun = nil
	if _, err := d.DeleteVolume(ctx, in); err != nil && !ec2api.IsNotFound(err) {
		return fmt.Errorf("deleting volume %s: %w", id, err)
	}
	return nil
}
