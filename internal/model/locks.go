package model

import (
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// locked reports whether a lock state holds the snapshot against deletion.
func Locked(s types.LockState) bool {
	switch s {
	case types.LockStateCompliance, types.LockStateGovernance, types.LockStateComplianceCooloff:
		return true
	}
	return false
}
