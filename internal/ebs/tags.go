package ebs

import (
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2's limits on tags (lengths in characters).
const (
	maxTags        = 50
	maxTagKeyLen   = 128
	maxTagValueLen = 256
	reservedPrefix = "aws:"
)

// mergeTags joins tag groups in priority order: a key already taken by an earlier group keeps its
// value, and once limit tags are reached the rest are dropped. Keys EC2 refuses (reserved "aws:",
// empty, too long) and values that are too long are dropped too. It returns the tags, sorted
// within each group so the result is stable, and the keys it dropped.
func mergeTags(limit int, groups ...map[string]string) (tags []types.Tag, dropped []string) {
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
			case k == "" || utf8.RuneCountInString(k) > maxTagKeyLen || utf8.RuneCountInString(v) > maxTagValueLen ||
				strings.HasPrefix(strings.ToLower(k), reservedPrefix), len(tags) == limit:
				dropped = append(dropped, k)
				continue
			}
			seen[k] = true
			tags = append(tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
	}
	return tags, dropped
}

// tagMap reads EC2 tags into a map.
func tagMap(tags []types.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// tagValue is the value of the tag with this key, or "" (a lookup without tagMap's map).
func tagValue(tags []types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// splitByPrefix separates the tags whose keys start with one of prefixes from the rest.
func splitByPrefix(m map[string]string, prefixes ...string) (matching, rest map[string]string) {
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

// copyTags are the tags of a copy of src: src's own, less the copy intent and the marks that
// concern only the source, plus the copy's origin. The plugin's and Velero's tags go first, so a source with 50 tags loses a volume tag,
// never one a restore or deletion needs.
func copyTags(src types.Snapshot, sourceRegion string) []types.Tag {
	own, rest := splitByPrefix(tagMap(src.Tags), tagPrefix, "velero.io/")
	for _, k := range []string{TagCopyToRegion, TagCopyKMSKeyID, TagCopyCompletionMinutes, TagCopyRequestedAt,
		TagCreateToken, TagRecorded, TagCopyCancelled, TagCopyFailed, TagDeletionRequestedAt,
		TagVaultAccount, TagVaultRegion, TagVaultKMSKeyID, TagVaultLock, TagVaultRequestedAt, TagVaultSharedAt} {
		delete(own, k)
	}
	origin := map[string]string{TagSourceSnapshotID: aws.ToString(src.SnapshotId), TagSourceRegion: sourceRegion}
	tags, _ := mergeTags(maxTags, origin, own, rest)
	return tags
}
