package ebs

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
)

// A copy whose source the plugin may not tag (the IAM policy lacks ec2:CreateTags) fails its
// operation with EC2's message, as a refused CopySnapshot does, instead of waiting until
// Velero's item-operation timeout (4 h by default) with the error only in the description.
func TestProgressCopyMarkUnauthorized(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want want
	}{
		{"unauthorized", httpErr(403, "UnauthorizedOperation"),
			want{completed: true, n: 100, total: 200, errTxt: "UnauthorizedOperation"}},
		{"throttled: wait", httpErr(503, "RequestLimitExceeded"),
			want{n: 100, total: 200, desc: "waiting to copy snap-0000000a to us-west-2"}},
		{"5xx: wait", httpErr(500, "InternalError"),
			want{n: 100, total: 200, desc: "waiting to copy snap-0000000a to us-west-2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.src().add(snapshot("snap-0000000a", volA, types.SnapshotStateCompleted, toDest()))
			f.src().serveDescribe()
			f.dst().serveDescribe()
			f.src().m.EXPECT().CreateTags(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
				func(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
					return nil, tc.err
				})
			p, err := newTracker(f, ).Progress(context.Background(), opID(volA), inProgress)
			checkProgress(t, p, err, tc.want)
		})
	}
}
