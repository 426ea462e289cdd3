package cli

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

// Resolver finds a location's credentials as the item actions do (*location.Resolver).
type Resolver interface {
	ForBackup(ctx context.Context, backup *velerov1.Backup, region string) (location.Choice, error)
}

// Clients hands out EC2 clients (*ec2api.Factory).
type Clients interface {
	Client(ctx context.Context, region string, creds ec2api.Credentials) (ec2api.EC2, error)
}
