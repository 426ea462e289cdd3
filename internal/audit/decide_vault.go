package audit

import (
	"fmt"
	"sort"
	"strings"
)

// accountLossPlace is the recovery place of a backup restored without its source account: its
// vault copies and its record in the vault bucket.
const accountLossPlace = "without the source account"

// accountLoss judges whether a backup restores once its source account is gone: every vault
// copy it asked for completed (and locked, where its location asks for a lock), and its record
// in the vault bucket of each of its locations. A vault place or a bucket not read makes it
// unknown, never restorable; a location naming no vault bucket keeps the record in the source
// account only.
func accountLoss(name string, places []PlaceCount, buckets []BucketRead, withoutBucket []string) *AccountLoss {
	l := &AccountLoss{}
	var not, unknown []string
	vaults := 0
	for _, p := range places {
		if p.Kind != KindVault {
			continue
		}
		vaults++
		switch {
		case p.Unread != "":
			unknown = append(unknown, p.Place+": "+p.Unread)
		case !p.Ready():
			not = append(not, fmt.Sprintf("%s: %s", p.Place, placeText(p)))
		case p.Locked < p.LocksAsked:
			not = append(not, fmt.Sprintf("%s: %d of %d vault copies not locked", p.Place, p.LocksAsked-p.Locked, p.LocksAsked))
		}
	}
	if vaults == 0 {
		not = append(not, "it asked for no vault copies")
	}
	sort.Strings(withoutBucket)
	for _, loc := range withoutBucket {
		not = append(not, fmt.Sprintf("location %s names no vaultBucket: its record is in the source account only", loc))
	}
	var names []string
	for _, b := range buckets {
		names = append(names, b.Bucket.Name)
		_, held := b.Records[name]
		switch {
		case b.Err != "":
			unknown = append(unknown, fmt.Sprintf("vault bucket %s could not be read: %s", b.Bucket.Name, b.Err))
		case !held:
			not = append(not, fmt.Sprintf("no record of it in vault bucket %s under %s", b.Bucket.Name, b.Bucket.BackupsPrefix()))
		}
	}
	l.Buckets = strings.Join(names, ", ")
	switch {
	case len(not) > 0:
		l.Why = strings.Join(not, "; ")
	case len(unknown) > 0:
		l.Unknown = strings.Join(unknown, "; ")
	default:
		l.Restorable = true
	}
	return l
}

// recoveryPlace is one place a backup may be restored from, for the recovery points.
type recoveryPlace struct {
	name, unread string
	ready        bool
}

// recoveryPlaces are b's recovery places: each place of its copies, and, when it was judged,
// the loss of the source account.
func recoveryPlaces(b BackupLine) []recoveryPlace {
	var out []recoveryPlace
	for _, p := range b.Places {
		if p.Kind != KindSource {
			out = append(out, recoveryPlace{name: p.Place, unread: p.Unread, ready: p.Ready()})
		}
	}
	if l := b.AccountLoss; l != nil {
		out = append(out, recoveryPlace{name: accountLossPlace, unread: l.Unknown, ready: l.Restorable})
	}
	return out
}
