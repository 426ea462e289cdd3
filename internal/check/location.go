package check

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

const (
	// exampleSnapshotID and exampleVolumeID are EC2's documentation IDs, dry-run on when the
	// account has no snapshot or volume of its own in the region.
	exampleSnapshotID = "snap-1234567890abcdef0"
	exampleVolumeID   = "vol-1234567890abcdef0"
	// probeTagKey tags the dry runs' would-be resources, as the plugin tags what it creates.
	probeTagKey   = "velero-async.io/preflight-check"
	probeTagValue = "dry-run"
	// listPage is the page size of the check's listings (DescribeSnapshots takes 5 to 1000).
	listPage = 1000
	// ownPage is the page size of the look-up of one own snapshot.
	ownPage = 5
)

// locationCheck checks one VolumeSnapshotLocation. It owns what it found on the way. Its methods
// are the steps every place's checks share (a client, an identity, a region's answer, the
// probes); the checks themselves are functions taking it (run.go, credentials.go, regions.go,
// copies.go, kms.go, ttl.go, volumes.go).
type locationCheck struct {
	*Checker
	vsl      velerov1.VolumeSnapshotLocation
	cluster  cluster
	cfg      model.Config
	loc      location.Location
	findings []Finding

	// In the location's region: one of the account's snapshots and volumes to dry-run on, a
	// zone, and the volumes the location would back up (nil when unknown).
	snapshot, volume, zone string
	sources                []types.Volume
	sourcesKnown           bool
	// copyTimes are the copies' expected durations, per destination.
	copyTimes []copyTime
}

func (lc *locationCheck) add(f ...Finding) { lc.findings = append(lc.findings, f...) }

// place returns the guarded client of creds in region, or records why there is none.
func (lc *locationCheck) place(ctx context.Context, role, credsName, region string, creds ec2api.Credentials, statement string) (*place, bool) {
	c, err := lc.Clients.Client(ctx, region, creds)
	if err != nil {
		lc.add(fail("region "+region, "no EC2 client for "+role+": "+err.Error(), "correct the credentials' profile and files"))
		return nil, false
	}
	return &place{role: role, creds: credsName, region: region, c: guarded{c}, statement: statement, shell: lc.Shell}, true
}

// identity asks STS, in the location's region as the plugin does, whose creds are and how they
// were obtained; want, when set, is the account they must be.
func (lc *locationCheck) identity(ctx context.Context, check string, p *place, creds ec2api.Credentials, want string) (ec2api.Identity, bool) {
	id, err := lc.Identities.Account(ctx, lc.cfg.Region, creds)
	switch {
	case err != nil:
		lc.add(fail(check, "STS in "+lc.cfg.Region+" did not name the account of "+p.creds+": "+describe(err), p.credentialsFix(err, lc.cfg.Region)))
		return id, false
	case want != "" && id.Account != want:
		p.skip = "the credentials are of account " + id.Account + ", not " + want
		lc.add(fail(check, fmt.Sprintf("the vault credentials are of account %s (%s), not vaultAccountId %s", id.Account, id.ARN, want),
			"put credentials of account "+want+" in "+lc.vaultCredentialsName()+", or correct vaultAccountId"))
		return id, false
	}
	lc.add(pass(check, id.String()))
	return id, true
}

// sourceCredentialsName names where the location's credentials come from.
func (lc *locationCheck) sourceCredentialsName() string {
	switch sel := lc.vsl.Spec.Credential; {
	case sel != nil:
		return fmt.Sprintf("Secret %s/%s key %s", lc.Namespace, sel.Name, sel.Key)
	case lc.cfg.Credentials.File != "":
		return "credentials file " + lc.cfg.Credentials.File + " of " + lc.Shell.where()
	case lc.cfg.Credentials.Profile != "":
		return "profile " + lc.cfg.Credentials.Profile + " of " + lc.Shell.where()
	}
	return lc.Shell.chain()
}

// vaultCredentialsName names where the vault's credentials come from.
func (lc *locationCheck) vaultCredentialsName() string {
	if s := lc.cfg.Vault.CredentialSecret; s != "" {
		return fmt.Sprintf("Secret %s/%s key %s", lc.Namespace, s, lc.cfg.Vault.CredentialKey)
	}
	return "profile " + lc.cfg.Vault.Profile
}

// copyTime is the expected duration of one copy into a destination, and where it comes from.
type copyTime struct {
	where  string
	each   time.Duration
	source string
}

// probe is one action's check in a place.
type probe struct {
	action string
	run    func(ctx context.Context) Finding
}

// runProbes runs the probes in order, or reports each as not checked when the place is skipped.
func (lc *locationCheck) runProbes(ctx context.Context, p *place, probes []probe) {
	for _, pr := range probes {
		if p.skip != "" {
			lc.add(p.skipped(pr.action))
			continue
		}
		lc.add(pr.run(ctx))
	}
}

// reach checks that EC2 in p's region answers; permission adds the check of
// ec2:DescribeAvailabilityZones, which the plugin needs in the location's region.
func (lc *locationCheck) reach(ctx context.Context, p *place, permission bool) {
	out, err := p.c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	detail := ""
	if err == nil {
		if zs := out.AvailabilityZones; len(zs) > 0 && p.region == lc.cfg.Region {
			lc.zone = aws.ToString(zs[0].ZoneName)
		}
		detail = " (" + plural(len(out.AvailabilityZones), "availability zone") + ")"
	}
	lc.add(p.reachable(err, detail))
	if !permission {
		return
	}
	if p.skip != "" {
		lc.add(p.skipped("DescribeAvailabilityZones"))
		return
	}
	lc.add(p.verdict("DescribeAvailabilityZones", p.statement, false, "", err))
}

// tagsOnCreate are the tags of a dry run's would-be resource: a create that tags also needs
// ec2:CreateTags, as the plugin's creates do.
func tagsOnCreate(rt types.ResourceType) []types.TagSpecification {
	return []types.TagSpecification{{ResourceType: rt, Tags: []types.Tag{{Key: aws.String(probeTagKey), Value: aws.String(probeTagValue)}}}}
}

// on says what a dry run ran on: the ID, and that it is EC2's example when it is.
func on(id, region string) string {
	switch id {
	case exampleSnapshotID:
		return "on " + id + ", EC2's example ID: the account has no snapshot in " + region
	case exampleVolumeID:
		return "on " + id + ", EC2's example ID: the account has no volume in " + region
	}
	return "on " + id
}

// ownSnapshot lists a few of p's account's snapshots in p's region, for real, and returns one
// (a completed one first), or EC2's example ID when there is none.
func ownSnapshot(ctx context.Context, p *place) (string, Finding) {
	out, err := p.c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}, MaxResults: aws.Int32(ownPage)})
	id := exampleSnapshotID
	if err == nil {
		for _, s := range out.Snapshots {
			if id == exampleSnapshotID || s.State == types.SnapshotStateCompleted {
				id = aws.ToString(s.SnapshotId)
			}
			if s.State == types.SnapshotStateCompleted {
				break
			}
		}
	}
	return id, p.verdict("DescribeSnapshots", p.statement, false, "", err)
}

// deleteSnapshotProbe dry-runs DeleteSnapshot on *snap.
func deleteSnapshotProbe(p *place, snap *string) probe {
	return probe{"DeleteSnapshot", func(ctx context.Context) Finding {
		_, err := p.c.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: snap, DryRun: aws.Bool(true)})
		return p.dryRun("DeleteSnapshot", p.statement, on(*snap, p.region), err)
	}}
}

// createTagsProbe dry-runs CreateTags on *snap.
func createTagsProbe(p *place, snap *string) probe {
	return probe{"CreateTags", func(ctx context.Context) Finding {
		_, err := p.c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{*snap}, DryRun: aws.Bool(true),
			Tags: []types.Tag{{Key: aws.String(probeTagKey), Value: aws.String(probeTagValue)}}})
		return p.dryRun("CreateTags", p.statement, on(*snap, p.region), err)
	}}
}

// copySnapshotProbe dry-runs, in p's region, CopySnapshot of the location's snapshot under key.
func (lc *locationCheck) copySnapshotProbe(p *place, key string) probe {
	return probe{"CopySnapshot", func(ctx context.Context) Finding {
		in := &ec2.CopySnapshotInput{SourceRegion: aws.String(lc.cfg.Region), SourceSnapshotId: aws.String(lc.snapshot),
			TagSpecifications: tagsOnCreate(types.ResourceTypeSnapshot), DryRun: aws.Bool(true)}
		if key != "" {
			in.Encrypted, in.KmsKeyId = aws.Bool(true), aws.String(key)
		}
		_, err := p.c.CopySnapshot(ctx, in)
		detail := "of " + lc.snapshot + " from " + lc.cfg.Region
		if key != "" {
			detail += " under " + key
		}
		return p.dryRun("CopySnapshot", p.statement, detail, err)
	}}
}
