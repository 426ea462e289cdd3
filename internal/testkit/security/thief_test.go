package security

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// The vault copies' locks in the thief's runs: 30 days, compliance with a day of cool-off.
const (
	thiefLockDays     = 30
	thiefCoolOffHours = 24
	// centuryDays is the longest lock EC2 takes: 100 years.
	centuryDays = 36500
)

// vaultCopyLocked backs up a volume with a vault copy locked as lock, kept on deletion, with
// the plugin, and returns the copy's ID.
func vaultCopyLocked(t *testing.T, a *rig.Accounts, lock model.Lock) string {
	t.Helper()
	cfg := model.Config{Region: vaultSourceRegion, Vault: model.VaultConfig{AccountID: rig.VaultAccount, Profile: "vault", Region: vaultRegion,
		Lock: lock, RetainOnDelete: true}}
	srcID, opID, err := a.Snapshot(cfg, vaultSourceRegion, ec2sim.VolumeSpec{SizeGiB: 8})
	if err != nil {
		t.Fatal(err)
	}
	if seen, p, completed := a.Follow(opID, false); !completed || p.Err != "" {
		t.Fatalf("the backup's operation: %v, %q (%v)", completed, p.Err, seen)
	}
	copies := a.VaultCopies(vaultRegion, srcID)
	if len(copies) != 1 || copies[0].LockState == "" {
		t.Fatalf("vault copies %+v, want one, locked", copies)
	}
	return copies[0].ID
}

// thiefAccounts are the accounts of a thief's run: the source account allowed the README's
// plugin and vault-sharing statements, the vault account's keys allowed vaultAllowed.
func thiefAccounts(t *testing.T, vaultAllowed []string) *rig.Accounts {
	cfg := ec2sim.Config{Unthrottled: true, SnapshotDuration: ec2sim.Range(10*time.Second, 10*time.Second),
		CopyDuration: ec2sim.Range(20*time.Second, 20*time.Second)}
	return rig.NewAccounts(t, cfg, append(readmeEC2Actions(t, sidPlugin), readmeEC2Actions(t, sidVaultSharing)...), vaultAllowed)
}

// relock is LockSnapshot of id as in.
func relock(c *ec2.Client, id string, in ec2.LockSnapshotInput) error {
	in.SnapshotId = aws.String(id)
	_, err := c.LockSnapshot(context.Background(), &in)
	return err
}

// TestWhatAThiefCanDoToTheVault plays internal/vault/README.md's thief section: with the vault
// account's keys allowed exactly the README's VaultCopies statement without ec2:DeleteSnapshot
// (vaultRetainOnDelete), a thief holding the source cluster's Secrets tries each thing the
// section says it can or cannot do to the vault copies, one row per claim, in order, on a
// governance-locked copy and a compliance-locked one past its cool-off. Then the vault
// account's administrators, allowed every action, try the compliance lock: nobody can shorten
// or remove it.
func TestWhatAThiefCanDoToTheVault(t *testing.T) {
	vault := slices.DeleteFunc(readmeEC2Actions(t, sidVaultCopies), func(a string) bool { return a == "DeleteSnapshot" })
	a := thiefAccounts(t, vault)
	governed := vaultCopyLocked(t, a, model.Lock{Mode: model.LockModeGovernance, Days: thiefLockDays})
	complied := vaultCopyLocked(t, a, model.Lock{Mode: model.LockModeCompliance, Days: thiefLockDays, CoolOffHours: thiefCoolOffHours})
	a.Clock.Step(thiefCoolOffHours*time.Hour + time.Minute)
	thief := rig.ClientAs(a.URL, rig.VaultAccount, vaultRegion)
	ctx := context.Background()
	var copied string
	tryClaims(t, "a thief", []claim{
		{claim: "can read the vault copies' metadata", try: func() error {
			out, err := thief.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{SnapshotIds: []string{governed, complied}})
			if err == nil && len(out.Snapshots) != 2 {
				t.Errorf("DescribeSnapshots listed %d of the 2 vault copies", len(out.Snapshots))
			}
			return err
		}},
		{claim: "can make more copies (billed to the vault account)", try: func() error {
			out, err := thief.CopySnapshot(ctx, &ec2.CopySnapshotInput{SourceSnapshotId: aws.String(governed), SourceRegion: aws.String(vaultRegion)})
			if err == nil {
				copied = aws.ToString(out.SnapshotId)
			}
			return err
		}},
		{claim: "can tag them", try: func() error {
			_, err := thief.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{governed, copied}, Tags: []types.Tag{{Key: aws.String("stolen"), Value: aws.String("yes")}}})
			return err
		}},
		{claim: "can lock one in compliance mode for 100 years, which nobody can then lift: billed until it ends", try: func() error {
			return relock(thief, copied, ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, LockDuration: aws.Int32(centuryDays)})
		}},
		{claim: "can shorten a governance lock", try: func() error {
			return relock(thief, governed, ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, ExpirationDate: aws.Time(a.Clock.Now().Add(time.Minute))})
		}},
		{claim: "never a compliance lock once its cool-off has passed", refused: "InvalidParameterValue", try: func() error {
			return relock(thief, complied, ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, ExpirationDate: aws.Time(a.Clock.Now().Add(time.Minute))})
		}},
		{claim: "nor turn it into a governance lock it could shorten", refused: "InvalidParameterValue", try: func() error {
			return relock(thief, complied, ec2.LockSnapshotInput{LockMode: types.LockModeGovernance, LockDuration: aws.Int32(1)})
		}},
		{claim: "cannot delete a vault copy: even a shortened governance lock, ended, does not let it go", refused: "UnauthorizedOperation", try: func() error {
			a.Clock.Step(2 * time.Minute)
			_, err := thief.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(governed)})
			return err
		}},
		{claim: "cannot unlock one", refused: "UnauthorizedOperation", try: func() error {
			_, err := thief.UnlockSnapshot(ctx, &ec2.UnlockSnapshotInput{SnapshotId: aws.String(complied)})
			return err
		}},
	})

	admin := thiefAccounts(t, nil)
	complied = vaultCopyLocked(t, admin, model.Lock{Mode: model.LockModeCompliance, Days: thiefLockDays, CoolOffHours: thiefCoolOffHours})
	admin.Clock.Step(thiefCoolOffHours*time.Hour + time.Minute)
	root := rig.ClientAs(admin.URL, rig.VaultAccount, vaultRegion)
	tryClaims(t, "the vault account, allowed every action,", []claim{
		{claim: "cannot remove a compliance lock past its cool-off", refused: "IncorrectState", try: func() error {
			_, err := root.UnlockSnapshot(ctx, &ec2.UnlockSnapshotInput{SnapshotId: aws.String(complied)})
			return err
		}},
		{claim: "cannot shorten a compliance lock past its cool-off", refused: "InvalidParameterValue", try: func() error {
			return relock(root, complied, ec2.LockSnapshotInput{LockMode: types.LockModeCompliance, LockDuration: aws.Int32(1)})
		}},
		{claim: "cannot delete a locked copy", refused: "SnapshotLocked", try: func() error {
			_, err := root.DeleteSnapshot(ctx, &ec2.DeleteSnapshotInput{SnapshotId: aws.String(complied)})
			return err
		}},
	})
}

// claim is one thing the thief section says someone can or cannot do: the try, and the error
// code EC2 refuses it with ("" when it succeeds).
type claim struct {
	claim   string
	try     func() error
	refused string
}

// tryClaims tries each claim of who in order.
func tryClaims(t *testing.T, who string, claims []claim) {
	t.Helper()
	for _, c := range claims {
		if err := c.try(); ec2api.Code(err) != c.refused {
			t.Errorf("%s %s: %v, want %s", who, c.claim, err, answer(c.refused))
		}
	}
}

// answer names the answer a claim expects: success, or EC2's refusal code.
func answer(code string) string {
	if code == "" {
		return "success"
	}
	return code
}
