package ebs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/pv"
)

// Operation IDs read "<kind>:v1:<region>:<volume ID>:<unix seconds issued>", where the kind is
// "ebs" for a snapshot and its copy, "ebs-volume" for a restored volume. They carry everything
// Progress needs, so they survive plugin and Velero restarts.
const (
	opIDPrefix       = "ebs"
	volumeOpIDPrefix = "ebs-volume"
	opIDVersion      = "v1"
)

// Operation is one volume's snapshot (and copy) as tracked by the BackupItemAction.
type Operation struct {
	Region   string
	VolumeID string
	Issued   time.Time
}

// String returns the operation ID.
func (o Operation) String() string { return o.format(opIDPrefix) }

// VolumeOperation is a restored volume, tracked by the RestoreItemAction until it is usable.
type VolumeOperation struct{ Operation }

// String returns the operation ID.
func (o VolumeOperation) String() string { return o.format(volumeOpIDPrefix) }

func (o Operation) format(prefix string) string {
	return strings.Join([]string{prefix, opIDVersion, o.Region, o.VolumeID, strconv.FormatInt(o.Issued.Unix(), 10)}, ":")
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
	if len(parts) != 5 || parts[0] != prefix {
		return Operation{}, fmt.Errorf("operation ID %q is not one of this plugin's (want %s:%s:REGION:VOLUME:TIME)", id, prefix, opIDVersion)
	}
	if parts[1] != opIDVersion {
		return Operation{}, fmt.Errorf("operation ID %q has format version %q; this plugin reads %q", id, parts[1], opIDVersion)
	}
	if !pv.ValidRegion(parts[2]) {
		return Operation{}, fmt.Errorf("operation ID %q: %q is not an AWS region name", id, parts[2])
	}
	if !pv.ValidVolumeID(parts[3]) {
		return Operation{}, fmt.Errorf("operation ID %q: %q is not an EBS volume ID", id, parts[3])
	}
	secs, err := strconv.ParseInt(parts[4], 10, 64)
	if err != nil || secs < 0 {
		return Operation{}, fmt.Errorf("operation ID %q: %q is not a time in Unix seconds", id, parts[4])
	}
	return Operation{Region: parts[2], VolumeID: parts[3], Issued: time.Unix(secs, 0).UTC()}, nil
}
