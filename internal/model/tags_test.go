package model_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
)

// keysOf lists tag keys in order.
func keysOf(tags []types.Tag) []string {
	keys := make([]string, len(tags))
	for i, t := range tags {
		keys[i] = aws.ToString(t.Key)
	}
	return keys
}

func TestMergeTags(t *testing.T) {
	long := func(n int) string { return strings.Repeat("k", n) }
	tests := []struct {
		name        string
		groups      []map[string]string
		wantKeys    []string // in order; nil to skip
		wantValues  map[string]string
		wantDropped []string
		wantLen     int
	}{
		{
			name:       "earlier group wins a collision",
			groups:     []map[string]string{{model.TagCopyToRegion: mockec2.DstRegion}, {model.TagCopyToRegion: "eu-west-1", "app": "web"}},
			wantKeys:   []string{model.TagCopyToRegion, "app"},
			wantValues: map[string]string{model.TagCopyToRegion: mockec2.DstRegion},
		},
		{
			name:        "reserved aws: keys dropped in any case",
			groups:      []map[string]string{{"aws:cloudformation:stack": "x", "AWS:x": "y", "Aws:z": "z", "awsome": "kept", "team:aws:": "kept"}},
			wantKeys:    []string{"awsome", "team:aws:"},
			wantDropped: []string{"AWS:x", "Aws:z", "aws:cloudformation:stack"},
		},
		{
			name:        "empty and over-long keys, over-long values dropped",
			groups:      []map[string]string{{"": "v", long(128): "ok", long(129): "v", "long-value": strings.Repeat("v", 257), "max-value": strings.Repeat("v", 256)}},
			wantKeys:    []string{long(128), "max-value"},
			wantDropped: []string{"", long(129), "long-value"},
		},
		{
			name:    "never more than 50, earlier groups first",
			groups:  []map[string]string{mockec2.Numbered("a", 3), mockec2.Numbered("b", 60)},
			wantLen: 50,
			wantDropped: func() []string {
				var d []string
				for i := 47; i < 60; i++ {
					d = append(d, fmt.Sprintf("b%02d", i))
				}
				return d
			}(),
		},
		{
			name:     "sorted within each group, groups in order",
			groups:   []map[string]string{{"z": "1", "m": "1"}, {"b": "2", "a": "2", "z": "2"}},
			wantKeys: []string{"m", "z", "a", "b"},
		},
		{name: "nothing", groups: nil, wantKeys: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tags, dropped := model.MergeTags(model.MaxTags, tt.groups...)
			if tt.wantKeys != nil && !reflect.DeepEqual(keysOf(tags), tt.wantKeys) {
				t.Errorf("keys %q, want %q", keysOf(tags), tt.wantKeys)
			}
			if tt.wantLen != 0 && len(tags) != tt.wantLen {
				t.Errorf("%d tags, want %d", len(tags), tt.wantLen)
			}
			for k, v := range tt.wantValues {
				if got := model.TagMap(tags)[k]; got != v {
					t.Errorf("tag %s = %q, want %q", k, got, v)
				}
			}
			if !reflect.DeepEqual(dropped, tt.wantDropped) {
				t.Errorf("dropped %q, want %q", dropped, tt.wantDropped)
			}
			// The same input gives the same output.
			again, _ := model.MergeTags(model.MaxTags, tt.groups...)
			if !reflect.DeepEqual(keysOf(again), keysOf(tags)) {
				t.Errorf("order not stable: %q then %q", keysOf(tags), keysOf(again))
			}
		})
	}
}

func TestCopyTags(t *testing.T) {
	plugin := []string{
		model.TagVolumeType, "gp3", model.TagVolumeIOPS, "3000", model.TagVolumeThroughput, "125",
		model.TagCopyKMSKeyID, "alias/dr", model.TagCopyCompletionMinutes, "60", model.TagCopyRequestedAt, mockec2.T0.Format("2006-01-02T15:04:05Z07:00"),
		model.TagPV, "pv-1", model.TagCreateToken, "0123abcd", model.TagRecorded, "true", model.TagCopyCancelled, mockec2.T0.Format("2006-01-02T15:04:05Z07:00"),
		model.TagDeletionRequestedAt, mockec2.T0.Format("2006-01-02T15:04:05Z07:00"),
	}
	tests := []struct {
		name       string
		src        types.Snapshot
		wantLen    int
		wantAbsent []string
	}{
		{
			name:       "copy intent and mark dropped, origin added",
			src:        mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.ToDest(plugin...), mockec2.WithTags("app", "web", "aws:backup:x", "y")),
			wantLen:    9, // origin 2 + backup UID + 3 volume settings + 2 Velero + app
			wantAbsent: []string{model.TagCopyToRegion, model.TagCopyKMSKeyID, model.TagCopyCompletionMinutes, model.TagCopyRequestedAt, model.TagCreateToken, model.TagRecorded, model.TagCopyCancelled, model.TagDeletionRequestedAt, "aws:backup:x"},
		},
		{
			name: "50-tag source keeps the plugin's and Velero's tags",
			src: func() types.Snapshot {
				s := mockec2.Snapshot("snap-0000000b", mockec2.VolA, types.SnapshotStateCompleted,
					mockec2.WithTags(model.TagCopyToRegion, mockec2.DstRegion, model.TagVolumeType, "gp3", model.TagVolumeIOPS, "3000", model.TagVolumeThroughput, "125", model.TagPV, "pv-1"))
				for k, v := range mockec2.Numbered("vol-tag-", 50-len(s.Tags)) {
					model.SetTag(&s, k, v)
				}
				return s
			}(),
			wantLen:    50,
			wantAbsent: []string{model.TagCopyToRegion},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tags := model.CopyTags(tt.src, mockec2.SrcRegion)
			got := model.TagMap(tags)
			if len(tags) != tt.wantLen {
				t.Errorf("%d tags, want %d: %q", len(tags), tt.wantLen, keysOf(tags))
			}
			if k := keysOf(tags); len(k) < 2 || k[0] != model.TagSourceRegion || k[1] != model.TagSourceSnapshotID {
				t.Errorf("origin tags not first: %q", k)
			}
			if got[model.TagSourceSnapshotID] != aws.ToString(tt.src.SnapshotId) || got[model.TagSourceRegion] != mockec2.SrcRegion {
				t.Errorf("origin tags %q/%q, want %s/%s", got[model.TagSourceSnapshotID], got[model.TagSourceRegion], aws.ToString(tt.src.SnapshotId), mockec2.SrcRegion)
			}
			for k, v := range model.TagMap(tt.src.Tags) {
				keep := strings.HasPrefix(k, model.TagPrefix) || strings.HasPrefix(k, "velero.io/")
				if keep && !slices.Contains(tt.wantAbsent, k) && got[k] != v {
					t.Errorf("tag %s lost or changed: %q, want %q", k, got[k], v)
				}
			}
			for _, k := range tt.wantAbsent {
				if _, ok := got[k]; ok {
					t.Errorf("tag %s should not be on the copy", k)
				}
			}
		})
	}
}

// EC2 counts tag lengths in Unicode characters, not bytes.
func TestMergeTagsCountsCharacters(t *testing.T) {
	key, value := strings.Repeat("日", 100), strings.Repeat("値", 200)
	tags, dropped := model.MergeTags(model.MaxTags, map[string]string{key: "v", "k": value})
	if len(tags) != 2 || len(dropped) != 0 {
		t.Errorf("kept %d tags, dropped %d; want both kept", len(tags), len(dropped))
	}
}
