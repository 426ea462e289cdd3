package model

import (
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2's limits on tags (lengths in characters).
const (
	MaxTags        = 50
	MaxTagKeyLen   = 128
	MaxTagValueLen = 256
	ReservedPrefix = "aws:"
)

// MergeTags joins tag groups in priority order: a key already taken by an earlier group keeps its
// value, and once limit tags are reached the rest are dropped. Keys EC2 refuses (reserved "aws:",
// empty, too long) and values that are too long are dropped too. It returns the tags, sorted
// within each group so the result is stable, and the keys it dropped.
func MergeTags(limit int, groups ...map[string]string) (tags []types.Tag, dropped []string) {
	seen := map[string]bool{}
	for _, g := range groups {
		keys := make([]string, 0, len(g))
		for k := range g {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := g[k]
			switch {
			case seen[k]:
				continue
			case k == "" || utf8.RuneCountInString(k) > MaxTagKeyLen || utf8.RuneCountInString(v) > MaxTagValueLen ||
				strings.HasPrefix(strings.ToLower(k), ReservedPrefix), len(tags) == limit:
				dropped = append(dropped, k)
				continue
			}
			seen[k] = true
			tags = append(tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
	}
	return tags, dropped
}

// TagMap reads EC2 tags into a map.
func TagMap(tags []types.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// TagValue is the value of the tag with this key, or "" (a lookup without tagMap's map).
func TagValue(tags []types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// SplitByPrefix separates the tags whose keys start with one of prefixes from the rest.
func SplitByPrefix(m map[string]string, prefixes ...string) (matching, rest map[string]string) {
	matching, rest = map[string]string{}, map[string]string{}
	for k, v := range m {
		if hasAnyPrefix(k, prefixes) {
			matching[k] = v
		} else {
			rest[k] = v
		}
	}
	return matching, rest
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// CopyTags are the tags of a copy of src: src's own, less the copy intent and the marks that
// concern only the source, plus the copy's origin. The plugin's and Velero's tags go first, so a source with 50 tags loses a volume tag,
// never one a restore or deletion needs.
func CopyTags(src types.Snapshot, sourceRegion string) []types.Tag {
	own, rest := SplitByPrefix(TagMap(src.Tags), TagPrefix, "velero.io/")
	for _, k := range []string{TagCopyToRegion, TagCopyKMSKeyID, TagCopyCompletionMinutes, TagCopyRequestedAt,
		TagCreateToken, TagRecorded, TagCopyCancelled, TagCopyFailed, TagDeletionRequestedAt,
		TagVaultAccount, TagVaultRegion, TagVaultKMSKeyID, TagVaultLock, TagVaultRequestedAt, TagVaultSharedAt} {
		delete(own, k)
	}
	origin := map[string]string{TagSourceSnapshotID: aws.ToString(src.SnapshotId), TagSourceRegion: sourceRegion}
	tags, _ := MergeTags(MaxTags, origin, own, rest)
	return tags
}

// SetTag sets (or, with an empty value, removes) a tag on a snapshot as read.
func SetTag(s *types.Snapshot, key, value string) {
	if s == nil {
		return
	}
	s.Tags = slices.DeleteFunc(slices.Clone(s.Tags), func(t types.Tag) bool { return aws.ToString(t.Key) == key })
	if value != "" {
		s.Tags = append(s.Tags, types.Tag{Key: aws.String(key), Value: aws.String(value)})
	}
}
