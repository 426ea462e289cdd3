package check

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// configFixDefault is the fix of a config error that names no misspelt key.
const configFixDefault = "correct spec.config of the VolumeSnapshotLocation (README, Config reference)"

// configFix is the fix of a location's config that ebs.ParseConfig refused: for each unknown
// key that looks like a known one, the known one; else where to read the keys. It names keys
// only, never values (an unknown key's value may be a misplaced secret).
func configFix(config map[string]string) string {
	known := model.ConfigKeys()
	var fixes []string
	for k := range config {
		if slices.Contains(known, k) {
			continue
		}
		if s, ok := suggestKey(k, known); ok {
			fixes = append(fixes, fmt.Sprintf("did you mean `%s`? rename %q to %q", s, k, s))
		}
	}
	if len(fixes) == 0 {
		return configFixDefault
	}
	sort.Strings(fixes)
	return strings.Join(fixes, "; ") + " in spec.config of the VolumeSnapshotLocation"
}

// suggestKey returns the known key an unknown one most likely meant: the same key in other
// letter case, else the nearest by edit distance when that is at most maxKeyEdits, or a
// quarter of the key's length.
func suggestKey(key string, known []string) (string, bool) {
	lower := strings.ToLower(key)
	best, bestDist := "", -1
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k, true
		}
		if d := editDistance(lower, strings.ToLower(k)); bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	if bestDist >= 0 && (bestDist <= maxKeyEdits || bestDist <= len(best)/4) {
		return best, true
	}
	return "", false
}

// maxKeyEdits is the edit distance within which a key of any length is taken for a misspelling.
const maxKeyEdits = 2

// editDistance is the Levenshtein distance between a and b, counted in bytes (config keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
