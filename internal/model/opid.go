package model

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
)

// Operation IDs read "<kind>:<version>:<region>:<volume ID>:<unix seconds issued>[:<PV name>]",
// where the kind is "ebs" for a snapshot and its copy, "ebs-volume" for a restored volume. They
// carry everything Progress needs, so they survive plugin and Velero restarts. Version v2 adds
// the PersistentVolume's name (so two PVs on one EBS volume are told apart); v1 IDs, issued by
// earlier releases, are still read.
const (
	opIDPrefix       = "ebs"
	volumeOpIDPrefix = "ebs-volume"
	opIDVersion1     = "v1"
	opIDVersion2     = "v2"
	// maxPVNameLen is the longest Kubernetes object name.
	maxPVNameLen = 253
)

// Operation is one volume's snapshot (and copy) as tracked by the BackupItemAction.
type Operation struct {
	Region   string
	VolumeID string
	// Issued is when the BackupItemAction opened the operation, just before core asked for the
	// snapshot: the snapshot cannot have started much earlier.
	Issued time.Time
	// PV is the PersistentVolume's name; empty for operations opened by a v1 release.
	PV string
}

// String returns the operation ID.
func (o Operation) String() string { return o.format(opIDPrefix) }

// VolumeOperation is a restored volume, tracked by the RestoreItemAction until it is usable.
type VolumeOperation struct{ Operation }

// String returns the operation ID.
func (o VolumeOperation) String() string { return o.format(volumeOpIDPrefix) }

func (o Operation) format(prefix string) string {
	parts := []string{prefix, opIDVersion1, o.Region, o.VolumeID, strconv.FormatInt(o.Issued.Unix(), 10)}
	if validObjectName(o.PV) { // a PV Kubernetes would not have named this way is left out
		parts[1] = opIDVersion2
		parts = append(parts, o.PV)
	}
	return strings.Join(parts, ":")
}

// ParseOperationID reads an operation ID made by Operation.String.
func ParseOperationID(id string) (Operation, error) { return parseOperationID(id, opIDPrefix) }

// ParseVolumeOperationID reads an operation ID made by VolumeOperation.String.
func ParseVolumeOperationID(id string) (VolumeOperation, error) {
	op, err := parseOperationID(id, volumeOpIDPrefix)
	return VolumeOperation{op}, err
}

func parseOperationID(id, prefix string) (Operation, error) {
	parts := strings.Split(id, ":")
	if len(parts) < 5 || len(parts) > 6 || parts[0] != prefix {
		return Operation{}, fmt.Errorf("operation ID %q is not one of this plugin's (want %s:%s:REGION:VOLUME:TIME:PV)", id, prefix, opIDVersion2)
	}
	switch version := parts[1]; {
	case version == opIDVersion1 && len(parts) == 5, version == opIDVersion2 && len(parts) == 6:
	case version == opIDVersion1 || version == opIDVersion2:
		return Operation{}, fmt.Errorf("operation ID %q is not one of this plugin's (want %s:%s:REGION:VOLUME:TIME:PV)", id, prefix, opIDVersion2)
	default:
		return Operation{}, fmt.Errorf("operation ID %q has format version %q; this plugin reads %q and %q", id, version, opIDVersion1, opIDVersion2)
	}
	if !awsid.IsRegion(parts[2]) {
		return Operation{}, fmt.Errorf("operation ID %q: %q is not an AWS region name", id, parts[2])
	}
	if !awsid.IsVolumeID(parts[3]) {
		return Operation{}, fmt.Errorf("operation ID %q: %q is not an EBS volume ID", id, parts[3])
	}
	secs, err := strconv.ParseInt(parts[4], 10, 64)
	if err != nil || secs < 0 {
		return Operation{}, fmt.Errorf("operation ID %q: %q is not a time in Unix seconds", id, parts[4])
	}
	op := Operation{Region: parts[2], VolumeID: parts[3], Issued: time.Unix(secs, 0).UTC()}
	if len(parts) == 6 {
		if !validObjectName(parts[5]) {
			return Operation{}, fmt.Errorf("operation ID %q: %q is not a PersistentVolume name", id, parts[5])
		}
		op.PV = parts[5]
	}
	return op, nil
}

// validObjectName reports whether s is a Kubernetes object name (a DNS subdomain).
func validObjectName(s string) bool {
	if s == "" || len(s) > maxPVNameLen {
		return false
	}
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		edge := i == 0 || i == len(s)-1
		if !alnum && (edge || r != '-' && r != '.') {
			return false
		}
	}
	return true
}

// copyStartMarginShare bounds CopyStartMargin to this share of the timeout.
const copyStartMarginShare = 4

// CopyStartMargin is how long before a source's operation may reach Velero's item-operation
// timeout no copy of the source is started: the create window (the operation may have opened
// that long before the source started; see the create patience), at most a quarter of the
// timeout, so that a short timeout keeps three quarters for the copy. A source started at S is
// copied only until S + timeout - CopyStartMargin.
func CopyStartMargin(timeout, createWindow time.Duration) time.Duration {
	return min(createWindow, timeout/copyStartMarginShare)
}
