package ec2sim

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// serveAdmin serves the /_sim/ endpoints: stats, snapshots, volumes (read and seed), KMS keys
// (read and add), faults, outages, closed accounts and S3 buckets (create).
// Snapshots and volumes are the default account's unless ?account=ID (or, to seed, the body's
// "account") names another configured one.
func (s *Simulator) serveAdmin(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " " + r.URL.Path
	account := s.accountOr(r.URL.Query().Get("account"))
	switch route {
	case "GET /_sim/stats":
		writeJSON(w, s.Stats())
	case "GET /_sim/snapshots":
		if s.checkAdminAccount(w, account) {
			writeJSON(w, s.SnapshotsIn(account, adminRegion(r)))
		}
	case "GET /_sim/volumes":
		if s.checkAdminAccount(w, account) {
			writeJSON(w, s.VolumesIn(account, adminRegion(r)))
		}
	case "POST /_sim/volumes":
		var body struct {
			Region  string       `json:"region"`
			Account string       `json:"account"`
			Volumes []VolumeSpec `json:"volumes"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if body.Region == "" {
			body.Region = "us-east-1"
		}
		if body.Account != "" {
			account = body.Account
		}
		for _, v := range body.Volumes {
			if v.Account != "" && !s.checkAdminAccount(w, v.Account) {
				return
			}
		}
		if s.checkAdminAccount(w, account) {
			writeJSON(w, s.AddVolumesTo(account, body.Region, body.Volumes...))
		}
	case "GET /_sim/kms-keys":
		writeJSON(w, s.KMSKeys())
	case "POST /_sim/kms-keys":
		var keys []KMSKey
		if err := json.NewDecoder(r.Body).Decode(&keys); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := s.AddKMSKeys(keys...); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, s.KMSKeys())
	case "POST /_sim/faults":
		var f Faults
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.SetFaults(f)
		writeJSON(w, f.withDefaults())
	case "POST /_sim/outage":
		var body struct {
			Region string `json:"region"`
			Down   bool   `json:"down"`
			Outage
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Region == "" {
			http.Error(w, fmt.Sprintf("want {\"region\": NAME, \"down\": BOOL, \"mode\", \"frozen\"}: %v", err), http.StatusBadRequest)
			return
		}
		if !body.Down {
			s.BringUp(body.Region)
		} else if err := s.TakeDown(body.Region, body.Outage); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string][]string{"down": s.Down()})
	case "POST /_sim/accounts":
		var body struct {
			Account string `json:"account"`
			Closed  bool   `json:"closed"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, fmt.Sprintf("want {\"account\": ID, \"closed\": BOOL}: %v", err), http.StatusBadRequest)
			return
		}
		if err := s.CloseAccount(body.Account, body.Closed); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, body)
	case "POST /_sim/buckets":
		var body struct {
			Account    string      `json:"account"`
			Name       string      `json:"name"`
			Region     string      `json:"region"`
			ObjectLock *ObjectLock `json:"objectLock"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Name == "" || body.Region == "" {
			http.Error(w, fmt.Sprintf("want {\"account\", \"name\", \"region\", \"objectLock\": {\"Mode\", \"Days\"}}: %v", err), http.StatusBadRequest)
			return
		}
		if err := s.CreateBucket(body.Account, body.Name, body.Region, body.ObjectLock); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, body)
	default:
		http.Error(w, "unknown admin endpoint "+route, http.StatusNotFound)
	}
}

// checkAdminAccount answers 400 and returns false when account is not one the simulator serves:
// a configured account, or the default account when none are configured.
func (s *Simulator) checkAdminAccount(w http.ResponseWriter, account string) bool {
	if !s.ids.known(account) {
		http.Error(w, "unknown account "+account, http.StatusBadRequest)
		return false
	}
	return true
}

func adminRegion(r *http.Request) string {
	if region := r.URL.Query().Get("region"); region != "" {
		return region
	}
	return "us-east-1"
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
