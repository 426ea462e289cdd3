package ec2sim

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// wildcardMatch matches s against an EC2 filter value, where * is any run and ? any one character.
func wildcardMatch(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	p, t := []rune(pattern), []rune(s)
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

func anyMatch(values []string, s string) bool {
	for _, v := range values {
		if wildcardMatch(v, s) {
			return true
		}
	}
	return false
}

// exact reports whether no filter value has a wildcard, so an index can answer it.
func (f filter) exact() bool {
	for _, v := range f.values {
		if strings.ContainsAny(v, "*?") {
			return false
		}
	}
	return true
}

// tagFilter matches "tag:KEY" and "tag-key" filters against a resource's tags; ok is false for
// other filter names.
func tagFilter(f filter, tags map[string]string) (match, ok bool) {
	if key, isTag := strings.CutPrefix(f.name, "tag:"); isTag {
		v, has := tags[key]
		return has && anyMatch(f.values, v), true
	}
	if f.name == "tag-key" {
		for k := range tags {
			if anyMatch(f.values, k) {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

func invalidFilter(name string) *apiError {
	return clientError("InvalidParameterValue", "The filter '%s' is invalid", name)
}

// snapshotMatches applies one DescribeSnapshots filter.
func snapshotMatches(sn *snapshot, f filter, now time.Time) (bool, *apiError) {
	if m, ok := tagFilter(f, sn.tags); ok {
		return m, nil
	}
	var field string
	switch f.name {
	case "snapshot-id":
		field = sn.id
	case "volume-id":
		field = sn.reportedVolumeID()
	case "status":
		field = sn.state(now)
	case "description":
		field = sn.description
	case "owner-id":
		field = sn.owner
	case "encrypted":
		field = strconv.FormatBool(sn.encrypted)
	case "volume-size":
		field = strconv.Itoa(int(sn.sizeGiB))
	case "progress":
		field = sn.progress(now)
	default:
		return false, invalidFilter(f.name)
	}
	return anyMatch(f.values, field), nil
}

// volumeMatches applies one DescribeVolumes filter.
func volumeMatches(v *volume, f filter, now time.Time) (bool, *apiError) {
	if m, ok := tagFilter(f, v.tags); ok {
		return m, nil
	}
	var field string
	switch f.name {
	case "volume-id":
		field = v.id
	case "status":
		field = v.state(now)
	case "availability-zone":
		field = v.az
	case "snapshot-id":
		field = v.snapshotID
	case "volume-type":
		field = v.typ
	case "size":
		field = strconv.Itoa(int(v.sizeGiB))
	case "encrypted":
		field = strconv.FormatBool(v.encrypted)
	default:
		return false, invalidFilter(f.name)
	}
	return anyMatch(f.values, field), nil
}

// page reads MaxResults (between 5 and limit; larger values are cut to limit) and NextToken.
// size 0 means no pagination; start is the sequence number to resume at.
func page(q *request, limit int32, idParam string) (size int, start uint64, err *apiError) {
	n, hasMax, err := q.int32("MaxResults")
	if err != nil {
		return 0, 0, err
	}
	if hasMax {
		if len(q.list(idParam)) > 0 {
			return 0, 0, clientError("InvalidParameterCombination",
				"The parameter %ss cannot be used with the parameter maxResults", lowerFirst(idParam))
		}
		if n < 5 {
			return 0, 0, clientError("InvalidParameterValue",
				"Value ( %d ) for parameter maxResults is invalid. Expecting a value greater than 5.", n)
		}
		size = int(min(n, limit))
	}
	if tok := q.get("NextToken"); tok != "" {
		b, derr := base64.RawURLEncoding.DecodeString(tok)
		seq, perr := strconv.ParseUint(string(b), 10, 64)
		if derr != nil || perr != nil {
			return 0, 0, clientError("InvalidPaginationToken", "Invalid pagination token: %s", tok)
		}
		start = seq
	}
	return size, start, nil
}

func nextToken(seq uint64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatUint(seq, 10)))
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// snapshotMatchesAll applies every (already validated) filter to a snapshot.
func snapshotMatchesAll(sn *snapshot, filters []filter, now time.Time) bool {
	for _, f := range filters {
		if m, _ := snapshotMatches(sn, f, now); !m {
			return false
		}
	}
	return true
}

// volumeMatchesAll applies every (already validated) filter to a volume.
func volumeMatchesAll(v *volume, filters []filter, now time.Time) bool {
	for _, f := range filters {
		if m, _ := volumeMatches(v, f, now); !m {
			return false
		}
	}
	return true
}
