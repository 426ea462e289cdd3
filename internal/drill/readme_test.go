package drill_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
)

// referenceREADME is the reference of audit and drill, with a sample of each JSON report.
const referenceREADME = "../audit/README.md"

var jsonBlock = regexp.MustCompile("(?s)```json\n(.*?)```")

// The reference's JSON samples are the reports' JSON: every field they show is one the report
// has, durations in seconds included.
func TestREADMEJSONSamplesAreTheReports(t *testing.T) {
	b, err := os.ReadFile(referenceREADME)
	if err != nil {
		t.Fatal(err)
	}
	blocks := jsonBlock.FindAllSubmatch(b, -1)
	reports := []struct {
		name   string
		report any
	}{
		{"audit --output json", &audit.Report{}},
		{"drill --output json", &drill.Report{}},
	}
	if len(blocks) != len(reports) {
		t.Fatalf("%s has %d JSON blocks, want %d: the samples of %v", referenceREADME, len(blocks), len(reports), reports)
	}
	for i, r := range reports {
		t.Run(r.name, func(t *testing.T) {
			dec := json.NewDecoder(bytes.NewReader(blocks[i][1]))
			dec.DisallowUnknownFields()
			if err := dec.Decode(r.report); err != nil {
				t.Errorf("the sample of %s in %s: %v", r.name, referenceREADME, err)
			}
		})
	}
}

// camelCase is a JSON field name as the reports write them.
var camelCase = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// Every field of audit's and drill's JSON reports, to the last nested one, is written under a
// camelCase name of its own (or left out with "-"), never under its Go name.
func TestReportsJSONNamesAreCamelCase(t *testing.T) {
	for _, r := range []struct {
		name   string
		report any
	}{
		{"audit --output json", audit.Report{}},
		{"drill --output json", drill.Report{}},
	} {
		t.Run(r.name, func(t *testing.T) {
			for _, bad := range untaggedFields(reflect.TypeOf(r.report), map[reflect.Type]bool{}) {
				t.Errorf("%s is written without a camelCase json name", bad)
			}
		})
	}
}

// untaggedFields lists the fields under ty, embedded structs' included, that JSON would write
// under a name that is not a camelCase json tag's.
func untaggedFields(ty reflect.Type, seen map[reflect.Type]bool) []string {
	for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array || ty.Kind() == reflect.Map {
		ty = ty.Elem()
	}
	if ty.Kind() != reflect.Struct || seen[ty] || ty == reflect.TypeOf(time.Time{}) {
		return nil
	}
	seen[ty] = true
	var out []string
	for _, f := range reflect.VisibleFields(ty) {
		tag := f.Tag.Get("json")
		switch name, _, _ := strings.Cut(tag, ","); {
		case !f.IsExported() || tag == "-":
			continue
		case f.Anonymous && name == "":
			// Its fields are the parent's, visited on their own.
		case !camelCase.MatchString(name):
			out = append(out, fmt.Sprintf("%s.%s (tag %q)", ty, f.Name, tag))
		}
		out = append(out, untaggedFields(f.Type, seen)...)
	}
	return out
}
