package ec2sim

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// volumeTypes are the EBS volume types CreateVolume accepts.
var volumeTypes = []string{"gp2", "gp3", "io1", "io2", "st1", "sc1", "standard"}

// volumePerformance fills in EC2's default IOPS and throughput for a volume type and size.
func volumePerformance(typ string, size, iops, throughput int32) (int32, int32) {
	switch typ {
	case "gp2":
		return min(max(3*size, 100), 16000), 0
	case "gp3":
		if iops == 0 {
			iops = 3000
		}
		if throughput == 0 {
			throughput = 125
		}
		return iops, throughput
	case "io1", "io2":
		return iops, 0
	}
	return 0, 0
}

func writeVolumeFields(w *xmlWriter, v *volume, now time.Time) {
	w.elem("volumeId", v.id)
	w.int("size", v.sizeGiB)
	w.elem("snapshotId", v.snapshotID)
	w.elem("availabilityZone", v.az)
	w.elem("status", v.state(now))
	w.time("createTime", v.created)
	w.WriteString("<attachmentSet/>")
	w.tagSet(v.tags)
	w.elem("volumeType", v.typ)
	if v.iops > 0 {
		w.int("iops", v.iops)
	}
	if v.throughput > 0 {
		w.int("throughput", v.throughput)
	}
	w.bool("encrypted", v.encrypted)
	w.elemNonEmpty("kmsKeyId", v.kmsKeyID)
	w.elemNonEmpty("outpostArn", v.outpostArn)
	w.bool("multiAttachEnabled", false)
}

func (s *Simulator) describeVolumes(r *region, q *request) ([]byte, *apiError) {
	size, start, err := page(q, 500, "VolumeId")
	if err != nil {
		return nil, err
	}
	filters := q.filters()
	for _, f := range filters { // reject unknown filters even when nothing would be compared
		if _, err := volumeMatches(&volume{}, f, q.now); err != nil {
			return nil, err
		}
	}
	candidates, err := r.requestedVolumes(q)
	if err != nil {
		return nil, err
	}
	w := newResponse(q.action, q.requestID)
	w.open("volumeSet")
	n := 0
	for _, v := range candidates {
		if v.seq < start || q.now.Before(v.visibleAt) {
			continue
		}
		if !volumeMatchesAll(v, filters, q.now) {
			continue
		}
		if size > 0 && n == size {
			w.close("volumeSet")
			w.elem("nextToken", nextToken(v.seq))
			return w.finish(q.action), nil
		}
		n++
		w.open("item")
		writeVolumeFields(w, v, q.now)
		w.close("item")
	}
	w.close("volumeSet")
	return w.finish(q.action), nil
}

func (s *Simulator) createVolume(r *region, q *request) ([]byte, *apiError) {
	az, err := q.require("AvailabilityZone")
	if err != nil {
		return nil, err
	}
	if !slices.Contains(r.azs, az) {
		return nil, clientError("InvalidParameterValue", "Invalid availability zone: [%s]", az)
	}
	var snap *snapshot
	if id := q.get("SnapshotId"); id != "" {
		if snap, err = r.lookupSnapshot(id); err != nil {
			return nil, err
		}
		if st := snap.state(q.now); st != stateCompleted {
			return nil, clientError("IncorrectState", "Snapshot is in invalid state - %s", st)
		}
	}
	size, hasSize, err := q.int32("Size")
	if err != nil {
		return nil, err
	}
	switch {
	case !hasSize && snap == nil:
		return nil, clientError("MissingParameter", "The request must contain the parameter size/snapshot")
	case !hasSize:
		size = snap.sizeGiB
	case snap != nil && size < snap.sizeGiB:
		return nil, clientError("InvalidParameterValue",
			"Volume of %dGiB is smaller than snapshot '%s', expect size >= %dGiB", size, snap.id, snap.sizeGiB)
	case size < 1 || size > 65536:
		return nil, clientError("InvalidParameterValue", "Value (%d) for parameter size is invalid.", size)
	}
	typ := q.get("VolumeType")
	if typ == "" {
		typ = "gp2"
	}
	if !slices.Contains(volumeTypes, typ) {
		return nil, clientError("InvalidParameterValue", "Value (%s) for parameter volumeType is invalid.", typ)
	}
	iops, hasIops, err := q.int32("Iops")
	if err != nil {
		return nil, err
	}
	throughput, hasThroughput, err := q.int32("Throughput")
	if err != nil {
		return nil, err
	}
	switch {
	case hasIops && typ != "gp3" && typ != "io1" && typ != "io2":
		return nil, clientError("InvalidParameterCombination", "The parameter iops is not supported for %s volumes.", typ)
	case !hasIops && (typ == "io1" || typ == "io2"):
		return nil, clientError("MissingParameter", "The request must contain the parameter iops")
	case hasThroughput && typ != "gp3":
		return nil, clientError("InvalidParameterCombination", "The parameter throughput is not supported for %s volumes.", typ)
	}
	initRate, err := initializationRate(q, snap)
	if err != nil {
		return nil, err
	}
	tags, err := q.tagSpecs("volume")
	if err != nil {
		return nil, err
	}
	token, request := q.get("ClientToken"), volumeRequest(q.params)
	if v, err := r.volumeOfToken(token, request); v != nil || err != nil {
		if err != nil {
			return nil, err
		}
		w := newResponse(q.action, q.requestID)
		writeVolumeFields(w, v, q.now)
		return w.finish(q.action), nil
	}
	encrypted := q.bool("Encrypted") || (snap != nil && snap.encrypted)
	kms := q.get("KmsKeyId")
	if encrypted && kms == "" {
		kms = defaultKmsKey(r.account, r.name)
		if snap != nil && snap.kmsKeyID != "" {
			kms = snap.kmsKeyID
		}
	}
	id, seq := s.newID("vol")
	v := &volume{
		id: id, seq: seq, az: az, typ: typ, sizeGiB: size, encrypted: encrypted, kmsKeyID: kms, tags: tags,
		created: q.now, ready: q.now.Add(s.draw(s.cfg.VolumeCreateDuration)),
		visibleAt:   q.now.Add(s.draw(s.faults.InvisibleFor)),
		clientToken: token, request: request, initRate: initRate,
	}
	if snap != nil {
		v.snapshotID = snap.id
	}
	v.iops, v.throughput = volumePerformance(typ, size, iops, throughput)
	r.addVolume(v)
	w := newResponse(q.action, q.requestID)
	writeVolumeFields(w, v, q.now)
	return w.finish(q.action), nil
}

// EC2's range of CreateVolume's VolumeInitializationRate, in MiB/s.
const (
	minInitializationRate = 100
	maxInitializationRate = 300
)

// initializationRate checks CreateVolume's VolumeInitializationRate as EC2 does: only for a
// volume from a snapshot, and within EC2's range.
func initializationRate(q *request, snap *snapshot) (int32, *apiError) {
	rate, has, err := q.int32("VolumeInitializationRate")
	switch {
	case err != nil || !has:
		return 0, err
	case snap == nil:
		return 0, clientError("InvalidParameterCombination", "The parameter volumeInitializationRate is only supported for volumes created from a snapshot.")
	case rate < minInitializationRate || rate > maxInitializationRate:
		return 0, clientError("InvalidParameterValue", "Value (%d) for parameter volumeInitializationRate is invalid. Valid range: %d - %d MiB/s.",
			rate, minInitializationRate, maxInitializationRate)
	}
	return rate, nil
}

// volumeRequest is what makes two CreateVolume requests the same request: every parameter but
// the client token and the request's envelope.
func volumeRequest(params url.Values) string {
	p := url.Values{}
	for k, vs := range params {
		if k != "Action" && k != "Version" && k != "ClientToken" && !strings.HasPrefix(k, "X-Amz-") {
			p[k] = vs
		}
	}
	return p.Encode()
}

// volumeOfToken is EC2's idempotency of CreateVolume: a request with the client token of an
// earlier one gets the earlier one's volume when its parameters are the same, and is refused
// when they differ. It returns nil for a request without a token or with a new one.
func (r *region) volumeOfToken(token, request string) (*volume, *apiError) {
	if token == "" {
		return nil, nil
	}
	for _, v := range r.volOrder {
		if v.clientToken != token {
			continue
		}
		if v.request != request {
			return nil, clientError("IdempotentParameterMismatch",
				"The client token %s is already used by a request with different parameters.", token)
		}
		return v, nil
	}
	return nil, nil
}

func (s *Simulator) deleteVolume(r *region, q *request) ([]byte, *apiError) {
	id, err := q.require("VolumeId")
	if err != nil {
		return nil, err
	}
	v, err := r.lookupVolume(id)
	if err != nil {
		return nil, err
	}
	r.removeVolume(v)
	return returnTrue(q), nil
}

func (s *Simulator) describeAvailabilityZones(r *region, q *request) ([]byte, *apiError) {
	names := q.list("ZoneName")
	filters := q.filters()
	w := newResponse(q.action, q.requestID)
	w.open("availabilityZoneInfo")
	for i, az := range r.azs {
		if len(names) > 0 && !slices.Contains(names, az) {
			continue
		}
		ok := true
		for _, f := range filters {
			var field string
			switch f.name {
			case "zone-name":
				field = az
			case "region-name":
				field = r.name
			case "state":
				field = stateAvailable
			case "zone-type":
				field = "availability-zone"
			default:
				return nil, invalidFilter(f.name)
			}
			ok = ok && anyMatch(f.values, field)
		}
		if !ok {
			continue
		}
		w.open("item")
		w.elem("zoneName", az)
		w.elem("zoneState", stateAvailable)
		w.elem("regionName", r.name)
		w.elem("zoneId", r.name+"-az"+strconv.Itoa(i+1))
		w.elem("zoneType", "availability-zone")
		w.elem("optInStatus", "opt-in-not-required")
		w.elem("groupName", r.name)
		w.elem("networkBorderGroup", r.name)
		w.WriteString("<messageSet/>")
		w.close("item")
	}
	w.close("availabilityZoneInfo")
	return w.finish(q.action), nil
}

// requestedVolumes are the volumes a Describe request names by VolumeId, each once, in order;
// every volume of the region when it names none. A volume EC2 does not list yet is not found.
func (r *region) requestedVolumes(q *request) ([]*volume, *apiError) {
	ids := q.list("VolumeId")
	if len(ids) == 0 {
		return r.volOrder, nil
	}
	var out []*volume
	for _, id := range ids {
		v, err := r.lookupVolume(id)
		if err == nil && q.now.Before(v.visibleAt) {
			err = clientError("InvalidVolume.NotFound", "The volume '%s' does not exist.", id)
		}
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}
