package harness

import (
	"fmt"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// RangeValue is a command-line flag value (flag.Value) for a simulator duration range, written "3s-6s"
// or, for a fixed duration, "5s".
type RangeValue struct{ R *ec2sim.DurationRange }

// String formats the range as the flag accepts it.
func (v RangeValue) String() string {
	if v.R == nil {
		return ""
	}
	if v.R.Max.Duration == 0 || v.R.Max == v.R.Min {
		return v.R.Min.String()
	}
	return v.R.Min.String() + "-" + v.R.Max.String()
}

// Set parses "MIN-MAX" or "D".
func (v RangeValue) Set(s string) error {
	lo, hi, found := strings.Cut(s, "-")
	min, err := time.ParseDuration(lo)
	if err != nil {
		return err
	}
	max := min
	if found {
		if max, err = time.ParseDuration(hi); err != nil {
			return err
		}
	}
	if max < min {
		return fmt.Errorf("range %s: max below min", s)
	}
	*v.R = ec2sim.Range(min, max)
	return nil
}
