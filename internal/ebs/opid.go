package ebs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/pv"
)

// Operation IDs read "ebs:v1:<region>:<volume ID>:<unix seconds issued>". They carry everything
// Progress needs, so they survive plugin and Velero restarts.
const (
	opIDPrefix  = "ebs"
	opIDVersion = "v1"
)

// Operation is one volume's snapshot (and copy) as tracked by the BackupItemAction.
type Operation struct {
	Region   string
	VolumeID string
	Issued   time.Time
}

// String returns the operation ID.
func (o Operation) String() string {
	return strings.Join([]string{opIDPrefix, opIDVersion, o.Region, o.VolumeID, strconv.FormatInt(o.Issued.Unix(), 10)}, ":")
}

// ParseOperationID reads an operation ID made by Operation.String.
func ParseOperationID(id string) (Operation, error) {
	parts := strings.Split(id, ":")
	if len(parts) != 5 || parts[0] != opIDPrefix {
		return Operation{}, fmt.Errorf("operation ID %q is not one of this plugin's (want %s:%s:REGION:VOLUME:TIME)", id, opIDPrefix, opIDVersion)
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
