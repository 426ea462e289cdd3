package awsid

import (
	"strings"
	"testing"
)

func TestRegionOfZone(t *testing.T) {
	tests := []struct{ az, region string }{
		{"us-east-1a", "us-east-1"},
		{"us-east-1f", "us-east-1"},
		{"ap-southeast-1b", "ap-southeast-1"},
		{"eu-central-2c", "eu-central-2"},
		{"il-central-1a", "il-central-1"},
		{"us-west-2-lax-1a", "us-west-2"},
		{"us-west-2-lax-1b", "us-west-2"},
		{"us-east-1-bos-1a", "us-east-1"},
		{"us-east-1-wl1-bos-wlz-1", "us-east-1"},
		{"ap-northeast-1-wl1-nrt-wlz-1", "ap-northeast-1"},
		{"us-gov-west-1a", "us-gov-west-1"},
		{"us-gov-east-1c", "us-gov-east-1"},
		{"cn-north-1a", "cn-north-1"},
		{"cn-northwest-1b", "cn-northwest-1"},
		{"us-isob-east-1a", "us-isob-east-1"},
		{"", ""},
		{"us-east-1", ""},
		{"us-east-1ab", ""},
		{"us-east-1A", ""},
		{"US-EAST-1a", ""},
		{"use1-az1", ""},
		{"us-east-a", ""},
		{"east-1a", ""},
		{"us-east-1-", ""},
		{"us-east-1-lax", ""},
		{"us-east-1-lax-1", ""},
		{"us-east-1-wl1-bos-wlz", ""},
		{" us-east-1a", ""},
		{"us-east-1a\n", ""},
		{"aws://us-east-1a", ""},
		{"us-east-1" + strings.Repeat("a", maxNameLen), ""},
	}
	for _, tc := range tests {
		got, ok := RegionOfZone(tc.az)
		if got != tc.region || ok != (tc.region != "") {
			t.Errorf("RegionOfZone(%q) = %q, %v; want %q, %v", tc.az, got, ok, tc.region, tc.region != "")
		}
	}
}

func TestIsRegion(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"us-east-1", true},
		{"eu-central-2", true},
		{"us-gov-west-1", true},
		{"cn-northwest-1", true},
		{"us-isob-east-1", true},
		{"us-iso-east-1", true},
		{"ap-southeast-7", true},
		{"mx-central-1", true},
		{"sa-east-1", true},
		{"me-south-1", true},
		{"", false},
		{"us-east-1a", false},
		{"us-east", false},
		{"us-east-0", false},
		{"us-east-01", false},
		{"US-EAST-1", false},
		{"us_east_1", false},
		{"east-1", false},
		{"us-east-1 ", false},
		{"us--east-1", false},
		{"aws-global", false},
		{"use1-az1", false},
		{"us-east-1\n", false},
	}
	for _, tc := range tests {
		if got := IsRegion(tc.s); got != tc.want {
			t.Errorf("IsRegion(%q) = %v; want %v", tc.s, got, tc.want)
		}
	}
}

// idTests are shapes of resource IDs, each valid for at most one of the ID checks.
var idTests = []struct {
	s                string
	volume, snapshot bool
}{
	{"vol-0123abcd", true, false},
	{"vol-0123456789abcdef0", true, false},
	{"vol-00000000", true, false},
	{"vol-ffffffffffffffff0", true, false},
	{"snap-0123abcd", false, true},
	{"snap-0123456789abcdef0", false, true},
	{"snap-00000000", false, true},
	{"", false, false},
	{"vol-", false, false},
	{"snap-", false, false},
	{"vol-XYZ", false, false},
	{"snap-XYZ", false, false},
	{"vol-0123ABCD", false, false},
	{"snap-0123456789ABCDEF0", false, false},
	{"vol-0123abc", false, false},
	{"vol-0123abcde", false, false},
	{"snap-0123", false, false},
	{"vol-0123456789abcdef", false, false},
	{"vol-0123456789abcdef01", false, false},
	{"aws://us-east-1a/vol-0123456789abcdef0", false, false},
	{" vol-0123abcd", false, false},
	{"vol-0123abcd\n", false, false},
	{"snap-0123abcd\n", false, false},
	{"VOL-0123abcd", false, false},
	{"vol-0123abcg", false, false},
	{"vol0123abcd", false, false},
	{"ami-0123abcd", false, false},
}

func TestIsVolumeID(t *testing.T) {
	for _, tc := range idTests {
		if got := IsVolumeID(tc.s); got != tc.volume {
			t.Errorf("IsVolumeID(%q) = %v; want %v", tc.s, got, tc.volume)
		}
	}
}

func TestIsSnapshotID(t *testing.T) {
	for _, tc := range idTests {
		if got := IsSnapshotID(tc.s); got != tc.snapshot {
			t.Errorf("IsSnapshotID(%q) = %v; want %v", tc.s, got, tc.snapshot)
		}
	}
}

func FuzzRegionOfZone(f *testing.F) {
	for _, s := range []string{"us-east-1a", "us-west-2-lax-1a", "us-east-1-wl1-bos-wlz-1", "us-gov-west-1a", "cn-north-1a", "", "use1-az1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, az string) {
		r, ok := RegionOfZone(az)
		if !ok {
			if r != "" {
				t.Fatalf("RegionOfZone(%q) = %q, false", az, r)
			}
			return
		}
		if !IsRegion(r) || !strings.HasPrefix(az, r) || len(az) <= len(r) {
			t.Fatalf("RegionOfZone(%q) = %q", az, r)
		}
	})
}
