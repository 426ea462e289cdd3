package ec2sim

// Stats counts requests and resources. All maps are keyed by region first.
type Stats struct {
	// Calls counts responses: region -> action -> outcome ("ok" or the error code) -> count.
	// An answer dropped by closing the connection counts as "ConnectionClosed".
	Calls map[string]map[string]map[string]int `json:"calls"`
	// Snapshots counts existing source snapshots: region -> state -> count.
	Snapshots map[string]map[string]int `json:"snapshots"`
	// Copies counts existing copies by destination region: region -> state -> count.
	Copies map[string]map[string]int `json:"copies"`
	// PeakCopiesInFlight is the highest number of pending copies seen at once per region.
	PeakCopiesInFlight map[string]int `json:"peakCopiesInFlight"`
	// Volumes counts volumes: region -> state -> count.
	Volumes map[string]map[string]int `json:"volumes"`
}

// Total sums Calls for action over all regions; outcome "" sums every outcome, action "" every
// action.
func (st Stats) Total(action, outcome string) int {
	n := 0
	for _, byAction := range st.Calls {
		for a, byOutcome := range byAction {
			if action != "" && a != action {
				continue
			}
			for o, c := range byOutcome {
				if outcome == "" || o == outcome {
					n += c
				}
			}
		}
	}
	return n
}

// count records one response. Callers hold s.mu.
func (s *Simulator) count(regionName, action, outcome string) {
	byAction := s.calls[regionName]
	if byAction == nil {
		byAction = map[string]map[string]int{}
		s.calls[regionName] = byAction
	}
	byOutcome := byAction[action]
	if byOutcome == nil {
		byOutcome = map[string]int{}
		byAction[action] = byOutcome
	}
	byOutcome[outcome]++
}

// Stats returns a snapshot of the counters and of the resources by state.
func (s *Simulator) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	st := Stats{
		Calls:              map[string]map[string]map[string]int{},
		Snapshots:          map[string]map[string]int{},
		Copies:             map[string]map[string]int{},
		PeakCopiesInFlight: map[string]int{},
		Volumes:            map[string]map[string]int{},
	}
	for region, byAction := range s.calls {
		st.Calls[region] = map[string]map[string]int{}
		for action, byOutcome := range byAction {
			st.Calls[region][action] = map[string]int{}
			for o, n := range byOutcome {
				st.Calls[region][action][o] = n
			}
		}
	}
	for name, r := range s.regions {
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
		st.Snapshots[name], st.Copies[name], st.Volumes[name] = snaps, copies, vols
		st.PeakCopiesInFlight[name] = r.peakCopies
	}
	return st
}
