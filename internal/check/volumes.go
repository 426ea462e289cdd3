package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/pv"
)

// volumesInRegion judges the location's region against the cluster's EBS volumes.
func volumesInRegion(lc *locationCheck) Finding {
	takes, why := takesBackups(lc)
	return regionVolumes(lc.cfg.Region, lc.cluster.volumes, lc.cluster.pvs, takes, why,
		fmt.Sprintf("kubectl -n %s patch volumesnapshotlocation %s --type merge -p '{\"spec\":{\"config\":{\"region\":\"%%s\"}}}'", lc.Namespace, lc.vsl.Name))
}

// takesBackups says whether backups go through the location, and why. They do when it is the
// provider's only location or Velero's default for the provider (backups that name no
// location use it), or when a Schedule names it. Any other location is taken for one a
// recovery cluster keeps for restores (its region is then the copy region, where no PV of
// the cluster may be yet).
func takesBackups(lc *locationCheck) (bool, string) {
	switch {
	case len(lc.cluster.locations) == 1:
		return true, "it is the only location of " + lc.Provider
	case lc.cluster.settings.defaultLocations[lc.Provider] == lc.vsl.Name:
		return true, "it is Velero's default for " + lc.Provider
	}
	for _, s := range lc.cluster.schedules {
		if slices.Contains(s.Spec.Template.VolumeSnapshotLocations, lc.vsl.Name) {
			return true, "Schedule " + s.Name + " names it"
		}
	}
	const restores = ", so it is taken for a location a recovery cluster keeps for restores"
	var unknown []string
	if s := lc.cluster.settings; !s.known() {
		unknown = append(unknown, "whether it is Velero's default for "+lc.Provider+" is not known ("+s.problem.String()+")")
	}
	if p := lc.cluster.scheduleProblem; p != nil {
		unknown = append(unknown, "whether a Schedule names it is not known ("+p.String()+")")
	}
	if len(unknown) > 0 {
		return false, strings.Join(unknown, "; ") + restores
	}
	return false, "it is not Velero's default for " + lc.Provider + " and no Schedule names it" + restores
}

// regionVolumes judges region against the cluster's EBS volumes (nil pvs: they were read).
// When the cluster has EBS volumes and none is in region, a location that takes backups
// would fail every snapshot (EC2 finds no such volume in region): a failure naming the
// volumes' region, or a warning when some volumes' zones are unknown or the location only
// restores (why says which). patch is the kubectl command that sets the region, %s for it.
func regionVolumes(region string, vols []pv.Volume, pvs *unreadable, takes bool, why, patch string) Finding {
	check := "EBS volumes in " + region
	if pvs != nil {
		return pvs.finding(check, "")
	}
	var in, elsewhere, unknown []pv.Volume
	for _, v := range vols {
		switch v.Region {
		case region:
			in = append(in, v)
		case "":
			unknown = append(unknown, v)
		default:
			elsewhere = append(elsewhere, v)
		}
	}
	total := plural(len(vols), "EBS PersistentVolume")
	switch {
	case len(vols) == 0:
		return pass(check, "the cluster has no EBS PersistentVolume (in-tree awsElasticBlockStore, CSI "+pv.EBSCSIDriver+" or "+pv.EKSAutoModeDriver+") yet")
	case len(in) > 0 && len(elsewhere) > 0:
		return pass(check, fmt.Sprintf("%d of the cluster's %s; elsewhere: %s%s", len(in), total, placed(elsewhere), unzoned(unknown)))
	case len(in) > 0:
		return pass(check, fmt.Sprintf("%d of the cluster's %s%s", len(in), total, unzoned(unknown)))
	case len(elsewhere) == 0:
		return notChecked(check, fmt.Sprintf("none of the cluster's %s has a zone the check can read (a zone label, node affinity on a zone key, or an aws://ZONE/ volume ID): %s",
			total, shortList(names(unknown))))
	}
	target := commonRegion(elsewhere)
	detail := fmt.Sprintf("none of the cluster's %s is in %s (%s%s)", total, region, placed(elsewhere), unzoned(unknown))
	fix := fmt.Sprintf("set region: %s in the location's spec.config: %s", target, fmt.Sprintf(patch, target))
	switch {
	case !takes:
		return warn(check, detail+"; "+why, "if backups are to go through it, "+fix)
	case len(unknown) > 0:
		return warn(check, detail+"; backups through it ("+why+") would snapshot none of those with a zone", fix)
	}
	return fail(check, detail+": backups through it ("+why+") would fail every snapshot, EC2 finding no such volume in "+region, fix)
}

// unzoned names, after a "; ", the volumes whose zone the check could not read, or is "".
func unzoned(unknown []pv.Volume) string {
	if len(unknown) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d with no zone the check can read: %s", len(unknown), shortList(names(unknown)))
}

// placed names volumes with their zones: "pv-a in us-east-1a, pv-b in us-east-1b and 3 more".
func placed(vols []pv.Volume) string {
	var s []string
	for _, v := range vols {
		where := v.AvailabilityZone
		if where == "" {
			where = v.Region
		}
		s = append(s, v.Name+" in "+where)
	}
	return shortList(s)
}

// names are the volumes' PV names.
func names(vols []pv.Volume) []string {
	var s []string
	for _, v := range vols {
		s = append(s, v.Name)
	}
	return s
}

// commonRegion is the region most of vols are in, the first in order on a tie.
func commonRegion(vols []pv.Volume) string {
	count := map[string]int{}
	best := ""
	for _, v := range vols {
		count[v.Region]++
		if best == "" || count[v.Region] > count[best] {
			best = v.Region
		}
	}
	return best
}
