package model

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// RestoreSource is which snapshots a restore of a snapshot Velero recorded may make its volume
// from. The zero RestoreSource is Velero's restore's: the recorded snapshot when the region
// holds it, else any copy of it there.
//
// A copy is known by its TagSourceSnapshotID, the ID of the snapshot it was copied from, never
// by a backup's name or a PV (another install's or another backup's copies carry the same). A
// regional copy carries no TagSourceAccount; a vault copy carries the account of its source, so
// that a vault holding copies of several accounts' snapshots, or a regional copy made with
// credentials mistaken for the vault's, is never taken for the copy of this account's snapshot.
type RestoreSource struct {
	// CopiesOnly leaves the recorded snapshot itself out: only its copies are taken.
	CopiesOnly bool
	// VaultOf, with CopiesOnly, takes only vault copies of this account's snapshot; empty, only
	// regional copies.
	VaultOf string
}

// Takes reports whether a restore of recordedID may make its volume from s, as EC2 listed it.
func (src RestoreSource) Takes(s types.Snapshot, recordedID string) bool {
	if aws.ToString(s.SnapshotId) == recordedID {
		return !src.CopiesOnly
	}
	tags := TagMap(s.Tags)
	switch {
	case tags[TagSourceSnapshotID] != recordedID:
		return false
	case !src.CopiesOnly:
		return true
	}
	return tags[TagSourceAccount] == src.VaultOf
}

// Kind names the copies src takes, for messages: "copy", or "vault copy of account …'s snapshot".
func (src RestoreSource) Kind() string {
	if src.CopiesOnly && src.VaultOf != "" {
		return "vault copy of account " + src.VaultOf + "'s snapshot"
	}
	return "copy"
}
