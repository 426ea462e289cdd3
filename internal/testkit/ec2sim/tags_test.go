package ec2sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestTags(t *testing.T) {
	f := start(t, Config{})
	c := f.client("us-east-1")
	vol := f.volume("us-east-1", VolumeSpec{Tags: map[string]string{"team": "a"}})
	snap := f.snapshot("us-east-1", vol, map[string]string{"velero.io/backup": "b1", "keep": "me"})
	tags := func(kv ...string) []types.Tag {
		var out []types.Tag
		for i := 0; i < len(kv); i += 2 {
			out = append(out, types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
		}
		return out
	}
	many := make([]types.Tag, 48)
	for i := range many {
		many[i] = types.Tag{Key: aws.String(fmt.Sprint("k", i)), Value: aws.String("v")}
	}
	byTag := func(k, v string) int {
		out, err := c.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{
			Filters: []types.Filter{{Name: aws.String("tag:" + k), Values: []string{v}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Snapshots)
	}

	tests := []struct {
		name    string
		call    func() error
		wantErr string
		check   func() bool
	}{
		{"create on snapshot and volume", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{snap, vol}, Tags: tags("velero.io/backup", "b2", "new", "x")})
			return err
		}, "", func() bool {
			s := f.srv.Sim.Snapshots("us-east-1")[0].Tags
			v := f.srv.Sim.Volumes("us-east-1")[0].Tags
			return s["velero.io/backup"] == "b2" && s["new"] == "x" && v["new"] == "x" && v["team"] == "a" &&
				byTag("velero.io/backup", "b2") == 1 && byTag("velero.io/backup", "b1") == 0
		}},
		{"delete by key", func() error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{snap}, Tags: []types.Tag{{Key: aws.String("new")}}})
			return err
		}, "", func() bool {
			_, ok := f.srv.Sim.Snapshots("us-east-1")[0].Tags["new"]
			return !ok && byTag("new", "x") == 0
		}},
		{"delete with a different value keeps the tag", func() error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{snap}, Tags: tags("keep", "other")})
			return err
		}, "", func() bool { return f.srv.Sim.Snapshots("us-east-1")[0].Tags["keep"] == "me" }},
		{"delete with the value", func() error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{snap}, Tags: tags("keep", "me")})
			return err
		}, "", func() bool { return len(f.srv.Sim.Snapshots("us-east-1")[0].Tags) == 1 }},
		{"delete all of a volume's tags", func() error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{vol}})
			return err
		}, "", func() bool { return len(f.srv.Sim.Volumes("us-east-1")[0].Tags) == 0 }},
		{"up to 50 tags", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{snap}, Tags: append(many, tags("one", "more")...)})
			return err
		}, "", func() bool { return len(f.srv.Sim.Snapshots("us-east-1")[0].Tags) == 50 }},
		{"51st tag", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{snap}, Tags: tags("too", "many")})
			return err
		}, "TagLimitExceeded", nil},
		{"aws: prefix", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{vol}, Tags: tags("AWS:x", "y")})
			return err
		}, "InvalidParameterValue", nil},
		{"aws: prefix on delete", func() error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{vol}, Tags: tags("aws:x", "y")})
			return err
		}, "InvalidParameterValue", nil},
		{"key too long", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{vol}, Tags: tags(strings.Repeat("k", 129), "")})
			return err
		}, "InvalidParameterValue", nil},
		{"unknown snapshot", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"snap-0123456789abcdef0"}, Tags: tags("a", "b")})
			return err
		}, "InvalidSnapshot.NotFound", nil},
		{"unknown volume", func() error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{"vol-0123456789abcdef0"}})
			return err
		}, "InvalidVolume.NotFound", nil},
		{"malformed volume", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"vol-zz"}, Tags: tags("a", "b")})
			return err
		}, "InvalidVolumeID.Malformed", nil},
		{"unknown resource type", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"i-0123456789abcdef0"}, Tags: tags("a", "b")})
			return err
		}, "InvalidID", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); errCode(err) != tt.wantErr {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check() {
				t.Errorf("check failed: snapshot tags %v, volume tags %v",
					f.srv.Sim.Snapshots("us-east-1")[0].Tags, f.srv.Sim.Volumes("us-east-1")[0].Tags)
			}
		})
	}
}
