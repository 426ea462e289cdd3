package check

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// filterValuesMax is the most values the check puts in one EC2 filter.
const filterValuesMax = 200

// sourceRegion checks the location's region with its own credentials: every action the plugin's
// snapshots, deletions, restores and (with a vault) shares make there.
func sourceRegion(ctx context.Context, lc *locationCheck, p *place) {
	ctx, cancel := context.WithTimeout(ctx, regionTimeout)
	defer cancel()
	lc.reach(ctx, p, true)
	lc.snapshot, lc.volume = exampleSnapshotID, exampleVolumeID
	probes := []probe{
		{"DescribeVolumes", func(ctx context.Context) Finding { return describeSources(ctx, lc, p) }},
		{"DescribeSnapshots", func(ctx context.Context) Finding {
			id, f := ownSnapshot(ctx, p)
			lc.snapshot = id
			return f
		}},
		{"CreateSnapshot", func(ctx context.Context) Finding {
			_, err := p.c.CreateSnapshot(ctx, &ec2.CreateSnapshotInput{VolumeId: aws.String(lc.volume),
				TagSpecifications: tagsOnCreate(types.ResourceTypeSnapshot), DryRun: aws.Bool(true)})
			return p.dryRun("CreateSnapshot", p.statement, on(lc.volume, p.region), err)
		}},
		createTagsProbe(p, &lc.snapshot),
		{"DeleteTags", func(ctx context.Context) Finding {
			_, err := p.c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{lc.snapshot}, DryRun: aws.Bool(true),
				Tags: []types.Tag{{Key: aws.String(probeTagKey)}}})
			return p.dryRun("DeleteTags", p.statement, on(lc.snapshot, p.region), err)
		}},
		deleteSnapshotProbe(p, &lc.snapshot),
		{"CreateVolume", func(ctx context.Context) Finding { return createVolume(ctx, lc, p) }},
	}
	if lc.cfg.Restore.WaitForInitialization {
		probes = append(probes, probe{"DescribeVolumeStatus", func(ctx context.Context) Finding {
			_, err := p.c.DescribeVolumeStatus(ctx, &ec2.DescribeVolumeStatusInput{VolumeIds: []string{lc.volume}, DryRun: aws.Bool(true)})
			return p.dryRun("DescribeVolumeStatus", p.statement, on(lc.volume, p.region)+", as a restore that waits for initialization reads it", err)
		}})
	}
	if v := lc.cfg.Vault; v.Enabled() {
		probes = append(probes,
			probe{"ModifySnapshotAttribute", func(ctx context.Context) Finding {
				_, err := p.c.ModifySnapshotAttribute(ctx, &ec2.ModifySnapshotAttributeInput{SnapshotId: aws.String(lc.snapshot),
					Attribute: types.SnapshotAttributeNameCreateVolumePermission, DryRun: aws.Bool(true),
					CreateVolumePermission: &types.CreateVolumePermissionModifications{Add: []types.CreateVolumePermission{{UserId: aws.String(v.AccountID)}}}})
				return p.dryRun("ModifySnapshotAttribute", statementSharing, on(lc.snapshot, p.region)+", sharing it with "+v.AccountID, err)
			}},
			probe{"DescribeSnapshotAttribute", func(ctx context.Context) Finding {
				in := &ec2.DescribeSnapshotAttributeInput{SnapshotId: aws.String(lc.snapshot), Attribute: types.SnapshotAttributeNameCreateVolumePermission}
				if lc.snapshot == exampleSnapshotID {
					in.DryRun = aws.Bool(true) // no snapshot of the account to read for real
					_, err := p.c.DescribeSnapshotAttribute(ctx, in)
					return p.dryRun("DescribeSnapshotAttribute", statementSharing, on(lc.snapshot, p.region), err)
				}
				_, err := p.c.DescribeSnapshotAttribute(ctx, in)
				return p.verdict("DescribeSnapshotAttribute", statementSharing, false, "of "+lc.snapshot, err)
			}})
	}
	lc.runProbes(ctx, p, probes)
	if lc.cfg.Vault.Enabled() && p.skip == "" {
		lc.add(sourceKeys(lc))
	}
}

// describeSources describes the volumes the location would back up, for real: the cluster's
// EBS volumes in the region, or when the PVs are not readable, the account's volumes there.
func describeSources(ctx context.Context, lc *locationCheck, p *place) Finding {
	inputs := []*ec2.DescribeVolumesInput{{MaxResults: aws.Int32(listPage)}}
	detail := ""
	if lc.cluster.pvs == nil {
		ids := lc.cluster.volumesIn(p.region)
		if len(ids) == 0 {
			out, err := p.c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{MaxResults: aws.Int32(ownPage)})
			lc.sourcesKnown = err == nil
			if err == nil && len(out.Volumes) > 0 {
				lc.volume = aws.ToString(out.Volumes[0].VolumeId)
			}
			return p.verdict("DescribeVolumes", p.statement, false, "no EBS PersistentVolume in "+p.region, err)
		}
		inputs = nil
		for chunk := range slices.Chunk(ids, filterValuesMax) {
			inputs = append(inputs, &ec2.DescribeVolumesInput{Filters: []types.Filter{{Name: aws.String("volume-id"), Values: chunk}}})
		}
		detail = plural(len(ids), "EBS PersistentVolume") + " of the cluster in " + p.region
	}
	for _, in := range inputs {
		for pages := ec2.NewDescribeVolumesPaginator(p.c, in); pages.HasMorePages(); {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return p.verdict("DescribeVolumes", p.statement, false, "", err)
			}
			lc.sources = append(lc.sources, out.Volumes...)
		}
	}
	lc.sourcesKnown = true
	if len(lc.sources) > 0 {
		lc.volume = aws.ToString(lc.sources[0].VolumeId)
	}
	if detail == "" {
		detail = plural(len(lc.sources), "volume") + " of the account in " + p.region + "; " + lc.cluster.pvs.String()
	}
	return p.verdict("DescribeVolumes", p.statement, false, detail, nil)
}

// createVolume dry-runs a restore's CreateVolume from the location's snapshot.
func createVolume(ctx context.Context, lc *locationCheck, p *place) Finding {
	zone := lc.zone
	for _, v := range lc.sources {
		if aws.ToString(v.VolumeId) == lc.volume {
			zone = aws.ToString(v.AvailabilityZone)
		}
	}
	if zone == "" {
		return notChecked(p.actionCheck("CreateVolume"), "no availability zone of "+p.region+" is known")
	}
	in := &ec2.CreateVolumeInput{AvailabilityZone: aws.String(zone), SnapshotId: aws.String(lc.snapshot),
		VolumeType: types.VolumeTypeGp3, TagSpecifications: tagsOnCreate(types.ResourceTypeVolume), DryRun: aws.Bool(true)}
	if k := lc.cfg.EBSKMSKeyID; k != "" {
		in.Encrypted, in.KmsKeyId = aws.Bool(true), aws.String(k)
	}
	_, err := p.c.CreateVolume(ctx, in)
	return p.dryRun("CreateVolume", p.statement, "from "+lc.snapshot+" in "+zone, err)
}

// copyRegion checks copyToRegion with the location's credentials: the copies, their tags,
// their deletion, the copy key and the copy slots.
func copyRegion(ctx context.Context, lc *locationCheck, source *place) {
	ctx, cancel := context.WithTimeout(ctx, regionTimeout)
	defer cancel()
	p, ok := lc.place(ctx, source.role, source.creds, lc.cfg.CopyToRegion, lc.loc.Credentials, statementSource)
	if !ok {
		return
	}
	p.principal = source.principal
	lc.reach(ctx, p, false)
	var own string
	lc.runProbes(ctx, p, []probe{
		{"DescribeSnapshots", func(ctx context.Context) Finding {
			id, f := ownSnapshot(ctx, p)
			own = id
			return f
		}},
		lc.copySnapshotProbe(p, lc.cfg.CopyKMSKeyID),
		createTagsProbe(p, &own),
		deleteSnapshotProbe(p, &own),
	})
	if lc.cfg.CopyKMSKeyID != "" {
		lc.add(keyFindings("copyKmsKeyId", lc.cfg.CopyKMSKeyID, p.region, "", p.role)...)
	}
	if p.skip != "" {
		lc.add(notChecked(p.prefix+"copy slots in "+p.region, p.skip))
		return
	}
	lc.add(slots(ctx, lc, p, float64(lc.cfg.CopyCompletionMinutes)))
}

// vaultPrefix starts the names of the vault account's checks.
const vaultPrefix = "vault: "

// vaultAccount checks the vault account: whose the vault credentials are, its region, the
// actions of the README's VaultCopies statement, its key and its copy slots.
func vaultAccount(ctx context.Context, lc *locationCheck, source *place) {
	ctx, cancel := context.WithTimeout(ctx, regionTimeout)
	defer cancel()
	v := lc.cfg.Vault
	p, ok := lc.place(ctx, "the vault account", lc.vaultCredentialsName(), v.Region, *lc.loc.Vault, statementVault)
	if !ok {
		return
	}
	p.prefix = vaultPrefix
	if id, ok := lc.identity(ctx, "vault account", p, *lc.loc.Vault, v.AccountID); ok {
		p.principal = id.ARN
	}
	skip := p.skip // the credentials' account, which a region answering does not change
	lc.reach(ctx, p, false)
	if skip != "" {
		p.skip = skip
	}
	var own string
	probes := []probe{
		{"DescribeSnapshots", func(ctx context.Context) Finding {
			id, f := ownSnapshot(ctx, p)
			own = id
			return f
		}},
		lc.copySnapshotProbe(p, v.KMSKeyID),
		createTagsProbe(p, &own),
	}
	if v.Lock.Mode != "" {
		probes = append(probes,
			probe{"LockSnapshot", func(ctx context.Context) Finding {
				_, err := p.c.LockSnapshot(ctx, &ec2.LockSnapshotInput{SnapshotId: aws.String(own), LockMode: types.LockMode(v.Lock.Mode),
					LockDuration: aws.Int32(v.Lock.Days), DryRun: aws.Bool(true)})
				return p.dryRun("LockSnapshot", p.statement, on(own, p.region), err)
			}},
			probe{"DescribeLockedSnapshots", func(ctx context.Context) Finding {
				_, err := p.c.DescribeLockedSnapshots(ctx, &ec2.DescribeLockedSnapshotsInput{MaxResults: aws.Int32(ownPage)})
				return p.verdict("DescribeLockedSnapshots", p.statement, false, "", err)
			}})
	}
	if !v.RetainOnDelete {
		probes = append(probes, deleteSnapshotProbe(p, &own))
	}
	lc.runProbes(ctx, p, probes)
	if v.KMSKeyID != "" {
		lc.add(keyFindings("vaultKmsKeyId", v.KMSKeyID, p.region, v.AccountID, p.role)...)
	}
	if p.skip != "" {
		lc.add(notChecked(p.prefix+"copy slots in "+p.region, p.skip))
		return
	}
	lc.add(slots(ctx, lc, p, 0))
}
