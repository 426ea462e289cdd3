package plugin

import (
	"context"
	"time"
)

// callContext is the context of one call of Velero's into the plugin: it ends after limit
// (ec2api.ItemActionCallTimeout, ec2api.SnapshotterCallTimeout), whatever EC2, STS or the
// Kubernetes API do. Velero's plugin calls carry no context of their own.
func callContext(limit time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), limit)
}
