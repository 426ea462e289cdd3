package drill_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"testing"

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
