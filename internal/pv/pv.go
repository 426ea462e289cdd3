// Package pv reads and rewrites EBS-backed PersistentVolumes held as unstructured objects:
// in-tree awsElasticBlockStore volumes and volumes of the EBS CSI driver.
//
// Nothing in this package panics on malformed input: values of the wrong type are treated
// as absent when reading, and reported as errors when they must be written.
package pv

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// CSIDriver is the name of the EBS CSI driver.
const CSIDriver = "ebs.csi.aws.com"

// Label and node-affinity keys that carry a volume's zone and region.
const (
	labelZone             = "topology.kubernetes.io/zone"
	labelRegion           = "topology.kubernetes.io/region"
	labelZoneDeprecated   = "failure-domain.beta.kubernetes.io/zone"
	labelRegionDeprecated = "failure-domain.beta.kubernetes.io/region"
	csiZoneKey            = "topology.ebs.csi.aws.com/zone"

	inTreePrefix = "aws://"
)

// isZoneKey reports whether a node-affinity key selects an availability zone.
func isZoneKey(k string) bool {
	return k == csiZoneKey || k == labelZone || k == labelZoneDeprecated
}

// isRegionKey reports whether a node-affinity key selects a region.
func isRegionKey(k string) bool {
	return k == labelRegion || k == labelRegionDeprecated
}

// Volume is what the plugin needs to know about an EBS-backed PersistentVolume.
type Volume struct {
	Name             string // PV name
	VolumeID         string // vol-…
	AvailabilityZone string // from the in-tree volumeID aws://AZ/vol-…, else the zone labels, else node affinity; may be ""
	Region           string // from the region labels, else derived from AvailabilityZone; may be ""
	CSI              bool   // spec.csi with driver ebs.csi.aws.com (false for in-tree awsElasticBlockStore)
}

// parsed is a Volume plus what SetVolume needs to rewrite it.
type parsed struct {
	Volume
	// idPrefix is what precedes the volume ID in an in-tree volumeID: "", "aws:///" or "aws://AZ/".
	idPrefix string
}

var (
	regionPattern = `[a-z]{2,4}(?:-[a-z]+){1,2}-[1-9][0-9]?`
	regionRE      = regexp.MustCompile(`^` + regionPattern + `$`)
	// zoneRE matches a regular AZ (us-east-1a), a Local Zone (us-west-2-lax-1a) and a
	// Wavelength Zone (us-east-1-wl1-bos-wlz-1); the first group is the region.
	zoneRE = regexp.MustCompile(`^(` + regionPattern + `)(?:[a-z]|-[a-z]+-[0-9]{1,2}[a-z]|-wl[0-9]{1,2}-[a-z]+-wlz-[0-9]{1,2})$`)
	// zoneTokenRE is the loose shape accepted for the AZ part of an in-tree aws://AZ/vol-… ID.
	zoneTokenRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)
	volumeIDRE  = regexp.MustCompile(`^vol-(?:[0-9a-f]{8}|[0-9a-f]{17})$`)
)

// RegionOfZone derives the region of an AZ name: us-east-1a → us-east-1, us-west-2-lax-1a → us-west-2 (Local Zones),
// us-east-1-wl1-bos-wlz-1 → us-east-1 (Wavelength), us-gov-west-1a → us-gov-west-1, cn-north-1a → cn-north-1, ap-southeast-1b → ap-southeast-1;
// "" and anything unrecognisable → "", false.
func RegionOfZone(az string) (string, bool) {
	if len(az) > 64 {
		return "", false
	}
	m := zoneRE.FindStringSubmatch(az)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ValidRegion reports whether s has the shape of an AWS region name (us-east-1, eu-central-2, us-gov-west-1, cn-northwest-1, us-isob-east-1).
func ValidRegion(s string) bool {
	return len(s) <= 64 && regionRE.MatchString(s)
}

// ValidVolumeID reports whether s is vol- followed by 8 or 17 lowercase hex digits.
func ValidVolumeID(s string) bool {
	return volumeIDRE.MatchString(s)
}

// Parse reads an unstructured PV. ok=false (nil error) for a PV that is not EBS (other CSI drivers, NFS, hostPath, no source at all).
// A PV that claims EBS but whose volume ID is missing or malformed is an error naming the PV and the bad value.
//
// Values of the wrong type in labels or node affinity are ignored; a zone or region found
// there is used only if it is a single value (region labels must pass ValidRegion).
func Parse(pv runtime.Unstructured) (v Volume, ok bool, err error) {
	obj, err := content(pv)
	if err != nil {
		return Volume{}, false, err
	}
	p, ok, err := parse(obj)
	return p.Volume, ok, err
}

func parse(obj map[string]any) (parsed, bool, error) {
	var p parsed
	p.Name, _ = lookup(obj, "metadata", "name").(string)

	ebs, hasEBS := obj["spec"].(map[string]any)
	var inTree, csi any
	if hasEBS {
		inTree = ebs["awsElasticBlockStore"]
		csi = ebs["csi"]
	}
	csiMap, _ := csi.(map[string]any)
	isCSI := csiMap != nil && csiMap["driver"] == CSIDriver
	isInTree := inTree != nil

	switch {
	case isInTree && isCSI:
		return parsed{}, false, fmt.Errorf("persistent volume %q has both an awsElasticBlockStore and an %s CSI source", p.Name, CSIDriver)
	case isInTree:
		src, isMap := inTree.(map[string]any)
		if !isMap {
			return parsed{}, false, fmt.Errorf("persistent volume %q: spec.awsElasticBlockStore is a %T, not an object", p.Name, inTree)
		}
		raw, present := src["volumeID"]
		s, isString := raw.(string)
		switch {
		case !present || raw == nil || s == "" && isString:
			return parsed{}, false, fmt.Errorf("persistent volume %q: spec.awsElasticBlockStore.volumeID is missing", p.Name)
		case !isString:
			return parsed{}, false, fmt.Errorf("persistent volume %q: spec.awsElasticBlockStore.volumeID %v is a %T, not a string", p.Name, raw, raw)
		}
		prefix, az, id, good := splitInTreeID(s)
		if !good {
			return parsed{}, false, fmt.Errorf("persistent volume %q: spec.awsElasticBlockStore.volumeID %q is not an EBS volume ID (vol-… or aws://AZ/vol-…)", p.Name, s)
		}
		p.VolumeID, p.AvailabilityZone, p.idPrefix = id, az, prefix
	case isCSI:
		raw, present := csiMap["volumeHandle"]
		s, isString := raw.(string)
		switch {
		case !present || raw == nil || s == "" && isString:
			return parsed{}, false, fmt.Errorf("persistent volume %q: spec.csi.volumeHandle is missing", p.Name)
		case !isString:
			return parsed{}, false, fmt.Errorf("persistent volume %q: spec.csi.volumeHandle %v is a %T, not a string", p.Name, raw, raw)
		case !ValidVolumeID(s):
			return parsed{}, false, fmt.Errorf("persistent volume %q: spec.csi.volumeHandle %q is not an EBS volume ID (vol-…)", p.Name, s)
		}
		p.VolumeID, p.CSI = s, true
	default:
		return parsed{}, false, nil
	}

	labels := stringMap(lookup(obj, "metadata", "labels"))
	if p.AvailabilityZone == "" {
		p.AvailabilityZone = firstSingle(labels[labelZone], labels[labelZoneDeprecated])
	}
	if p.AvailabilityZone == "" {
		p.AvailabilityZone = affinityZone(obj)
	}
	for _, r := range []string{labels[labelRegion], labels[labelRegionDeprecated]} {
		if ValidRegion(r) {
			p.Region = r
			break
		}
	}
	if p.Region == "" {
		p.Region, _ = RegionOfZone(p.AvailabilityZone)
	}
	return p, true, nil
}

// SetVolume returns a copy of pv pointing at volumeID in availabilityZone: in-tree volumeID becomes
// aws://AZ/vol-… (keep the bare vol-… form if the original had no AZ prefix and AZ is unchanged), CSI volumeHandle becomes vol-….
// When AZ (or region) differs from the PV's, rewrite the zone and region labels (topology.kubernetes.io/zone, topology.kubernetes.io/region,
// and failure-domain.beta.kubernetes.io/zone|region where present — never add deprecated labels that were absent) and every
// node-affinity match expression on a zone key (topology.ebs.csi.aws.com/zone, topology.kubernetes.io/zone, failure-domain.beta.kubernetes.io/zone)
// or region key (topology.kubernetes.io/region, failure-domain.beta.kubernetes.io/region) so its values become the new AZ/region.
// Nothing else on the PV changes. Errors for non-EBS PVs.
//
// An empty availabilityZone keeps the PV's zone (only the ID changes). A new availabilityZone
// must be one RegionOfZone recognises. Only match expressions with operator In are rewritten
// (NotIn, Exists and the like are left alone). pv itself is never modified; the copy is an
// *unstructured.Unstructured.
func SetVolume(pv runtime.Unstructured, volumeID, availabilityZone string) (runtime.Unstructured, error) {
	orig, err := content(pv)
	if err != nil {
		return nil, err
	}
	p, ok, err := parse(orig)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("persistent volume %q is not an EBS volume", p.Name)
	}
	if !ValidVolumeID(volumeID) {
		return nil, fmt.Errorf("persistent volume %q: new volume ID %q is not an EBS volume ID (vol-…)", p.Name, volumeID)
	}

	azChanged := availabilityZone != "" && availabilityZone != p.AvailabilityZone
	region := p.Region
	if availabilityZone != "" {
		r, recognised := RegionOfZone(availabilityZone)
		switch {
		case recognised:
			region = r
		case azChanged:
			return nil, fmt.Errorf("persistent volume %q: availability zone %q is not an AWS availability zone name", p.Name, availabilityZone)
		}
	}
	relocate := azChanged || region != p.Region

	obj, _ := deepCopy(orig).(map[string]any)
	spec, _ := lookup(obj, "spec").(map[string]any)
	if spec == nil { // cannot happen: parse found an EBS source in spec
		return nil, fmt.Errorf("persistent volume %q has no spec", p.Name)
	}
	if p.CSI {
		src, _ := spec["csi"].(map[string]any)
		if src == nil {
			return nil, fmt.Errorf("persistent volume %q has no spec.csi", p.Name)
		}
		src["volumeHandle"] = volumeID
	} else {
		id := p.idPrefix + volumeID
		if azChanged {
			id = inTreePrefix + availabilityZone + "/" + volumeID
		}
		src, _ := spec["awsElasticBlockStore"].(map[string]any)
		if src == nil {
			return nil, fmt.Errorf("persistent volume %q has no spec.awsElasticBlockStore", p.Name)
		}
		src["volumeID"] = id
	}
	if relocate {
		if azChanged {
			if err := setLabels(obj, labelZone, labelZoneDeprecated, availabilityZone); err != nil {
				return nil, fmt.Errorf("persistent volume %q: %w", p.Name, err)
			}
		}
		if region != "" {
			if err := setLabels(obj, labelRegion, labelRegionDeprecated, region); err != nil {
				return nil, fmt.Errorf("persistent volume %q: %w", p.Name, err)
			}
		}
		zone := ""
		if azChanged {
			zone = availabilityZone
		}
		rewriteAffinity(obj, zone, region)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// content returns pv's map, refusing nil PVs and nil pointers behind the interface.
func content(pv runtime.Unstructured) (map[string]any, error) {
	if pv == nil {
		return nil, errors.New("persistent volume is nil")
	}
	if rv := reflect.ValueOf(pv); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, errors.New("persistent volume is nil")
	}
	obj := pv.UnstructuredContent()
	if obj == nil {
		return map[string]any{}, nil
	}
	return obj, nil
}

// splitInTreeID splits vol-…, aws:///vol-… or aws://AZ/vol-… into its prefix, AZ and volume ID.
func splitInTreeID(s string) (prefix, az, id string, ok bool) {
	id = s
	if rest, found := strings.CutPrefix(s, inTreePrefix); found {
		var slash bool
		az, id, slash = strings.Cut(rest, "/")
		if !slash || az != "" && !zoneTokenRE.MatchString(az) {
			return "", "", "", false
		}
		prefix = inTreePrefix + az + "/"
	}
	if !ValidVolumeID(id) {
		return "", "", "", false
	}
	return prefix, az, id, true
}

// lookup walks nested maps; it returns nil where a key is missing or a value is not a map.
func lookup(obj map[string]any, keys ...string) any {
	var cur any = obj
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// stringMap reads a string map held as map[string]any or map[string]string,
// skipping values that are not strings.
func stringMap(v any) map[string]string {
	switch m := v.(type) {
	case map[string]string:
		return m
	case map[string]any:
		out := make(map[string]string, len(m))
		for k, val := range m {
			if s, ok := val.(string); ok {
				out[k] = s
			}
		}
		return out
	}
	return nil
}

// stringList reads a list of strings held as []any or []string; ok=false if any item is not a string.
func stringList(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		return l, true
	case []any:
		out := make([]string, 0, len(l))
		for _, item := range l {
			s, ok := item.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// firstSingle returns the first value that names a single zone (not empty, not a
// multi-zone "a__b" label value).
func firstSingle(values ...string) string {
	for _, v := range values {
		if v != "" && !strings.Contains(v, "__") {
			return v
		}
	}
	return ""
}

// matchExpressions calls f on every match expression of the PV's required node affinity.
func matchExpressions(obj map[string]any, f func(expr map[string]any)) {
	terms, _ := lookup(obj, "spec", "nodeAffinity", "required", "nodeSelectorTerms").([]any)
	for _, t := range terms {
		term, _ := t.(map[string]any)
		exprs, _ := term["matchExpressions"].([]any)
		for _, e := range exprs {
			if expr, ok := e.(map[string]any); ok {
				f(expr)
			}
		}
	}
}

// affinityZone returns the value of the first In expression on a zone key that has exactly one value.
func affinityZone(obj map[string]any) string {
	zone := ""
	matchExpressions(obj, func(expr map[string]any) {
		if zone != "" || expr["operator"] != "In" {
			return
		}
		key, _ := expr["key"].(string)
		if !isZoneKey(key) {
			return
		}
		if values, ok := stringList(expr["values"]); ok && len(values) == 1 {
			zone = firstSingle(values[0])
		}
	})
	return zone
}

// setLabels sets label key to value, and deprecatedKey too if it is present.
func setLabels(obj map[string]any, key, deprecatedKey, value string) error {
	meta, present := obj["metadata"]
	if !present || meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	metaMap, ok := meta.(map[string]any)
	if !ok {
		return fmt.Errorf("metadata is a %T, not an object", meta)
	}
	switch labels := metaMap["labels"].(type) {
	case nil:
		metaMap["labels"] = map[string]any{key: value}
	case map[string]any:
		labels[key] = value
		if _, has := labels[deprecatedKey]; has {
			labels[deprecatedKey] = value
		}
	case map[string]string:
		labels[key] = value
		if _, has := labels[deprecatedKey]; has {
			labels[deprecatedKey] = value
		}
	default:
		return fmt.Errorf("metadata.labels is a %T, not an object", labels)
	}
	return nil
}

// rewriteAffinity points every In expression on a zone key at zone and on a region key at
// region; an empty zone or region leaves those expressions alone.
func rewriteAffinity(obj map[string]any, zone, region string) {
	matchExpressions(obj, func(expr map[string]any) {
		if expr["operator"] != "In" {
			return
		}
		key, _ := expr["key"].(string)
		want := ""
		switch {
		case isZoneKey(key):
			want = zone
		case isRegionKey(key):
			want = region
		}
		if want == "" {
			return
		}
		if values, ok := stringList(expr["values"]); ok && len(values) == 1 && values[0] == want {
			return
		}
		expr["values"] = []any{want}
	})
}

// deepCopy copies the maps and slices of an unstructured value; other values are shared.
// Unlike runtime.DeepCopyJSONValue it accepts any value without panicking.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return map[string]any{}
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = deepCopy(val)
		}
		return out
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = deepCopy(val)
		}
		return out
	case map[string]string:
		if x == nil {
			return x
		}
		out := make(map[string]string, len(x))
		for k, val := range x {
			out[k] = val
		}
		return out
	case []string:
		if x == nil {
			return x
		}
		return append([]string(nil), x...)
	}
	return v
}
