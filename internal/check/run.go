package check

import (
	"context"
	"fmt"
	"sort"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Run checks every location of the provider, or only the one named, then Velero's settings.
// It returns an error only when it cannot list the locations at all.
func (c *Checker) Run(ctx context.Context, only string) (Report, error) {
	rep := Report{Namespace: c.Namespace}
	var list velerov1.VolumeSnapshotLocationList
	if err := c.Kube.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		if u := newUnreadable("", "list volumesnapshotlocations.velero.io in namespace "+c.Namespace, err); u.refused {
			return rep, fmt.Errorf("listing the VolumeSnapshotLocations in namespace %s: %w; grant %s to whoever runs the check", c.Namespace, err, u.grant)
		}
		return rep, fmt.Errorf("listing the VolumeSnapshotLocations in namespace %s: %w", c.Namespace, err)
	}
	cluster := readCluster(ctx, c.Kube, c.Namespace)
	var mine []velerov1.VolumeSnapshotLocation
	for _, v := range list.Items {
		if v.Spec.Provider != c.Provider {
			continue
		}
		cluster.locations = append(cluster.locations, v.Name)
		if only == "" || v.Name == only {
			mine = append(mine, v)
		}
	}
	sort.Strings(cluster.locations)
	sort.Slice(mine, func(i, j int) bool { return mine[i].Name < mine[j].Name })
	if len(mine) == 0 {
		rep.add(Section{Title: "VolumeSnapshotLocations", Findings: []Finding{c.noLocation(only, list.Items)}})
	}
	for _, v := range mine {
		rep.add(c.locationSection(ctx, v, cluster))
	}
	rep.add(otherLocations(c.Namespace, c.Provider, list.Items, cluster))
	velero := cluster.settings.section()
	if len(cluster.locations) > 0 {
		velero.Findings = append(velero.Findings, defaultLocation(c.Provider, c.Namespace, cluster.locations, cluster.settings))
	}
	velero.Findings = append(velero.Findings, installIdentity(cluster.install, cluster.installProblem, c.Shell.InPod))
	rep.add(velero)
	return rep, nil
}

// noLocation is the failure of a check that found no location to check.
func (c *Checker) noLocation(only string, all []velerov1.VolumeSnapshotLocation) Finding {
	if only != "" {
		for _, v := range all {
			if v.Name == only {
				return fail("VolumeSnapshotLocation "+only, fmt.Sprintf("its provider is %q, not %s", v.Spec.Provider, c.Provider),
					"set spec.provider: "+c.Provider)
			}
		}
		return fail("VolumeSnapshotLocation "+only, "not found in namespace "+c.Namespace,
			fmt.Sprintf("velero snapshot-location create %s --provider %s --config region=REGION", only, c.Provider))
	}
	return fail("VolumeSnapshotLocations", fmt.Sprintf("none of provider %s in namespace %s", c.Provider, c.Namespace),
		fmt.Sprintf("velero snapshot-location create ebs --provider %s --config region=REGION", c.Provider))
}

// locationSection checks v.
func (c *Checker) locationSection(ctx context.Context, v velerov1.VolumeSnapshotLocation, cl cluster) Section {
	lc := &locationCheck{Checker: c, vsl: v, cluster: cl}
	checkLocation(ctx, lc)
	return Section{Title: fmt.Sprintf("VolumeSnapshotLocation %s/%s", c.Namespace, v.Name), Location: v.Name, Findings: lc.findings}
}

// checkLocation runs the checks of one location in order, each step only when the steps it
// needs passed.
func checkLocation(ctx context.Context, lc *locationCheck) {
	cfg, err := model.ParseConfig(lc.vsl.Spec.Config)
	if err != nil {
		lc.add(fail("config", err.Error(), configFix(lc.vsl.Spec.Config)))
		return
	}
	lc.cfg = cfg
	lc.add(pass("config", configSummary(lc)))
	lc.add(volumesInRegion(lc))
	if !resolve(ctx, lc) {
		return
	}
	source, ok := lc.place(ctx, "the location's account", lc.sourceCredentialsName(), cfg.Region, lc.loc.Credentials, statementSource)
	if !ok {
		return
	}
	if id, ok := lc.identity(ctx, "account", source, lc.loc.Credentials, ""); ok {
		source.principal = id.ARN
	}
	sourceRegion(ctx, lc, source)
	if cfg.CopyToRegion != "" {
		copyRegion(ctx, lc, source)
	}
	if cfg.Vault.Enabled() {
		vaultAccount(ctx, lc, source)
	}
	if cfg.Vault.Bucket.Enabled() {
		vaultRecords(ctx, lc)
	}
	judgeOperationTimeouts(lc)
	if cfg.Vault.Lock.Mode != "" {
		lockAgainstTTL(lc)
	}
}

// configSummary says what the location asks for.
func configSummary(lc *locationCheck) string {
	parts := []string{"region " + lc.cfg.Region}
	if lc.cfg.CopyToRegion != "" {
		parts = append(parts, "copies to "+lc.cfg.CopyToRegion)
	}
	if v := lc.cfg.Vault; v.Enabled() {
		s := "vault copies in account " + v.AccountID + " in " + v.Region
		if v.Lock.Mode != "" {
			s += ", locked (" + v.Lock.Term() + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
