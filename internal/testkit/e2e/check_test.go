//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/check"
)

// checkTimeout bounds one run of the check.
const checkTimeout = 2 * time.Minute

// mutatingActions are the EC2 actions that change something; the check sends them only as
// dry runs.
var mutatingActions = []string{"CreateSnapshot", "CopySnapshot", "DeleteSnapshot", "CreateVolume", "DeleteVolume",
	"CreateTags", "DeleteTags", "ModifySnapshotAttribute", "LockSnapshot", "UnlockSnapshot"}

// preflightCheck runs `velero-plugin-for-aws-async check` against the real kube-apiserver for
// each of the rig's locations, as a person would beside Velero (its environment: the Secrets'
// credentials only, through KUBECONFIG). Account A's, account B's and the vault location pass
// every line they can check (exit status 0), the vault's naming the role it assumed and how;
// the bad-credentials location fails naming EC2's
// AuthFailure (exit status 1). Every run's text output is logged, and nothing in EC2 changes.
func (r *rig) preflightCheck(sim simClient) {
	before := sim.stats()
	for _, l := range []struct {
		name     string
		wantCode int
	}{{vslName, check.ExitOK}, {vslNameB, check.ExitOK}, {vslNameVault, check.ExitOK}, {vslNameBad, check.ExitProblems}} {
		r.step("velero-plugin-for-aws-async check --location %s", l.name)
		text, code := r.runCheck(l.name, "text")
		r.saveLog("check-"+l.name, text)
		r.saw("check --location %s: exit status %d\n%s", l.name, code, indent(text))
		if code != l.wantCode {
			r.t.Errorf("check --location %s: exit status %d, want %d", l.name, code, l.wantCode)
		}
		if first, _, _ := strings.Cut(text, "\n"); !strings.HasPrefix(first, pluginBin+" ") || !strings.Contains(first, " (commit ") {
			r.t.Errorf("check --location %s: first line %q, want the plugin's version and commit", l.name, first)
		}
		out, _ := r.runCheck(l.name, "json")
		var rep check.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			r.t.Errorf("check --location %s --output json: %v\n%s", l.name, err, out)
			continue
		}
		var failed []string
		inRegion, chain := false, ""
		for _, s := range rep.Sections {
			for _, f := range s.Findings {
				if f.Status == check.Fail {
					failed = append(failed, f.Check+": "+f.Detail)
				}
				if f.Check == "vault account" {
					chain = f.Detail
				}
				// The cluster's PVs are the rig's, in the source region, as every location's.
				inRegion = inRegion || f.Check == "EBS volumes in "+srcRegion && f.Status == check.Pass
			}
		}
		if !inRegion {
			r.t.Errorf("check --location %s: no passed line \"EBS volumes in %s\"", l.name, srcRegion)
		}
		if want := "assumed role velero-vault via IRSA web identity"; l.name == vslNameVault && !strings.Contains(chain, want) {
			r.t.Errorf("check --location %s: the vault account's line %q does not say %q", l.name, chain, want)
		}
		switch {
		case l.name == vslNameBad && !slices.ContainsFunc(failed, func(s string) bool { return strings.Contains(s, "AuthFailure") }):
			r.t.Errorf("check --location %s: no failed line names AuthFailure: %q", l.name, failed)
		case l.name != vslNameBad && len(failed) > 0:
			r.t.Errorf("check --location %s: failed lines %q, want none", l.name, failed)
		}
	}
	after := sim.stats()
	for _, a := range mutatingActions {
		if n := after.Total(a, "ok") - before.Total(a, "ok"); n != 0 {
			r.t.Errorf("%d %s requests ran while the checks did, want none", n, a)
		}
	}
	if after.Total("", "DryRunOperation") == before.Total("", "DryRunOperation") {
		r.t.Error("the checks made no dry run")
	}
}

// runCheck runs the check for one location with --output and returns its standard output and
// exit status; its standard error is logged.
func (r *rig) runCheck(loc, output string) (string, int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.pluginDir, pluginBin), check.Command,
		"--kubeconfig", r.kubeconfig, "--namespace", veleroNS, "--location", loc, "--output", output)
	cmd.Env = append(inheritedEnv(), r.serverEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stderr.Len() > 0 {
		r.saw("check --location %s --output %s, standard error:\n%s", loc, output, indent(stderr.String()))
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), exit.ExitCode()
	case err != nil:
		r.t.Fatalf("running the check: %v\n%s", err, stderr.String())
	}
	return stdout.String(), 0
}
