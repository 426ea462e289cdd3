// Package pv reads and rewrites EBS-backed PersistentVolumes held as unstructured objects:
// in-tree awsElasticBlockStore volumes and volumes of the EBS CSI drivers (the Amazon EBS CSI
// driver's and EKS Auto Mode's).
//
// Nothing in this package panics on malformed input: values of the wrong type are treated
// as absent when reading, and reported as errors when they must be written.
package pv

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
)

// Names of the CSI drivers that provision EBS volumes.
const (
	// EBSCSIDriver is the Amazon EBS CSI driver (the EKS add-on or its Helm chart).
	EBSCSIDriver = "ebs.csi.aws.com"
	// EKSAutoModeDriver is the EBS CSI driver built into EKS Auto Mode.
	EKSAutoModeDriver = "ebs.csi.eks.amazonaws.com"
)

// csiDriver is a CSI driver whose volumes are EBS volumes, with the node-affinity key of its
// own zone topology (its nodes carry that label too).
type csiDriver struct{ name, zoneKey string }

// ebsDrivers are the CSI drivers whose volumes are EBS volumes.
var ebsDrivers = []csiDriver{
	{name: EBSCSIDriver, zoneKey: "topology.ebs.csi.aws.com/zone"},
	{name: EKSAutoModeDriver, zoneKey: "topology.ebs.csi.eks.amazonaws.com/zone"},
}

// Label and node-affinity keys that carry a volume's zone and region.
const (
	labelZone             = "topology.kubernetes.io/zone"
	labelRegion           = "topology.kubernetes.io/region"
	labelZoneDeprecated   = "failure-domain.beta.kubernetes.io/zone"
	labelRegionDeprecated = "failure-domain.beta.kubernetes.io/region"

	inTreePrefix = "aws://"
)

// isEBSDriver reports whether a CSI driver's volumes are EBS volumes.
func isEBSDriver(name string) bool {
	return slices.ContainsFunc(ebsDrivers, func(d csiDriver) bool { return d.name == name })
}

// isZoneKey reports whether a node-affinity key selects an availability zone.
func isZoneKey(k string) bool {
	return k == labelZone || k == labelZoneDeprecated ||
		slices.ContainsFunc(ebsDrivers, func(d csiDriver) bool { return d.zoneKey == k })
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
	// Driver is the PV's CSI driver, EBSCSIDriver or EKSAutoModeDriver; "" for an in-tree
	// awsElasticBlockStore volume. SetVolume keeps it.
	Driver string
}

// CSI reports whether the volume is a CSI volume rather than an in-tree awsElasticBlockStore one.
func (v Volume) CSI() bool { return v.Driver != "" }

// Kind is what Parse found a PersistentVolume to be.
type Kind int

const (
	// NotEBS is a PV that is not EBS-backed: NFS, hostPath, a CSI driver's volume whose handle
	// is no EBS volume ID, no source at all.
	NotEBS Kind = iota
	// EBS is an in-tree awsElasticBlockStore volume or a volume of a known EBS CSI driver.
	EBS
	// UnknownCSIDriver is a volume of a CSI driver this package does not know whose handle is
	// an EBS volume ID: perhaps an EBS volume, but not one the plugin may treat as such.
	UnknownCSIDriver
)

// parsed is a Volume plus what SetVolume needs to rewrite it.
type parsed struct {
	Volume
	// idPrefix is what precedes the volume ID in an in-tree volumeID: "", "aws:///" or "aws://AZ/".
	idPrefix string
}

// zoneTokenRE is the loose shape accepted for the AZ part of an in-tree aws://AZ/vol-… ID: the
// zone is kept even when awsid does not recognise it.
var zoneTokenRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

// Parse reads an unstructured PV. For an EBS volume the kind is EBS. A PV that claims EBS but
// whose volume ID is missing or malformed is an error naming the PV and the bad value. A CSI
// volume of a driver this package does not know is UnknownCSIDriver when its handle is an EBS
// volume ID (v then holds only Name, VolumeID and Driver), else NotEBS, as is any other PV;
// v is then empty.
//
// Values of the wrong type in labels or node affinity are ignored; a zone or region found
// there is used only if it is a single value (region labels must pass awsid.IsRegion).
func Parse(pv runtime.Unstructured) (v Volume, kind Kind, err error) {
	obj, err := content(pv)
	if err != nil {
		return Volume{}, NotEBS, err
	}
	p, kind, err := parse(obj)
	return p.Volume, kind, err
}

// parse is Parse on a PV's content, keeping what SetVolume needs to rewrite it.
func parse(obj map[string]any) (parsed, Kind, error) {
	var p parsed
	p.Name, _ = lookup(obj, "metadata", "name").(string)
	spec, _ := obj["spec"].(map[string]any)
	inTree := spec["awsElasticBlockStore"]
	csi, _ := spec["csi"].(map[string]any)
	driver, _ := csi["driver"].(string)

	var err error
	switch known := isEBSDriver(driver); {
	case inTree != nil && known:
		return parsed{}, NotEBS, fmt.Errorf("persistent volume %q has both an awsElasticBlockStore and an %s CSI source", p.Name, driver)
	case inTree != nil:
		err = p.readInTree(inTree)
	case known:
		err = p.readCSI(csi, driver)
	default:
		return unknownDriver(p.Name, driver, csi)
	}
	if err != nil {
		return parsed{}, NotEBS, err
	}
	p.readPlace(obj)
	return p, EBS, nil
}

// readInTree reads the volume ID, and the AZ it may carry, of an awsElasticBlockStore source.
func (p *parsed) readInTree(src any) error {
	m, isMap := src.(map[string]any)
	if !isMap {
		return fmt.Errorf("persistent volume %q: spec.awsElasticBlockStore is a %T, not an object", p.Name, src)
	}
	s, err := requiredString(p.Name, m, "spec.awsElasticBlockStore", "volumeID")
	if err != nil {
		return err
	}
	prefix, az, id, good := splitInTreeID(s)
	if !good {
		return fmt.Errorf("persistent volume %q: spec.awsElasticBlockStore.volumeID %q is not an EBS volume ID (vol-… or aws://AZ/vol-…)", p.Name, s)
	}
	p.VolumeID, p.AvailabilityZone, p.idPrefix = id, az, prefix
	return nil
}

// readCSI reads the volume ID of an EBS CSI driver's source.
func (p *parsed) readCSI(src map[string]any, driver string) error {
	s, err := requiredString(p.Name, src, "spec.csi", "volumeHandle")
	if err != nil {
		return err
	}
	if !awsid.IsVolumeID(s) {
		return fmt.Errorf("persistent volume %q: spec.csi.volumeHandle %q is not an EBS volume ID (vol-…)", p.Name, s)
	}
	p.VolumeID, p.Driver = s, driver
	return nil
}

// readPlace fills in the zone, when the volume ID did not name it, and the region from the
// PV's labels and node affinity.
func (p *parsed) readPlace(obj map[string]any) {
	labels := stringMap(lookup(obj, "metadata", "labels"))
	if p.AvailabilityZone == "" {
		p.AvailabilityZone = firstSingle(labels[labelZone], labels[labelZoneDeprecated])
	}
	if p.AvailabilityZone == "" {
		p.AvailabilityZone = affinityZone(obj)
	}
	for _, r := range []string{labels[labelRegion], labels[labelRegionDeprecated]} {
		if awsid.IsRegion(r) {
			p.Region = r
			return
		}
	}
	p.Region, _ = awsid.RegionOfZone(p.AvailabilityZone)
}

// unknownDriver tells a volume of a CSI driver this package does not know: UnknownCSIDriver
// when its handle is an EBS volume ID, else NotEBS.
func unknownDriver(name, driver string, src map[string]any) (parsed, Kind, error) {
	handle, _ := src["volumeHandle"].(string)
	if driver == "" || !awsid.IsVolumeID(handle) {
		return parsed{}, NotEBS, nil
	}
	return parsed{Volume: Volume{Name: name, VolumeID: handle, Driver: driver}}, UnknownCSIDriver, nil
}

// requiredString reads src[key], the field path.key of the PV, as a non-empty string.
func requiredString(name string, src map[string]any, path, key string) (string, error) {
	raw, present := src[key]
	s, isString := raw.(string)
	switch {
	case !present || raw == nil || s == "" && isString:
		return "", fmt.Errorf("persistent volume %q: %s.%s is missing", name, path, key)
	case !isString:
		return "", fmt.Errorf("persistent volume %q: %s.%s %v is a %T, not a string", name, path, key, raw, raw)
	}
	return s, nil
}

// SetVolume returns a copy of pv pointing at volumeID in availabilityZone: in-tree volumeID becomes
// aws://AZ/vol-… (keep the bare vol-… form if the original had no AZ prefix and AZ is unchanged), CSI volumeHandle becomes vol-…
// (the CSI driver stays the PV's). When AZ (or region) differs from the PV's, rewrite the zone and region labels
// (topology.kubernetes.io/zone, topology.kubernetes.io/region, and failure-domain.beta.kubernetes.io/zone|region where
// present — never add deprecated labels that were absent) and every node-affinity match expression on a zone key (each
// EBS CSI driver's topology key, such as topology.ebs.csi.aws.com/zone or topology.ebs.csi.eks.amazonaws.com/zone,
// topology.kubernetes.io/zone, failure-domain.beta.kubernetes.io/zone) or region key (topology.kubernetes.io/region,
// failure-domain.beta.kubernetes.io/region) so its values become the new AZ/region. Nothing else on the PV changes
// (EKS Auto Mode's eks.amazonaws.com/compute-type expression among them). Errors for non-EBS PVs.
//
// An empty availabilityZone keeps the PV's zone (only the ID changes). A new availabilityZone
// must be one awsid.RegionOfZone recognises. Only match expressions with operator In are rewritten
// (NotIn, Exists and the like are left alone). pv itself is never modified; the copy is an
// *unstructured.Unstructured.
func SetVolume(pv runtime.Unstructured, volumeID, availabilityZone string) (runtime.Unstructured, error) {
	orig, err := content(pv)
	if err != nil {
		return nil, err
	}
	p, err := parseEBS(orig)
	if err != nil {
		return nil, err
	}
	if !awsid.IsVolumeID(volumeID) {
		return nil, fmt.Errorf("persistent volume %q: new volume ID %q is not an EBS volume ID (vol-…)", p.Name, volumeID)
	}
	azChanged := availabilityZone != "" && availabilityZone != p.AvailabilityZone
	region := p.Region
	if availabilityZone != "" {
		r, recognised := awsid.RegionOfZone(availabilityZone)
		switch {
		case recognised:
			region = r
		case azChanged:
			return nil, fmt.Errorf("persistent volume %q: availability zone %q is not an AWS availability zone name", p.Name, availabilityZone)
		}
	}
	zone := ""
	if azChanged {
		zone = availabilityZone
	}

	obj, _ := deepCopy(orig).(map[string]any)
	if err := p.setSource(obj, volumeID, zone); err != nil {
		return nil, err
	}
	if zone != "" || region != p.Region {
		if err := relocate(obj, zone, region); err != nil {
			return nil, fmt.Errorf("persistent volume %q: %w", p.Name, err)
		}
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// parseEBS parses an EBS volume; any other PV is an error naming it.
func parseEBS(obj map[string]any) (parsed, error) {
	p, kind, err := parse(obj)
	if err != nil {
		return parsed{}, err
	}
	switch kind {
	case EBS:
		return p, nil
	case UnknownCSIDriver:
		return parsed{}, fmt.Errorf("persistent volume %q uses CSI driver %q, which this plugin does not know as an EBS driver", p.Name, p.Driver)
	}
	name, _ := lookup(obj, "metadata", "name").(string)
	return parsed{}, fmt.Errorf("persistent volume %q is not an EBS volume", name)
}

// setSource points the volume source of obj, a copy of the PV p was parsed from, at volumeID;
// an in-tree volume ID names zone when it is not "".
func (p *parsed) setSource(obj map[string]any, volumeID, zone string) error {
	key, field, id := "awsElasticBlockStore", "volumeID", p.idPrefix+volumeID
	switch {
	case p.CSI():
		key, field, id = "csi", "volumeHandle", volumeID
	case zone != "":
		id = inTreePrefix + zone + "/" + volumeID
	}
	src, _ := lookup(obj, "spec", key).(map[string]any)
	if src == nil { // cannot happen: parse found this source
		return fmt.Errorf("persistent volume %q has no spec.%s", p.Name, key)
	}
	src[field] = id
	return nil
}

// relocate points the zone labels and node affinity of obj at zone, and the region ones at
// region; "" leaves them alone.
func relocate(obj map[string]any, zone, region string) error {
	if zone != "" {
		if err := setLabels(obj, labelZone, labelZoneDeprecated, zone); err != nil {
			return err
		}
	}
	if region != "" {
		if err := setLabels(obj, labelRegion, labelRegionDeprecated, region); err != nil {
			return err
		}
	}
	rewriteAffinity(obj, zone, region)
	return nil
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
	if !awsid.IsVolumeID(id) {
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
