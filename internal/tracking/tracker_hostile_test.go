package tracking

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/golang/mock/gomock"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
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
		{"unauthorized", mockec2.HTTPErr(403, "UnauthorizedOperation"),
			want{completed: true, n: 100, total: 200, errTxt: "UnauthorizedOperation"}},
		{"throttled: wait", mockec2.HTTPErr(503, "RequestLimitExceeded"),
			want{n: 100, total: 200, desc: "waiting to copy snap-0000000a to us-west-2"}},
		{"5xx: wait", mockec2.HTTPErr(500, "InternalError"),
			want{n: 100, total: 200, desc: "waiting to copy snap-0000000a to us-west-2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mockec2.NewFixture(t)
			f.Src().Add(mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest()))
			f.Src().ServeDescribe()
			f.Dst().ServeDescribe()
			f.Src().M.EXPECT().CreateTags(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
				func(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
					return nil, tc.err
				})
			p, err := newTracker(f).Progress(context.Background(), opID(mockec2.VolA), inProgress)
			checkProgress(t, p, err, tc.want)
		})
	}
}
