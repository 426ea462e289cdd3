package ec2sim

import (
	"net/http"
	"slices"
	"time"
)

var errInternal = &apiError{
	status: http.StatusInternalServerError, code: "InternalError",
	message: "An internal error has occurred",
}

// drop is how a request that took effect is made to fail anyway.
type drop int

const (
	noDrop         drop = iota
	drop500             // answer 500 InternalError
	dropConnection      // close the connection without an answer
)

// latency draws the delay to add to a request.
func (s *Simulator) latency() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draw(s.faults.Latency)
}

// serverError decides whether a request fails with 500 before any effect. Callers hold s.mu.
func (s *Simulator) serverError() bool { return s.chance(s.faults.ServerErrorRate) }

// dropAfterEffect decides whether a successful request's answer is lost. Callers hold s.mu.
func (s *Simulator) dropAfterEffect(action string) drop {
	if !slices.Contains(s.faults.DropActions, action) || !s.chance(s.faults.DropAfterEffectRate) {
		return noDrop
	}
	if s.rng.IntN(2) == 0 {
		return drop500
	}
	return dropConnection
}

// snapshotFailure returns the statusMessage a new snapshot of volumeID fails with, or "".
func (s *Simulator) snapshotFailure(volumeID string) string {
	if slices.Contains(s.faults.ErrorVolumes, volumeID) || s.chance(s.faults.SnapshotErrorRate) {
		return "Snapshot failed: simulated internal error for volume " + volumeID
	}
	return ""
}

// copyFailure returns the statusMessage a new copy of a snapshot of volumeID fails with, or "".
func (s *Simulator) copyFailure(volumeID string) string {
	if slices.Contains(s.faults.ErrorCopyVolumes, volumeID) || s.chance(s.faults.CopyErrorRate) {
		return "Snapshot copy failed: simulated internal error for a snapshot of volume " + volumeID
	}
	return ""
}
