//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/install"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/readme"
)

const (
	// upstreamProvider is the provider `velero install` gives its VolumeSnapshotLocation for
	// the upstream AWS plugin (--provider aws).
	upstreamProvider = "aws"
	// upstreamBackups is how many backups of account A's namespace run once the upstream
	// location is moved over: Velero orders a backup's locations anew each time (Go map
	// order), so a fix that did not hold would show in about every other one.
	upstreamBackups = 3
	// namedBackup names only this plugin's location and backs up no volume: Velero records
	// the locations it added to it.
	namedBackup = "e2e-upstream-named"
)

// existingUpstreamLocation is an existing install's upstream VolumeSnapshotLocation beside this
// plugin's: the one `velero install` makes (its name, provider aws, no credential of its own).
// Velero adds it to a backup that names only this plugin's location; `check` fails naming it,
// its fix holding the README's command; the README's move is run as written (kubectl, in a
// shell); then check passes and upstreamBackups backups of account A's volumes complete, each
// listing only this plugin's location, with every source this plugin's and a completed copy of
// every volume. Last, the backups and the moved location are deleted, as the later steps expect.
func (r *rig) existingUpstreamLocation(sim simClient) {
	ctx := context.Background()
	start := time.Now()
	upstream := install.VolumeSnapshotLocation(veleroNS, upstreamProvider, map[string]string{"region": srcRegion})
	r.step("creating VolumeSnapshotLocation %s (provider %s, region %s) as velero install makes it, beside %s", upstream.Name, upstreamProvider, srcRegion, vslName)
	must(r.t, r.c.Create(ctx, upstream))

	r.step("velero backup create %s --include-namespaces e2e-smoke --volume-snapshot-locations %s (no volume)", namedBackup, vslName)
	r.mustVelero("backup", "create", namedBackup, "--include-namespaces", "e2e-smoke", "--volume-snapshot-locations", vslName)
	b := r.waitBackupDone(namedBackup, 3*time.Minute, nil)
	r.saw("backup %s ended %s; Velero recorded its VolumeSnapshotLocations %v", namedBackup, b.Status.Phase, b.Spec.VolumeSnapshotLocations)
	if b.Status.Phase != velerov1.BackupPhaseCompleted {
		r.t.Errorf("backup %s ended %s, want Completed: %v", namedBackup, b.Status.Phase, b.Status.ValidationErrors)
	}
	if !slices.Contains(b.Spec.VolumeSnapshotLocations, upstream.Name) {
		r.t.Errorf("Velero did not add %s to a backup naming only %s: %v", upstream.Name, vslName, b.Spec.VolumeSnapshotLocations)
	}

	fix := r.readmeUpstreamMove(upstream.Name)
	r.step("velero-plugin-for-aws-async check --location %s, with %s beside it", vslName, upstream.Name)
	text, code := r.runCheck(vslName, "text")
	r.saveLog("check-upstream-location", text)
	r.saw("check --location %s: exit status %d\n%s", vslName, code, indent(text))
	if code != check.ExitProblems {
		r.t.Errorf("check with %s beside %s: exit status %d, want %d", upstream.Name, vslName, code, check.ExitProblems)
	}
	out, _ := r.runCheck(vslName, "json")
	var rep check.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		r.t.Fatalf("check --output json: %v\n%s", err, out)
	}
	named := false
	for _, s := range rep.Sections {
		for _, f := range s.Findings {
			if f.Status == check.Fail && strings.Contains(f.Check, veleroNS+"/"+upstream.Name) {
				named = true
				if !strings.Contains(f.Fix, fix) {
					r.t.Errorf("check's fix for %s does not give the README's command %q: %s", upstream.Name, fix, f.Fix)
				}
			}
		}
	}
	if !named {
		r.t.Errorf("no failed line of check names %s/%s", veleroNS, upstream.Name)
	}

	r.step("the README's move, as written: %s", fix)
	r.saw("%s", strings.TrimSpace(r.shell(fix)))
	var moved velerov1.VolumeSnapshotLocation
	must(r.t, r.c.Get(ctx, client.ObjectKey{Namespace: veleroNS, Name: upstream.Name}, &moved))
	r.saw("VolumeSnapshotLocation %s: provider %s", moved.Name, moved.Spec.Provider)
	if text, code := r.runCheck(vslName, "text"); code != check.ExitOK {
		r.t.Errorf("check after the README's move: exit status %d, want %d\n%s", code, check.ExitOK, text)
	}

	var names []string
	for i := 1; i <= upstreamBackups; i++ {
		name := fmt.Sprintf("e2e-upstream-%d", i)
		names = append(names, name)
		r.volumeBackup(sim, r.mainBackup(name, ""))
		b, err := r.getBackup(name)
		if err != nil {
			r.t.Fatal(err)
		}
		if !slices.Equal(b.Spec.VolumeSnapshotLocations, []string{vslName}) {
			r.t.Errorf("backup %s: Velero recorded the locations %v, want only %s", name, b.Spec.VolumeSnapshotLocations, vslName)
		}
		src, _ := backupSnapshots(sim, r.acctA().ID, name)
		for _, s := range src {
			if s.Tags[model.TagCreateToken] == "" {
				r.t.Errorf("backup %s: source %s of volume %s was not taken by this plugin (no %s): %v", name, s.ID, s.VolumeID, model.TagCreateToken, s)
			}
		}
	}
	r.deleteBackups(sim, append(names, namedBackup)...)
	r.step("deleting VolumeSnapshotLocation %s, which the later steps do not have", upstream.Name)
	must(r.t, r.c.Delete(ctx, &moved))
	r.saw("existing-upstream-location took %s", time.Since(start).Round(time.Second))
}

// readmeUpstreamMove is the README's one command that patches the upstream location, as written.
func (r *rig) readmeUpstreamMove(name string) string {
	src, err := os.ReadFile(filepath.Join(r.repoRoot, "README.md"))
	if err != nil {
		r.t.Fatal(err)
	}
	cmds, err := readme.Commands(string(src), "kubectl")
	if err != nil {
		r.t.Fatal(err)
	}
	var moves []string
	for _, c := range cmds {
		if strings.Contains(c, " patch volumesnapshotlocation "+name+" ") {
			moves = append(moves, c)
		}
	}
	if len(moves) != 1 {
		r.t.Fatalf("the README has %d kubectl commands patching VolumeSnapshotLocation %s, want one: %q", len(moves), name, moves)
	}
	return moves[0]
}

// shell runs a command line in bash, as a user pastes it, against the rig's cluster, with the
// rig's tools (kubectl) first on PATH; it fails the test if the command fails.
func (r *rig) shell(line string) string {
	r.t.Helper()
	out, err := r.run(append(r.cliEnv(), "PATH="+r.binDir+string(os.PathListSeparator)+os.Getenv("PATH")), "bash", "-c", line)
	if err != nil {
		r.t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return out
}
