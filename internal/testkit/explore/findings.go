package explore

// finding is one way today's code breaks a promise, as the explorer finds it: the issue's
// finding it is, and the category it shows as.
type finding struct {
	// id is the finding's number in issue 21 ("1" to "8", "cancel"), or "new" for one the
	// explorer found beyond the list.
	id  string
	cat category
}

// findings maps each known finding to the promise it breaks.
var findings = []finding{
	{"1", catCompletedWithoutSnapshot},
	{"2", catVaultCopyNotInVault},
	{"2, 6", catWrongSigner},
	{"3", catKeptDeleted},
	{"4", catFailedSnapshotLeaked},
	{"5", catCopyLeaked},
	{"6", catStalled},
	{"8", catOtherProviderNoCopy},
	{"cancel", catCopiedAfterEnd},
	{"new: CreateSnapshot retries a 5xx answer for ever", catHung},
	{"new: a copy-region location's deletion says deleted and leaves the source", catSourceLeaked},
}

// knownOpen are the broken promises today's code is known to show (the findings not fixed
// yet). The explorer tolerates them and their regression scenarios expect them. When a fix
// lands, take its category out: from then on the explorer and the scenario fail if it comes back.
var knownOpen = map[category]bool{}

func init() {
	for _, f := range findings {
		knownOpen[f.cat] = true
	}
}
