package audit

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// DeleteOrphans deletes the report's orphans of this install and the volumes its interrupted
// drills left, each after a DryRun of its deletion, and records in rep what it deleted and what
// it refused and why. The report's orphans are only those the orphan rule found no record can
// name and nothing keeps; it deletes none of them when the audit could not read everything.
func DeleteOrphans(ctx context.Context, clients cli.Clients, w World, rep *Report) {
	creds := map[string]ec2api.Credentials{}
	for _, s := range w.Snapshots {
		creds[s.Region+"/"+s.ID] = s.Creds
	}
	for _, v := range rep.DrillLeftovers {
		d := Deletion{ID: v.ID, Region: v.Region}
		if len(rep.Problems) > 0 {
			d.Why = "the audit could not read everything (see below): nothing is deleted until it can"
		} else if c, err := clients.Client(ctx, v.Region, v.Creds); err != nil {
			d.Why = err.Error()
		} else if err := DeleteVolume(ctx, c, v.ID); err != nil {
			d.Why = err.Error()
		} else {
			d.Deleted = true
		}
		rep.Deletions = append(rep.Deletions, d)
	}
	for _, g := range rep.Orphans {
		for _, o := range g.Orphans {
			d := Deletion{ID: o.ID, Region: o.Region}
			if len(rep.Problems) > 0 {
				d.Why = "the audit could not read everything (see below): nothing is deleted until it can"
			} else {
				d.Deleted, d.Why = deleteOne(ctx, clients, creds[o.Region+"/"+o.ID], o)
			}
			rep.Deletions = append(rep.Deletions, d)
		}
	}
}

// deleteOne asks EC2 whether the deletion is permitted (DryRun), then deletes.
func deleteOne(ctx context.Context, clients cli.Clients, creds ec2api.Credentials, o Orphan) (bool, string) {
	c, err := clients.Client(ctx, o.Region, creds)
	if err != nil {
		return false, err.Error()
	}
	in := &ec2.DeleteSnapshotInput{SnapshotId: aws.String(o.ID), DryRun: aws.Bool(true)}
	if _, err := c.DeleteSnapshot(ctx, in); ec2api.Code(err) != codeDryRunOperation {
		return false, fmt.Sprintf("the dry run of its deletion was refused: %v", err)
	}
	in.DryRun = nil
	if _, err := c.DeleteSnapshot(ctx, in); err != nil && !ec2api.IsNotFound(err) {
		return false, err.Error()
	}
	return true, ""
}
