package ebs

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The decisions of Progress and Cancel, one table each, a row per rule of the README's Tags
// section, Watching progress and Vault account copies.

// Which snapshots this plugin made: told by what its CreateSnapshot writes at creation, never by
// another tag of its prefix that a volume can carry.
func TestWhichSnapshotsThisPluginMade(t *testing.T) {
	tests := []struct {
		name string
		tags []string
		want bool
	}{
		{"a snapshot of this release carries its create token", []string{TagCreateToken, "t"}, true},
		{"a snapshot of this release carries its recorded mark", []string{TagRecorded, recordedReturned}, true},
		{"an earlier release's snapshot carries the volume type it wrote", []string{TagVolumeType, "gp3"}, true},
		{"the upstream plugin's snapshot of a volume this plugin restored carries only the restore token", []string{TagRestoreToken, "r"}, false},
		{"a snapshot of a volume someone tagged with a copy region is not this plugin's", []string{TagCopyToRegion, dstRegion}, false},
		{"a snapshot with no tag of this plugin is not its", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, withTags(tt.tags...))
			if got := madeByThisPlugin(&s); got != tt.want {
				t.Errorf("madeByThisPlugin = %v, want %v", got, tt.want)
			}
		})
	}
}

// What Cancel does at Velero's item-operation timeout: it removes a vault's share and deletes a
// copy still pending, but never one that is kept: locked, or a vault copy vaultRetainOnDelete
// keeps.
func TestWhatCancelDeletes(t *testing.T) {
	regional, vault := target{region: dstRegion}, target{account: "222222222222", region: "eu-west-1"}
	intent := []string{TagCopyToRegion, dstRegion, TagVaultAccount, vault.account, TagVaultRegion, vault.region}
	tests := []struct {
		name      string
		srcTags   []string
		vaultCopy []string // the vault copy's own tags
		copyState types.SnapshotState
		lock      types.LockState
		want      []cancelStep
	}{
		{name: "pending copies are deleted", copyState: types.SnapshotStatePending,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}, {tg: vault, copyID: "snap-v0000001"}}},
		{name: "a shared source's share is removed first", srcTags: []string{TagVaultSharedAt, "2026-11-30T03:00:00Z"}, copyState: types.SnapshotStatePending,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}, {tg: vault, unshare: true}, {tg: vault, copyID: "snap-v0000001"}}},
		{name: "a locked pending vault copy is kept", copyState: types.SnapshotStatePending, lock: types.LockStateGovernance,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}}},
		{name: "a pending vault copy of a source vaultRetainOnDelete keeps is kept", srcTags: []string{TagVaultRetainOnDelete, "true"}, copyState: types.SnapshotStatePending,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}}},
		{name: "a pending vault copy tagged to be retained is kept", vaultCopy: []string{TagVaultRetainOnDelete, "true"}, copyState: types.SnapshotStatePending,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}}},
		{name: "completed copies are the backup's and stay", copyState: types.SnapshotStateCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, withTags(append(slices.Clone(intent), tt.srcTags...)...))
			v := newBackupView(Place{}, srcRegion, backupIdentity{name: backupName}, nil)
			v.locks = map[string]types.LockState{"snap-v0000001": tt.lock}
			vaultCopy := copyOfSnap("snap-v0000001", src, tt.copyState)
			withTags(tt.vaultCopy...)(&vaultCopy)
			v.copies = map[target]map[string][]types.Snapshot{
				regional: {"snap-0000000a": {copyOfSnap("snap-c0000001", src, tt.copyState)}},
				vault:    {"snap-0000000a": {vaultCopy}},
			}
			got := decideCancel(v, &src)
			if !slices.Equal(got, tt.want) {
				t.Errorf("decideCancel = %+v, want %+v", got, tt.want)
			}
			for _, st := range got {
				if st.copyID != "" && aws.ToString(v.copyOf(st.tg, "snap-0000000a").SnapshotId) != st.copyID {
					t.Errorf("step %+v deletes another snapshot than the target's copy", st)
				}
			}
		})
	}
}
