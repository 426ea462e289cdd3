package ec2api

import "github.com/velero-async/velero-plugin-for-aws/internal/ec2api/ec2apitest"

// Errors as the SDK surfaces them.
var (
	apiErr  = ec2apitest.APIError
	httpErr = ec2apitest.HTTPError
	netErr  = ec2apitest.NetError
)
