package explore

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

// The backed-up volumes' kinds, and the promise that a restore recreates them: the volume EC2
// makes from a snapshot, or from its copy, has the backed-up volume's type, IOPS and throughput,
// which CreateSnapshot recorded on the snapshot (velero-async.io/volume-type, -iops,
// -throughput; a copy carries them too) and Velero passes back (the type, and the IOPS of an
// io1 or io2 volume, that GetVolumeInfo returned at backup).

// catRestoreSettings is the promise on a restored volume's settings.
const catRestoreSettings category = "a restored volume without the backed-up volume's type, IOPS or throughput"

// volumeKind is a backed-up volume's type and performance (0: EC2's baseline for the type).
type volumeKind struct {
	typ              string
	iops, throughput int32
}

func (k volumeKind) String() string {
	return fmt.Sprintf("%s %d IOPS %d MiB/s", k.typ, k.iops, k.throughput)
}

// volumeKinds are the kinds a run's volumes are drawn from: gp3 at EC2's baseline (3,000 IOPS,
// 125 MiB/s), gp3 provisioned beyond it, and io2, whose IOPS are always provisioned (within
// EC2's limits for the run's 8 GiB volumes).
var volumeKinds = []volumeKind{
	{typ: "gp3"},
	{typ: "gp3", iops: 4000, throughput: 500},
	{typ: "io2", iops: 3000},
}

// drawVolumeKinds draws the kind of each PV's volume: none for an earlier release's item phase
// (its snapshots record the volume type only, the README's limit) or st1 runs (st1 volumes).
func drawVolumeKinds(t *rapid.T, s setup) []volumeKind {
	if s.upgrade != nil || s.hddVolumes {
		return nil
	}
	kinds := make([]volumeKind, len(s.pvs))
	for i := range kinds {
		kinds[i] = rapid.SampledFrom(volumeKinds).Draw(t, "volume kind")
	}
	return kinds
}

// volumeSpec is the spec of PV i's volume in s, of volumeType unless a kind was drawn for it.
func (s setup) volumeSpec(i int, volumeType string) ec2sim.VolumeSpec {
	spec := ec2sim.VolumeSpec{AvailabilityZone: sourceRegion + "a", Type: volumeType, SizeGiB: volumeSize}
	if i < len(s.volumeKinds) {
		k := s.volumeKinds[i]
		spec.Type, spec.IOPS, spec.Throughput = k.typ, k.iops, k.throughput
	}
	return spec
}

// checkRestoredSettings checks a volume a restore returned for PV pv: EC2 made it with the
// type, IOPS and throughput of the volume backed up. Not judged for an earlier release's
// snapshots, which record the volume type only.
func (w *world) checkRestoredSettings(c restoreCall) {
	op := w.opOfPV(c.pv)
	if op == nil || w.setup.upgrade != nil {
		return
	}
	backedUp, okB := w.volume(sourceRegion, op.volumeID)
	made, okM := w.volume(c.region, c.volumeID)
	if !okB || !okM {
		return
	}
	if made.Type != backedUp.Type || made.IOPS != backedUp.IOPS || made.Throughput != backedUp.Throughput {
		w.violate(catRestoreSettings, "the restore of %s in %s made %s as %s, %d IOPS, %d MiB/s; the backed-up volume %s is %s, %d IOPS, %d MiB/s",
			c.pv, c.region, made.ID, made.Type, made.IOPS, made.Throughput, backedUp.ID, backedUp.Type, backedUp.IOPS, backedUp.Throughput)
	}
}

// volume is the volume of the source account in region with this ID.
func (w *world) volume(region, id string) (ec2sim.Volume, bool) {
	for _, v := range w.sim.VolumesIn(sourceAccount, region) {
		if v.ID == id {
			return v, true
		}
	}
	return ec2sim.Volume{}, false
}

// opOfPV is the operation of PV pv.
func (w *world) opOfPV(pv string) *operation {
	for _, op := range w.ops {
		if op.pv == pv {
			return op
		}
	}
	return nil
}
