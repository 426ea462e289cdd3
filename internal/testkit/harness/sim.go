package harness

import (
	"fmt"
	"maps"
	"slices"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	corev1api "k8s.io/api/core/v1"
)

// Throttled is the error code of throttled EC2 requests.
const Throttled = "RequestLimitExceeded"

// StartSimulator starts the EC2 simulator on loopback and points plugin processes started
// afterwards at it (see UseEndpoint).
func StartSimulator(cfg ec2sim.Config) (*ec2sim.Server, error) {
	srv, err := ec2sim.Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the EC2 simulator: %w", err)
	}
	UseEndpoint(srv.URL)
	return srv, nil
}

// Fleet describes EBS volumes to seed in one region, with the PVs that use them.
type Fleet struct {
	// Region holds the volumes; Zones are its zones used round robin (default REGION a, b, c).
	Region string
	Zones  []string
	// Count is the number of volumes.
	Count int
	// Prefix starts PV names (default "pv").
	Prefix string
}

// Seed adds the fleet's volumes to the simulator and returns their PVs. Volume types alternate
// gp3 and io2; every other pair of PVs is provisioned by the EBS CSI driver, the rest in-tree.
func (f Fleet) Seed(sim *ec2sim.Simulator) []*corev1api.PersistentVolume {
	zones := f.Zones
	if len(zones) == 0 {
		zones = []string{f.Region + "a", f.Region + "b", f.Region + "c"}
	}
	prefix := f.Prefix
	if prefix == "" {
		prefix = "pv"
	}
	specs := make([]ec2sim.VolumeSpec, f.Count)
	vols := make([]Volume, f.Count)
	for i := range specs {
		// gp3 performance varies, so a restore that loses it shows.
		step := int32(i % 3)
		spec := ec2sim.VolumeSpec{AvailabilityZone: zones[i%len(zones)], Type: "gp3", SizeGiB: int32(10 + i%10*10), IOPS: 3000 + 1000*step, Throughput: 125 + 125*step}
		if i%2 == 1 {
			spec = ec2sim.VolumeSpec{AvailabilityZone: spec.AvailabilityZone, Type: "io2", SizeGiB: spec.SizeGiB, IOPS: 4000}
		}
		specs[i] = spec
		vols[i] = Volume{PV: fmt.Sprintf("%s-%04d", prefix, i), Zone: spec.AvailabilityZone, SizeGiB: spec.SizeGiB, CSI: i/2%2 == 1}
	}
	ids := sim.AddVolumes(f.Region, specs...)
	pvs := make([]*corev1api.PersistentVolume, len(vols))
	for i := range vols {
		vols[i].VolumeID = ids[i]
		pvs[i] = vols[i].PersistentVolume()
	}
	return pvs
}

// CallsByAction sums a simulator's responses per action over regions and outcomes.
func CallsByAction(st ec2sim.Stats) map[string]int {
	out := map[string]int{}
	for _, actions := range st.Calls {
		for action, outcomes := range actions {
			for _, n := range outcomes {
				out[action] += n
			}
		}
	}
	return out
}

// CallsByOutcome sums a simulator's responses per outcome ("ok" or an error code).
func CallsByOutcome(st ec2sim.Stats) map[string]int {
	out := map[string]int{}
	for _, actions := range st.Calls {
		for _, outcomes := range actions {
			for o, n := range outcomes {
				out[o] += n
			}
		}
	}
	return out
}

// TotalCalls sums every response of the simulator.
func TotalCalls(st ec2sim.Stats) int {
	n := 0
	for _, c := range CallsByAction(st) {
		n += c
	}
	return n
}

// SnapshotsLeft counts the snapshots and copies that still exist, per region.
func SnapshotsLeft(sim *ec2sim.Simulator, regions ...string) map[string]int {
	out := map[string]int{}
	for _, r := range regions {
		out[r] = len(sim.Snapshots(r))
	}
	return out
}

// SortedKeys returns a map's keys in order, for stable output.
func SortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
