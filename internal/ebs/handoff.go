package ebs

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// handoffLifetime is how long what Execute learnt about a PV's backup waits for the
// CreateSnapshot of that PV. Core calls CreateSnapshot right after the item actions of the same
// PV, so an hour is generous; it only bounds memory.
const handoffLifetime = time.Hour

// Handoff carries the UID of a backup from the BackupItemAction's Execute of a PV to the
// VolumeSnapshotter's CreateSnapshot of the same PV. Velero calls both through one plugin
// manager, so one plugin process serves both; the UID then goes on the snapshot as a tag. When
// the process was restarted in between, the snapshot goes without it and is identified by its
// time window instead. It is safe for concurrent use.
type Handoff struct {
	clock   clock.Clock
	mu      sync.Mutex
	entries map[handoffKey]handoffEntry
}

type handoffKey struct{ backup, pv, volumeID string }

type handoffEntry struct {
	uid   string
	until time.Time
}

// NewHandoff returns an empty Handoff on clk.
func NewHandoff(clk clock.Clock) *Handoff {
	return &Handoff{clock: clk, entries: map[handoffKey]handoffEntry{}}
}

// Put records that the named backup, of UID uid, is about to snapshot volumeID for pv.
func (h *Handoff) Put(backup, pv, volumeID, uid string) {
	if h == nil || uid == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	for k, e := range h.entries {
		if now.After(e.until) {
			delete(h.entries, k)
		}
	}
	h.entries[handoffKey{backup, pv, volumeID}] = handoffEntry{uid: uid, until: now.Add(handoffLifetime)}
}

// UID returns the UID recorded for the backup's snapshot of volumeID for pv, or "".
func (h *Handoff) UID(backup, pv, volumeID string) string {
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries[handoffKey{backup, pv, volumeID}]
	if !ok || h.clock.Now().After(e.until) {
		return ""
	}
	return e.uid
}
