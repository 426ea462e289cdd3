package ec2sim

// Stats counts requests and resources. All maps are keyed by region first; they sum over
// accounts, and Accounts breaks them down by account.
type Stats struct {
	// Calls counts responses: region -> action -> outcome ("ok" or the error code) -> count.
	// An answer dropped by closing the connection counts as "ConnectionClosed". STS calls count
	// under region "sts".
	Calls map[string]map[string]map[string]int `json:"calls"`
	// Snapshots counts existing source snapshots: region -> state -> count.
	Snapshots map[string]map[string]int `json:"snapshots"`
	// Copies counts existing copies by destination region: region -> state -> count.
	Copies map[string]map[string]int `json:"copies"`
	// PeakCopiesInFlight is the highest number of pending copies seen at once per region, in
	// any one account (the copy limit is per account).
	PeakCopiesInFlight map[string]int `json:"peakCopiesInFlight"`
	// Volumes counts volumes: region -> state -> count.
	Volumes map[string]map[string]int `json:"volumes"`
	// Accounts are the same counts per account ID. Requests whose credentials name no account
	// (unsigned, unknown access key, unknown role) count under "unknown".
	Accounts map[string]AccountStats `json:"accounts"`
}

// AccountStats are the counts of one account, keyed like Stats.
type AccountStats struct {
	// Calls counts the account's responses: region -> action -> outcome -> count.
	Calls map[string]map[string]map[string]int `json:"calls"`
	// Snapshots counts the account's source snapshots: region -> state -> count.
	Snapshots map[string]map[string]int `json:"snapshots"`
	// Copies counts the account's copies by destination region: region -> state -> count.
	Copies map[string]map[string]int `json:"copies"`
	// PeakCopiesInFlight is the account's highest number of pending copies per region.
	PeakCopiesInFlight map[string]int `json:"peakCopiesInFlight"`
	// Volumes counts the account's volumes: region -> state -> count.
	Volumes map[string]map[string]int `json:"volumes"`
}

// Total sums Calls for action over all regions; outcome "" sums every outcome, action "" every
// action.
func (st Stats) Total(action, outcome string) int { return callCounts(st.Calls).total(action, outcome) }

// Total sums the account's Calls like Stats.Total.
func (st AccountStats) Total(action, outcome string) int {
	return callCounts(st.Calls).total(action, outcome)
}

// callCounts counts responses: region -> action -> outcome -> count.
type callCounts map[string]map[string]map[string]int

func (c callCounts) add(regionName, action, outcome string) {
	byAction := c[regionName]
	if byAction == nil {
		byAction = map[string]map[string]int{}
		c[regionName] = byAction
	}
	byOutcome := byAction[action]
	if byOutcome == nil {
		byOutcome = map[string]int{}
		byAction[action] = byOutcome
	}
	byOutcome[outcome]++
}

func (c callCounts) total(action, outcome string) int {
	n := 0
	for _, byAction := range c {
		for a, byOutcome := range byAction {
			if action != "" && a != action {
				continue
			}
			for o, k := range byOutcome {
				if outcome == "" || o == outcome {
					n += k
				}
			}
		}
	}
	return n
}

func (c callCounts) clone() map[string]map[string]map[string]int {
	out := make(map[string]map[string]map[string]int, len(c))
	for region, byAction := range c {
		out[region] = make(map[string]map[string]int, len(byAction))
		for action, byOutcome := range byAction {
			out[region][action] = copyCounts(byOutcome)
		}
	}
	return out
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// count records one response of account. Callers hold s.mu.
func (s *Simulator) count(account, regionName, action, outcome string) {
	s.calls.add(regionName, action, outcome)
	byAccount := s.accountCalls[account]
	if byAccount == nil {
		byAccount = callCounts{}
		s.accountCalls[account] = byAccount
	}
	byAccount.add(regionName, action, outcome)
}

// newAccountStats returns AccountStats with empty maps.
func newAccountStats() AccountStats {
	return AccountStats{
		Calls:              map[string]map[string]map[string]int{},
		Snapshots:          map[string]map[string]int{},
		Copies:             map[string]map[string]int{},
		PeakCopiesInFlight: map[string]int{},
		Volumes:            map[string]map[string]int{},
	}
}

// addTo adds counts by state to dst[regionName], creating it.
func addTo(dst map[string]map[string]int, regionName string, counts map[string]int) {
	m := dst[regionName]
	if m == nil {
		m = map[string]int{}
		dst[regionName] = m
	}
	for k, v := range counts {
		m[k] += v
	}
}

// Stats returns a snapshot of the counters and of the resources by state.
func (s *Simulator) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	total := newAccountStats()
	total.Calls = s.calls.clone()
	accounts := map[string]AccountStats{}
	acct := func(id string) AccountStats {
		a, ok := accounts[id]
		if !ok {
			a = newAccountStats()
			accounts[id] = a
		}
		return a
	}
	for id, calls := range s.accountCalls {
		a := acct(id)
		a.Calls = calls.clone()
		accounts[id] = a
	}
	for key, r := range s.regions {
		now := s.regionNow(key.name, now)
		r.reap(now)
		snaps, copies, vols := map[string]int{}, map[string]int{}, map[string]int{}
		for _, sn := range r.snapOrder {
			if sn.isCopy() {
				copies[sn.state(now)]++
			} else {
				snaps[sn.state(now)]++
			}
		}
		for _, v := range r.volOrder {
			vols[v.state(now)]++
		}
		a := acct(key.account)
		for _, st := range []AccountStats{a, total} {
			addTo(st.Snapshots, key.name, snaps)
			addTo(st.Copies, key.name, copies)
			addTo(st.Volumes, key.name, vols)
			st.PeakCopiesInFlight[key.name] = max(st.PeakCopiesInFlight[key.name], r.peakCopies)
		}
	}
	return Stats{
		Calls: total.Calls, Snapshots: total.Snapshots, Copies: total.Copies,
		PeakCopiesInFlight: total.PeakCopiesInFlight, Volumes: total.Volumes, Accounts: accounts,
	}
}
