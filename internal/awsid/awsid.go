// Package awsid knows the shapes of AWS identifiers: region and availability zone names, EBS
// volume and snapshot IDs, and account IDs. It checks shapes only; whether a region or a volume
// exists is for EC2 to say.
package awsid

import "regexp"

// maxNameLen bounds the region and zone names looked at; AWS's are far shorter.
const maxNameLen = 64

// regionPattern is a region name: us-east-1, eu-central-2, us-gov-west-1, cn-northwest-1, us-isob-east-1.
const regionPattern = `[a-z]{2,4}(?:-[a-z]+){1,2}-[1-9][0-9]?`

// resourceIDPattern is what follows an EC2 resource ID's prefix: 8 (older IDs) or 17 lowercase hex digits.
const resourceIDPattern = `-(?:[0-9a-f]{8}|[0-9a-f]{17})$`

var (
	regionRE = regexp.MustCompile(`^` + regionPattern + `$`)
	// zoneRE matches a regular AZ (us-east-1a), a Local Zone (us-west-2-lax-1a) and a
	// Wavelength Zone (us-east-1-wl1-bos-wlz-1); the first group is the region.
	zoneRE       = regexp.MustCompile(`^(` + regionPattern + `)(?:[a-z]|-[a-z]+-[0-9]{1,2}[a-z]|-wl[0-9]{1,2}-[a-z]+-wlz-[0-9]{1,2})$`)
	volumeIDRE   = regexp.MustCompile(`^vol` + resourceIDPattern)
	snapshotIDRE = regexp.MustCompile(`^snap` + resourceIDPattern)
)

// IsRegion reports whether s has the shape of an AWS region name (us-east-1, eu-central-2,
// us-gov-west-1, cn-northwest-1, us-isob-east-1).
func IsRegion(s string) bool {
	return len(s) <= maxNameLen && regionRE.MatchString(s)
}

// RegionOfZone derives the region of an availability zone name: us-east-1a → us-east-1,
// us-west-2-lax-1a → us-west-2 (Local Zones), us-east-1-wl1-bos-wlz-1 → us-east-1
// (Wavelength), us-gov-west-1a → us-gov-west-1, cn-north-1a → cn-north-1. ok is false, and the
// region "", for "" and anything else it does not recognise (zone IDs such as use1-az1 among them).
func RegionOfZone(az string) (region string, ok bool) {
	if len(az) > maxNameLen {
		return "", false
	}
	m := zoneRE.FindStringSubmatch(az)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// IsVolumeID reports whether s is an EBS volume ID: vol- followed by 8 or 17 lowercase hex digits.
func IsVolumeID(s string) bool {
	return volumeIDRE.MatchString(s)
}

// IsSnapshotID reports whether s is an EBS snapshot ID: snap- followed by 8 or 17 lowercase hex digits.
func IsSnapshotID(s string) bool {
	return snapshotIDRE.MatchString(s)
}

// accountIDRE is a 12-digit AWS account ID.
var accountIDRE = regexp.MustCompile(`^[0-9]{12}$`)

// IsAccountID reports whether s is an AWS account ID: 12 decimal digits.
func IsAccountID(s string) bool {
	return accountIDRE.MatchString(s)
}
