package ec2sim

import (
	"strconv"
	"time"
)

// DefaultInitializationRate models EBS's lazy loading of a volume from a snapshot without a
// provisioned rate, in MiB/s: blocks come from S3 as they are first read, far below what a
// provisioned rate gives.
const DefaultInitializationRate = 50

// Initialization types as DescribeVolumeStatus reports them.
const (
	initializationDefault     = "default"
	initializationProvisioned = "provisioned-rate"
)

// initialization is a volume's initialization from its snapshot: it starts when the volume is
// available and reads every block at the provisioned rate, else at the default rate, in EBS's
// time (size × 1024 ÷ rate seconds) divided by timeScale (Config.InitializationTimeScale).
func (v *volume) initialization(timeScale float64) (start, done time.Time) {
	rate := v.initRate
	if rate == 0 {
		rate = DefaultInitializationRate
	}
	ebsTime := time.Duration(v.sizeGiB) * 1024 * time.Second / time.Duration(rate)
	return v.ready, v.ready.Add(time.Duration(float64(ebsTime) / timeScale))
}

// writeInitialization writes a volume's initializationStatusDetails: its type, its progress
// in percent and, for a provisioned rate, the estimated seconds left (on the simulator's
// clock, so divided by timeScale like the initialization itself).
func writeInitialization(w *xmlWriter, v *volume, now time.Time, timeScale float64) {
	start, done := v.initialization(timeScale)
	pct := int64(100)
	if now.Before(done) {
		pct = max(int64(now.Sub(start)*100/done.Sub(start)), 0)
	}
	w.open("initializationStatusDetails")
	if v.initRate > 0 {
		w.elem("initializationType", initializationProvisioned)
	} else {
		w.elem("initializationType", initializationDefault)
	}
	w.elem("progress", strconv.FormatInt(pct, 10))
	if v.initRate > 0 {
		from := now
		if from.Before(start) {
			from = start
		}
		left := max(done.Sub(from), 0)
		w.elem("estimatedTimeToCompleteInSeconds", strconv.FormatInt(int64(left.Seconds()), 10))
	}
	w.close("initializationStatusDetails")
}

// describeVolumeStatus answers DescribeVolumeStatus for the volumes named (else every volume),
// with the initialization of each volume made from a snapshot. Filters are not modelled.
func (s *Simulator) describeVolumeStatus(r *region, q *request) ([]byte, *apiError) {
	size, start, err := page(q, 1000, "VolumeId")
	if err != nil {
		return nil, err
	}
	if filters := q.filters(); len(filters) > 0 {
		return nil, invalidFilter(filters[0].name)
	}
	candidates, err := r.requestedVolumes(q)
	if err != nil {
		return nil, err
	}
	w := newResponse(q.action, q.requestID)
	w.open("volumeStatusSet")
	n := 0
	for _, v := range candidates {
		if v.seq < start || q.now.Before(v.visibleAt) {
			continue
		}
		if size > 0 && n == size {
			w.close("volumeStatusSet")
			w.elem("nextToken", nextToken(v.seq))
			return w.finish(q.action), nil
		}
		n++
		w.open("item")
		w.elem("volumeId", v.id)
		w.elem("availabilityZone", v.az)
		w.open("volumeStatus")
		w.elem("status", "ok")
		w.WriteString("<details><item><name>io-enabled</name><status>passed</status></item></details>")
		w.close("volumeStatus")
		w.WriteString("<eventsSet/><actionsSet/>")
		if v.snapshotID != "" {
			writeInitialization(w, v, q.now, s.cfg.InitializationTimeScale)
		}
		w.close("item")
	}
	w.close("volumeStatusSet")
	return w.finish(q.action), nil
}
