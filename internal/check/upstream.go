package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/pv"
)

// How Velero (v1.17 and v1.18) uses the VolumeSnapshotLocations of other providers: every
// backup gets one location of each provider in its namespace, the one it names, else the
// provider's default (--default-volume-snapshot-locations), else the provider's only one; a
// provider with several locations and no default fails every backup that names none of them
// (validateAndGetSnapshotLocations, pkg/controller/backup_controller.go). Velero then
// snapshots each PV through the first of the backup's locations, in Go map order, whose
// plugin's GetVolumeID accepts it (takePVSnapshot, pkg/backup/item_backupper.go). The upstream
// AWS plugin accepts in-tree awsElasticBlockStore and ebs.csi.aws.com volumes, so a location
// of it takes them, in about every other backup, with none of this plugin's copies.
const (
	// upstreamPlugin is the upstream velero-plugin-for-aws's VolumeSnapshotter.
	upstreamPlugin = "velero.io/aws"
	// corePluginPrefix is what Velero's plugin manager puts before a provider without a "/"
	// (sanitizeName, pkg/plugin/clientmgmt/manager.go): provider aws runs velero.io/aws.
	corePluginPrefix = "velero.io/"
	// helmManagedBy is the label, and helmManager its value, of objects a Helm release made: a
	// kubectl change to them is undone by the release's next upgrade.
	helmManagedBy = "app.kubernetes.io/managed-by"
	helmManager   = "Helm"
	// existingInstall is the README section that moves an existing install's locations over.
	existingInstall = "README, An existing Velero install"
)

// pluginOf is the plugin Velero runs for a location's provider.
func pluginOf(provider string) string {
	if !strings.Contains(provider, "/") {
		return corePluginPrefix + provider
	}
	return provider
}

// upstreamTakes reports whether the upstream plugin's GetVolumeID accepts the volume: an
// in-tree one or the EBS CSI driver's, not EKS Auto Mode's.
func upstreamTakes(v pv.Volume) bool { return v.Driver != pv.EKSAutoModeDriver }

// foreignWait is how long this plugin's operation of a volume another provider's location
// snapshotted waits before it fails (the tracker's create window and listing lag).
func foreignWait() time.Duration {
	return (ebs.DefaultCreateWindow() + ebs.DefaultListingLag).Round(time.Minute)
}

// otherLocations judges the VolumeSnapshotLocations in namespace of other providers than the
// plugin's (provider): each provider whose plugin is the upstream AWS plugin gets a line
// (upstreamFinding); with none, one line passes, naming the other providers' locations.
func otherLocations(namespace, provider string, all []velerov1.VolumeSnapshotLocation, cl cluster) Section {
	sec := Section{Title: "Other providers' VolumeSnapshotLocations (namespace " + namespace + ")"}
	byProvider := map[string][]velerov1.VolumeSnapshotLocation{}
	var others []string
	for _, v := range all {
		switch {
		case v.Spec.Provider == provider:
		case pluginOf(v.Spec.Provider) == upstreamPlugin:
			byProvider[v.Spec.Provider] = append(byProvider[v.Spec.Provider], v)
		default:
			others = append(others, fmt.Sprintf("%s (%s)", v.Name, v.Spec.Provider))
		}
	}
	providers := slices.Sorted(maps.Keys(byProvider))
	for _, p := range providers {
		locs := byProvider[p]
		slices.SortFunc(locs, func(a, b velerov1.VolumeSnapshotLocation) int { return strings.Compare(a.Name, b.Name) })
		sec.Findings = append(sec.Findings, upstreamFinding(namespace, provider, p, locs, cl))
	}
	if len(providers) == 0 {
		detail := "none of provider aws or " + upstreamPlugin + ", which Velero would add to every backup"
		if len(others) > 0 {
			slices.Sort(others)
			detail += "; of other providers: " + shortList(others)
		}
		sec.Findings = append(sec.Findings, pass("upstream AWS plugin", detail))
	}
	return sec
}

// upstreamFinding judges locs, the locations of provider p (whose plugin is the upstream AWS
// plugin), sorted by name. Velero adds one of them to every backup (the only one, or the
// server's default for p), and then it takes the in-tree and EBS CSI volumes in about every
// other backup, those to come when the cluster has none yet: a failure. With several and no
// default among them Velero fails every backup that names none: a failure too.
func upstreamFinding(namespace, provider, p string, locs []velerov1.VolumeSnapshotLocation, cl cluster) Finding {
	names := make([]string, len(locs))
	qualified := make([]string, len(locs))
	for i, l := range locs {
		names[i], qualified[i] = l.Name, namespace+"/"+l.Name
	}
	check := fmt.Sprintf("VolumeSnapshotLocation %s (provider %s)", qualified[0], p)
	if len(locs) > 1 {
		check = fmt.Sprintf("VolumeSnapshotLocations %s (provider %s)", strings.Join(qualified, ", "), p)
	}
	fix := upstreamFix(namespace, provider, locs)
	s := cl.settings
	def, defSet := s.defaultLocations[p]
	switch {
	case len(locs) > 1 && !s.known():
		return fail(check, fmt.Sprintf("whether one is the server's default for %s is not known (%s): Velero adds that one to every backup, or, without one, fails every backup that names none of them; %s",
			p, s.problem, takesWhat(cl)), fix)
	case len(locs) > 1 && !defSet:
		return fail(check, fmt.Sprintf("none is the server's default for %s: Velero fails every backup that names none of them (\"provider %s has more than one possible volume snapshot location, and none were specified explicitly or as a default\"), and a backup that names one gets it beside this plugin's location: %s",
			p, p, takesWhat(cl)), fix)
	case len(locs) > 1 && !slices.Contains(names, def):
		return fail(check, fmt.Sprintf("the server's default for %s is %s, which is not a VolumeSnapshotLocation in %s: Velero fails every backup that names none of them, and a backup that names one gets it beside this plugin's location: %s",
			p, def, namespace, takesWhat(cl)), fix)
	}
	how := "Velero adds it to every backup, whatever the backup names (it is provider " + p + "'s only location)"
	if len(locs) > 1 {
		how = fmt.Sprintf("Velero adds %s, the server's default for %s, to every backup that names none of them", def, p)
	}
	return fail(check, how+": "+takesWhat(cl), fix)
}

// takesWhat says what an upstream location in a backup does to the cluster's EBS volumes.
func takesWhat(cl cluster) string {
	which := "the in-tree and ebs.csi.aws.com volumes"
	if cl.pvs == nil {
		n := 0
		for _, v := range cl.volumes {
			if upstreamTakes(v) {
				n++
			}
		}
		switch {
		case len(cl.volumes) == 0:
			which += " (the cluster has no EBS PersistentVolume yet, but every one to come)"
		case n == 0:
			which += fmt.Sprintf(" (none of the cluster's %s, all EKS Auto Mode's, but every one to come)", plural(len(cl.volumes), "EBS PersistentVolume"))
		default:
			which += fmt.Sprintf(" (%d of the cluster's %s)", n, plural(len(cl.volumes), "EBS PersistentVolume"))
		}
	}
	return fmt.Sprintf("in about every other backup Velero asks it before this plugin's location, and the upstream plugin snapshots %s itself, without this plugin's copies: "+
		"their operations fail after %s when the location asks for copies (the backup ends PartiallyFailed); naming this plugin's location on the backup does not help", which, human(foreignWait()))
}

// upstreamFix moves the locations to the plugin's provider (their backups still restore and
// delete through them), or deletes them when no backup needs them: with the values of a Helm
// release that made one of them (a kubectl change would be undone by its next upgrade), else
// with kubectl (the velero CLI deletes no VolumeSnapshotLocation).
func upstreamFix(namespace, provider string, locs []velerov1.VolumeSnapshotLocation) string {
	names := make([]string, len(locs))
	helm := false
	for i, l := range locs {
		names[i] = l.Name
		helm = helm || l.Labels[helmManagedBy] == helmManager
	}
	it, its, entry := "it", "its", "the entry"
	if len(locs) > 1 {
		it, its, entry = "them", "their", "the entries"
	}
	several := fmt.Sprintf("then %s has several locations, and the server's default for it (--default-volume-snapshot-locations) picks the one backups use", provider)
	if helm {
		return fmt.Sprintf("Helm made %s (label %s: %s): in the release's values, set provider: %s on %s entry in configuration.volumeSnapshotLocation, so that the backups taken through %s still restore and delete (%s), "+
			"or remove %s if no backup you keep was taken through %s; keep snapshotsEnabled: true (false creates no location, this plugin's neither); then helm upgrade (a kubectl change would be undone by the next upgrade) (%s)",
			it, helmManagedBy, helmManager, provider, its, it, several, entry, it, existingInstall)
	}
	moves := make([]string, len(names))
	for i, n := range names {
		moves[i] = fmt.Sprintf("kubectl -n %s patch volumesnapshotlocation %s --type merge -p '{\"spec\":{\"provider\":\"%s\"}}'", namespace, n, provider)
	}
	return fmt.Sprintf("%s, so that the backups taken through %s still restore and delete (%s); or, if no backup you keep was taken through %s, kubectl -n %s delete volumesnapshotlocation %s (%s)",
		strings.Join(moves, "; "), it, several, it, namespace, strings.Join(names, " "), existingInstall)
}
