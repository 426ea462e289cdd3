package model_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/velero-async/velero-plugin-for-aws/internal/awsid"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// opIDSeeds are operation IDs of every shape: this plugin's, truncated, foreign, older and odd.
var opIDSeeds = []string{
	"ebs:v1:us-east-1:vol-0123456789abcdef0:1764471600",
	"ebs:v2:us-east-1:vol-0123456789abcdef0:1764471600:pvc-0a1b2c3d",
	"ebs:v2:us-east-1:vol-0123456789abcdef0:1764471600:",
	"ebs:v2:us-east-1:vol-0123456789abcdef0:1764471600:PV.-x",
	"ebs:v2:us-east-1:vol-0123456789abcdef0:1764471600",
	"ebs-volume:v1:eu-west-1:vol-01234567:0",
	"ebs:v1:us-gov-west-1:vol-0123456789abcdef0:+17",
	"ebs:v0:us-east-1:vol-0123456789abcdef0:1",
	"ebs:us-east-1:vol-0123456789abcdef0",
	"ebs:v1:us-east-1:vol-0123456789abcdef0:",
	"ebs:v1:us-east-1:vol-0123456789abcdef0:9223372036854775807",
	"ebs:v1:cn-north-1:vol-0123456789abcdef0:-1",
	"csi:snapshot:backup/ns/name",
	"",
	":::::",
	"ebs:v1:us-east-1:snap-0123456789abcdef0:1",
	"ebs:v1:US-EAST-1:vol-0123456789abcdef0:1",
}

// checkOperation asserts the invariants of an operation that parsed: its fields are valid and it
// reads back the same from its canonical form.
func checkOperation(t *testing.T, id string, op model.Operation, format func(model.Operation) string, parse func(string) (model.Operation, error)) {
	t.Helper()
	if !awsid.IsRegion(op.Region) || !awsid.IsVolumeID(op.VolumeID) || op.Issued.Unix() < 0 {
		t.Fatalf("%q parsed to an invalid operation %+v", id, op)
	}
	again, err := parse(format(op))
	if err != nil || again != op {
		t.Fatalf("%q parsed to %+v, whose ID %q reads back as %+v, %v", id, op, format(op), again, err)
	}
}

func FuzzParseOperationID(f *testing.F) {
	for _, s := range opIDSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		op, err := model.ParseOperationID(id)
		if err != nil {
			if !strings.Contains(err.Error(), "operation ID") {
				t.Fatalf("error %q does not say what it is about", err)
			}
			return
		}
		checkOperation(t, id, op, model.Operation.String, model.ParseOperationID)
		if _, err := model.ParseVolumeOperationID(id); err == nil {
			t.Fatalf("%q reads as both a snapshot and a volume operation", id)
		}
	})
}

func FuzzParseVolumeOperationID(f *testing.F) {
	for _, s := range opIDSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		op, err := model.ParseVolumeOperationID(id)
		if err != nil {
			return
		}
		checkOperation(t, id, op.Operation, func(o model.Operation) string { return model.VolumeOperation{o}.String() },
			func(s string) (model.Operation, error) {
				v, err := model.ParseVolumeOperationID(s)
				return v.Operation, err
			})
		if _, err := model.ParseOperationID(id); err == nil {
			t.Fatalf("%q reads as both a volume and a snapshot operation", id)
		}
	})
}

// tagGroup reads fuzz text as tags: one "key=value" a line (a line without "=" is a key with an
// empty value).
func tagGroup(s string) map[string]string {
	m := map[string]string{}
	if s == "" {
		return m
	}
	for _, line := range strings.Split(s, "\n") {
		k, v, _ := strings.Cut(line, "=")
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
}

func validTag(k, v string) bool {
	return k != "" && utf8.RuneCountInString(k) <= model.MaxTagKeyLen && utf8.RuneCountInString(v) <= model.MaxTagValueLen &&
		!strings.HasPrefix(strings.ToLower(k), model.ReservedPrefix)
}

func FuzzMergeTags(f *testing.F) {
	f.Add(uint8(50), "velero-async.io/copy-to-region=us-west-2", "velero.io/backup=b\nvelero.io/pv=p", "app=web\naws:cloudformation:stack=x\nAWS:y=z")
	f.Add(uint8(49), "a=1", "a=2\nb=2", "b=3\nc=3")
	f.Add(uint8(2), "x=1\ny=2\nz=3", "", "w=0")
	f.Add(uint8(50), strings.Repeat("k", 129)+"=v", "key="+strings.Repeat("v", 257), "é"+strings.Repeat("k", 127)+"=ü")
	f.Add(uint8(0), "a=1", "b=2", "c=3")
	f.Add(uint8(50), "=empty key", "\n\n", "no-value")
	f.Fuzz(func(t *testing.T, limit uint8, a, b, c string) {
		lim := int(limit % 61)
		groups := []map[string]string{tagGroup(a), tagGroup(b), tagGroup(c)}
		tags, dropped := model.MergeTags(lim, groups...)
		if len(tags) > lim {
			t.Fatalf("%d tags, limit %d", len(tags), lim)
		}
		kept := map[string]bool{}
		lastGroup := 0
		for _, tag := range tags {
			k, v := aws.ToString(tag.Key), aws.ToString(tag.Value)
			if !validTag(k, v) {
				t.Fatalf("tag %q=%q is one EC2 refuses", k, v)
			}
			if kept[k] {
				t.Fatalf("key %q twice", k)
			}
			first := firstValid(groups, k)
			if first < 0 || groups[first][k] != v {
				t.Fatalf("tag %q=%q is not the value of the earliest group that has a valid one (group %d)", k, v, first)
			}
			if first < lastGroup {
				t.Fatalf("tag %q of group %d after a tag of group %d", k, first, lastGroup)
			}
			kept[k], lastGroup = true, first
		}
		droppedSet := map[string]bool{}
		for _, k := range dropped {
			droppedSet[k] = true
		}
		for _, g := range groups {
			for k := range g {
				switch {
				case kept[k]:
				case !droppedSet[k]:
					t.Fatalf("key %q neither kept nor reported dropped", k)
				case firstValid(groups, k) >= 0 && len(tags) < lim:
					t.Fatalf("valid tag %q dropped with room left (%d of %d)", k, len(tags), lim)
				}
			}
		}
	})
}

// firstValid returns the index of the first group with a tag k that EC2 accepts, or -1.
func firstValid(groups []map[string]string, k string) int {
	for i, g := range groups {
		if v, ok := g[k]; ok && validTag(k, v) {
			return i
		}
	}
	return -1
}
