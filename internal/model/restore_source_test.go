package model_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Which snapshot a restore of the recorded snapshot may use, by what it restores from.
func TestRestoreSourceTakes(t *testing.T) {
	const recorded, source, other = "snap-0aaaaaaaaaaaaaaa1", "111111111111", "333333333333"
	snap := func(id string, tags map[string]string) types.Snapshot {
		s := types.Snapshot{SnapshotId: aws.String(id)}
		for k, v := range tags {
			s.Tags = append(s.Tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		return s
	}
	itself := snap(recorded, map[string]string{model.TagBackup: "nightly"})
	regional := snap("snap-0bbbbbbbbbbbbbbb2", map[string]string{model.TagSourceSnapshotID: recorded, model.TagSourceRegion: "us-east-1"})
	vault := snap("snap-0ccccccccccccccc3", map[string]string{model.TagSourceSnapshotID: recorded, model.TagSourceAccount: source})
	otherAccounts := snap("snap-0ddddddddddddddd4", map[string]string{model.TagSourceSnapshotID: recorded, model.TagSourceAccount: other})
	sameName := snap("snap-0eeeeeeeeeeeeeee5", map[string]string{model.TagSourceSnapshotID: "snap-0fffffffffffffff6", model.TagBackup: "nightly"})
	velero := model.RestoreSource{}
	copies := model.RestoreSource{CopiesOnly: true}
	vaultCopies := model.RestoreSource{CopiesOnly: true, VaultOf: source}
	for _, tc := range []struct {
		name string
		src  model.RestoreSource
		snap types.Snapshot
		want bool
	}{
		{"Velero's restore takes the recorded snapshot", velero, itself, true},
		{"Velero's restore takes any copy of it", velero, otherAccounts, true},
		{"a copy of another snapshot of a backup of the same name is never taken", velero, sameName, false},
		{"a drill of the copies never takes the recorded snapshot itself", copies, itself, false},
		{"a drill of the copies takes the regional copy", copies, regional, true},
		{"a drill of the copies takes no vault copy", copies, vault, false},
		{"a drill of the copies takes no copy of another backup of the same name", copies, sameName, false},
		{"a drill of the vault takes the vault copy of this account's snapshot", vaultCopies, vault, true},
		{"a drill of the vault takes no vault copy of another account's snapshot", vaultCopies, otherAccounts, false},
		{"a drill of the vault takes no regional copy that landed in the vault's region", vaultCopies, regional, false},
		{"a drill of the vault never takes the recorded snapshot shared with the vault", vaultCopies, itself, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.src.Takes(tc.snap, recorded); got != tc.want {
				t.Errorf("Takes(%s, tags %v) = %v, want %v", aws.ToString(tc.snap.SnapshotId), model.TagMap(tc.snap.Tags), got, tc.want)
			}
		})
	}
}
