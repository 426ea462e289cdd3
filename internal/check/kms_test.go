package check

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

func TestCopyKeys(t *testing.T) {
	const vault = "222222222222"
	tests := []struct {
		name, key, account string
		want               []Status
		detail             string
	}{
		{"a key ARN of the destination", "arn:aws:kms:us-west-2:111111111111:key/k", "", []Status{Pass, NotChecked}, "a key ARN of us-west-2"},
		{"a key ARN of another region", "arn:aws:kms:us-east-1:111111111111:key/k", "", []Status{Fail}, "no such key in us-west-2"},
		{"a vault key of another account", "arn:aws:kms:us-west-2:111111111111:key/k", vault, []Status{Fail}, "not the vault account"},
		{"a vault key of the vault", "arn:aws:kms:us-west-2:222222222222:key/k", vault, []Status{Pass, NotChecked}, "a key ARN"},
		{"a bare key ID", "1234abcd-12ab-34cd-56ef-1234567890ab", "", []Status{NotChecked}, "aws kms describe-key"},
		{"an alias", "alias/backups", "", []Status{NotChecked}, "looked up in us-west-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := keyFindings("copyKmsKeyId", tt.key, "us-west-2", tt.account, "the location's account")
			var got []Status
			for _, f := range fs {
				got = append(got, f.Status)
				if f.Status == Fail && f.Fix == "" {
					t.Errorf("%+v fails without a fix", f)
				}
			}
			if len(got) != len(tt.want) || strings.Join(statuses(got), ",") != strings.Join(statuses(tt.want), ",") || !strings.Contains(fs[0].Detail, tt.detail) {
				t.Errorf("%+v, want %v with %q", fs, tt.want, tt.detail)
			}
		})
	}
}

func statuses(s []Status) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

func TestSourceVolumeKeysWithAVault(t *testing.T) {
	vol := func(id string, encrypted bool, key string) types.Volume {
		v := types.Volume{VolumeId: aws.String(id), Encrypted: aws.Bool(encrypted)}
		if key != "" {
			v.KmsKeyId = aws.String(key)
		}
		return v
	}
	tests := []struct {
		name   string
		known  bool
		vols   []types.Volume
		want   Status
		detail string
	}{
		{"unencrypted volumes", true, []types.Volume{vol("vol-1", false, ""), vol("vol-2", false, "")}, Pass, "2 volumes, unencrypted"},
		{"one under aws/ebs", true, []types.Volume{vol("vol-1", false, ""), vol("vol-2", true, "arn:aws:kms:us-east-1:111111111111:alias/aws/ebs")}, Fail, "vol-2 encrypted under alias/aws/ebs"},
		{"under customer keys", true, []types.Volume{vol("vol-1", true, "arn:aws:kms:us-east-1:111111111111:key/k")}, NotChecked, "1 volume under arn:aws:kms:us-east-1:111111111111:key/k"},
		{"volumes not described", false, nil, NotChecked, "could not be described"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := &locationCheck{sources: tt.vols, sourcesKnown: tt.known, cfg: model.Config{Vault: model.VaultConfig{AccountID: "222222222222"}}}
			f := sourceKeys(lc)
			if f.Status != tt.want || !strings.Contains(f.Detail, tt.detail) || (f.Status == Fail) != (f.Fix != "") {
				t.Errorf("%+v, want %s with %q", f, tt.want, tt.detail)
			}
		})
	}
}
