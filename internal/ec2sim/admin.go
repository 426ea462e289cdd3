package ec2sim

import (
	"encoding/json"
	"net/http"
)

// serveAdmin serves the /_sim/ endpoints: stats, snapshots, volumes (read and seed) and faults.
func (s *Simulator) serveAdmin(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " " + r.URL.Path
	switch route {
	case "GET /_sim/stats":
		writeJSON(w, s.Stats())
	case "GET /_sim/snapshots":
		writeJSON(w, s.Snapshots(adminRegion(r)))
	case "GET /_sim/volumes":
		writeJSON(w, s.Volumes(adminRegion(r)))
	case "POST /_sim/volumes":
		var body struct {
			Region  string       `json:"region"`
			Volumes []VolumeSpec `json:"volumes"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if body.Region == "" {
			body.Region = "us-east-1"
		}
		writeJSON(w, s.AddVolumes(body.Region, body.Volumes...))
	case "POST /_sim/faults":
		var f Faults
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.SetFaults(f)
		writeJSON(w, f.withDefaults())
	default:
		http.Error(w, "unknown admin endpoint "+route, http.StatusNotFound)
	}
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
