package check

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Velero's server: its Deployment and container, the flags the check reads and their defaults
// (velero server --help, v1.18).
const (
	veleroDeployment = "velero"
	veleroContainer  = "velero"

	flagItemOperationTimeout = "default-item-operation-timeout"
	flagSyncPeriod           = "item-operation-sync-frequency"
	flagItemBlockWorkers     = "item-block-worker-count"
	flagDefaultBackupTTL     = "default-backup-ttl"
	flagDefaultLocations     = "default-volume-snapshot-locations"

	defaultItemOperationTimeout = 4 * time.Hour
	defaultSyncPeriod           = 10 * time.Second
	defaultItemBlockWorkers     = 1
	defaultBackupTTL            = 30 * 24 * time.Hour

	// minSyncPeriod is the shortest sync period the README advises: each pass starts a plugin
	// process and makes EC2 calls for every waiting backup.
	minSyncPeriod = time.Second
	// usefulItemBlockWorkers reach EC2's CreateSnapshot rate at AWS's latencies; more only queue.
	usefulItemBlockWorkers = 2
)

// settings are the Velero server's, from its Deployment's arguments.
type settings struct {
	// deployment is "namespace/name"; problem, when set, why the settings are not known.
	deployment string
	problem    *unreadable
	// defaultLocations are --default-volume-snapshot-locations: a location name per provider.
	defaultLocations map[string]string

	itemOperationTimeout, syncPeriod, defaultTTL time.Duration
	itemBlockWorkers                             int
	// bad are the flags whose values could not be read.
	bad []Finding
}

// known reports whether the settings were read.
func (s settings) known() bool { return s.problem == nil }

// readSettings reads, through kube, Velero's Deployment in namespace and parses its server's
// flags.
func readSettings(ctx context.Context, kube client.Reader, namespace string) settings {
	s := settings{
		deployment:           namespace + "/" + veleroDeployment,
		itemOperationTimeout: defaultItemOperationTimeout, syncPeriod: defaultSyncPeriod,
		defaultTTL: defaultBackupTTL, itemBlockWorkers: defaultItemBlockWorkers,
	}
	var d appsv1.Deployment
	if err := kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: veleroDeployment}, &d); err != nil {
		s.problem = newUnreadable("Velero's Deployment "+s.deployment+" is not readable", "get on deployments.apps in namespace "+namespace, err)
		return s
	}
	ctr, ok := serverContainer(d.Spec.Template.Spec.Containers)
	if !ok {
		s.problem = &unreadable{problem: "Deployment " + s.deployment + " has no container " + veleroContainer}
		return s
	}
	flags := parseFlags(append(append([]string(nil), ctr.Command...), ctr.Args...))
	s.itemOperationTimeout = s.duration(flags, flagItemOperationTimeout, s.itemOperationTimeout)
	s.syncPeriod = s.duration(flags, flagSyncPeriod, s.syncPeriod)
	s.defaultTTL = s.duration(flags, flagDefaultBackupTTL, s.defaultTTL)
	s.defaultLocations = providerLocations(flags[flagDefaultLocations])
	if v, ok := flags[flagItemBlockWorkers]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.bad = append(s.bad, fail("--"+flagItemBlockWorkers, fmt.Sprintf("%q is not a positive number", v), "--"+flagItemBlockWorkers+"=1"))
		} else {
			s.itemBlockWorkers = n
		}
	}
	return s
}

// serverContainer is the Deployment's Velero container: the one named velero, else the only one.
func serverContainer(cs []corev1.Container) (corev1.Container, bool) {
	for _, c := range cs {
		if c.Name == veleroContainer {
			return c, true
		}
	}
	if len(cs) == 1 {
		return cs[0], true
	}
	return corev1.Container{}, false
}

// parseFlags reads --name=value and --name value arguments; a later one wins, as for pflag.
func parseFlags(args []string) map[string]string {
	out := map[string]string{}
	for i, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok || name == "" {
			continue
		}
		if n, v, eq := strings.Cut(name, "="); eq {
			out[n] = v
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out[name] = args[i+1]
		}
	}
	return out
}

// duration reads a duration flag, keeping def (and recording the problem) when it is malformed.
func (s *settings) duration(flags map[string]string, name string, def time.Duration) time.Duration {
	v, ok := flags[name]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		s.bad = append(s.bad, fail("--"+name, fmt.Sprintf("%q is not a positive duration", v), fmt.Sprintf("--%s=%s", name, human(def))))
		return def
	}
	return d
}

// section is the findings about Velero's own settings.
func (s settings) section() Section {
	sec := Section{Title: "Velero server (Deployment " + s.deployment + ")"}
	if !s.known() {
		sec.Findings = append(sec.Findings, s.problem.finding("Velero's settings", "Velero's defaults are assumed"))
		return sec
	}
	sec.Findings = append(sec.Findings, s.bad...)
	sync := "--" + flagSyncPeriod
	if s.syncPeriod < minSyncPeriod {
		sec.Findings = append(sec.Findings, fail(sync, human(s.syncPeriod)+
			": every pass starts a plugin process and makes EC2 calls for each waiting backup", fmt.Sprintf("%s=%s (Velero's default)", sync, human(defaultSyncPeriod))))
	} else {
		sec.Findings = append(sec.Findings, pass(sync, human(s.syncPeriod)+": a freed copy slot waits at most this long"))
	}
	workers := "--" + flagItemBlockWorkers
	detail := strconv.Itoa(s.itemBlockWorkers)
	if s.itemBlockWorkers > usefulItemBlockWorkers {
		detail += fmt.Sprintf(": more than %d only queue at EC2's CreateSnapshot rate", usefulItemBlockWorkers)
	}
	sec.Findings = append(sec.Findings, pass(workers, detail))
	sec.Findings = append(sec.Findings,
		pass("--"+flagItemOperationTimeout, human(s.itemOperationTimeout)+" (judged against each location's copies above)"),
		pass("--"+flagDefaultBackupTTL, human(s.defaultTTL)))
	return sec
}

// providerLocations parses --default-volume-snapshot-locations: provider:name pairs, separated
// by commas, as Velero's flag reads them.
func providerLocations(v string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		if provider, name, ok := strings.Cut(strings.TrimSpace(pair), ":"); ok && provider != "" {
			out[provider] = name
		}
	}
	return out
}

// defaultLocation judges the provider's default location. With several locations of the
// provider and none the default, Velero fails every backup that names none of them
// ("provider … has more than one possible volume snapshot location, and none were specified
// explicitly or as a default"); a default that names no location fails them too.
func defaultLocation(provider, namespace string, locations []string, s settings) Finding {
	check := "--" + flagDefaultLocations
	name, set := s.defaultLocations[provider]
	patch := fmt.Sprintf("kubectl -n %s patch deployment %s --type json -p '[{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"--%s=%s:%s\"}]'",
		namespace, veleroDeployment, flagDefaultLocations, provider, "NAME")
	fix := patch + ", NAME the location backups go to (keep any other provider's pair in one flag, provider:name,provider:name; Helm: configuration.defaultVolumeSnapshotLocations), or name the location in every backup and Schedule (--volume-snapshot-locations)"
	switch {
	case set && slices.Contains(locations, name):
		return pass(check, provider+":"+name+": backups that name no location of "+provider+" use it")
	case set:
		return fail(check, fmt.Sprintf("%s:%s names no VolumeSnapshotLocation of %s in %s (%s): Velero fails every backup that names none", provider, name, provider, namespace, shortList(locations)),
			fix)
	case len(locations) == 1:
		return pass(check, locations[0]+" is the only location of "+provider+": backups that name none use it")
	case !s.known():
		return s.problem.finding(check, fmt.Sprintf("%d locations of %s (%s); whether one is the default is not known", len(locations), provider, shortList(locations)))
	}
	return warn(check, fmt.Sprintf("%d locations of %s (%s) and none is the default: Velero fails every backup that names none of them (\"provider %s has more than one possible volume snapshot location, and none were specified explicitly or as a default\")",
		len(locations), provider, shortList(locations), provider), fix)
}
