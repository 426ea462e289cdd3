//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/audittest"
)

const (
	// subcommandTimeout bounds one run of audit or drill.
	subcommandTimeout = 5 * time.Minute
	// drillLocation is account A's location in the copy region, which the drill restores through.
	drillLocation = "aws-async-west"
	// leftBackup names the deleted backup the planted orphan belongs to.
	leftBackup = "e2e-left-behind"
	// snapshotWait bounds the wait for the planted snapshot to complete in the simulator.
	snapshotWait = 2 * time.Minute
)

// auditAndDrill runs `audit` and `drill` against the real Velero server with backup Completed
// with its copies: the audit shows it DR-ready, and the plugin tagged its snapshots with this
// install; a snapshot left behind by a deleted backup is found and deleted by
// --delete-orphans --confirm, and nothing else; a drill restores the backup in the copy region
// and leaves nothing, and audit shows its result.
func (r *rig) auditAndDrill(sim simClient, backup string) {
	acct := r.acctA()
	r.step("velero-plugin-for-aws-async audit --location %s", vslName)
	rep, _ := r.runAudit("--location", vslName, "--orphan-grace", "0s")
	line, ok := backupLine(rep, backup)
	switch {
	case !ok:
		r.t.Fatalf("audit shows no backup %s", backup)
	case !line.DRReady:
		r.t.Errorf("audit shows backup %s not DR-ready: %+v", backup, line)
	case rep.Install == "":
		r.t.Errorf("audit read no install identity: %v", rep.Problems)
	}
	var volumeID string
	theirs := map[string]bool{}
	for _, region := range []string{srcRegion, copyRegion} {
		for _, s := range live(sim.listIn("snapshots", region, acct.ID)) {
			if s.Tags[model.TagBackup] != backup {
				continue
			}
			theirs[s.ID] = true
			if region == srcRegion {
				volumeID = s.VolumeID
			}
			if got := s.Tags[model.TagInstall]; got != rep.Install {
				r.t.Errorf("snapshot %s of %s carries install %q, want %q", s.ID, backup, got, rep.Install)
			}
		}
	}

	r.step("a snapshot left behind by deleted backup %s, then audit --delete-orphans --confirm", leftBackup)
	in := &ec2.CreateSnapshotInput{VolumeId: aws.String(volumeID),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: []types.Tag{
			{Key: aws.String(model.TagBackup), Value: aws.String(leftBackup)}, {Key: aws.String(model.TagPV), Value: aws.String("pv-left")},
			{Key: aws.String(model.TagVolumeType), Value: aws.String("gp3")}, {Key: aws.String(model.TagRecorded), Value: aws.String("returned")},
			{Key: aws.String(model.TagInstall), Value: aws.String(rep.Install)},
			{Key: aws.String(velerov1.StorageLocationLabel), Value: aws.String("default")}}}}}
	out, err := r.ec2As(acct, srcRegion).CreateSnapshot(context.Background(), in)
	for deadline := time.Now().Add(snapshotWait); ec2api.Code(err) == ec2api.CodeSnapshotCreationPerVolumeRateExceeded && time.Now().Before(deadline); {
		time.Sleep(time.Second) // EC2 takes one snapshot of a volume per 15 s: the backup's was just taken
		out, err = r.ec2As(acct, srcRegion).CreateSnapshot(context.Background(), in)
	}
	if err != nil {
		r.t.Fatalf("leaving a snapshot behind: %v", err)
	}
	left := aws.ToString(out.SnapshotId)
	r.waitCompleted(sim, acct, left) // a pending snapshot's deletion takes effect only once it completes
	found, code := r.runAudit("--location", vslName, "--orphan-grace", "0s")
	if ids := audittest.OrphanIDs(found); len(ids) != 1 || ids[0] != left || code != audit.ExitFindings {
		r.t.Errorf("audit: orphans %v, exit %d; want only %s, exit %d", ids, code, left, audit.ExitFindings)
	}
	deleted, code := r.runAudit("--location", vslName, "--orphan-grace", "0s", "--delete-orphans", "--confirm")
	if len(deleted.Deletions) != 1 || !deleted.Deletions[0].Deleted || deleted.Deletions[0].ID != left || code != audit.ExitOK {
		r.t.Errorf("audit --delete-orphans --confirm: deletions %+v, exit %d; want %s deleted, exit %d", deleted.Deletions, code, left, audit.ExitOK)
	}
	for _, s := range live(sim.listIn("snapshots", srcRegion, acct.ID)) {
		if s.ID == left {
			r.t.Errorf("the snapshot left behind, %s, is still there", left)
		}
		delete(theirs, s.ID)
	}
	for _, s := range live(sim.listIn("snapshots", copyRegion, acct.ID)) {
		delete(theirs, s.ID)
	}
	for id := range theirs {
		r.t.Errorf("snapshot %s of %s is gone after the orphans' deletion", id, backup)
	}

	r.step("velero-plugin-for-aws-async drill --backup %s --location %s --record --confirm", backup, drillLocation)
	ctx := context.Background()
	west := vsl(vslCred{drillLocation, secretA}, copyRegion, "")
	must(r.t, r.c.Create(ctx, west))
	defer func() { must(r.t, r.c.Delete(ctx, west)) }()
	before := len(live(sim.listIn("volumes", copyRegion, acct.ID)))
	text, code := r.runSubcommand(drill.Command, "--backup", backup, "--location", drillLocation, "--record", "--confirm")
	r.saveLog("drill-"+backup, text)
	r.saw("drill: exit status %d\n%s", code, indent(text))
	if code != drill.ExitPassed {
		r.t.Errorf("drill: exit status %d, want %d", code, drill.ExitPassed)
	}
	vols := live(sim.listIn("volumes", copyRegion, acct.ID))
	for _, v := range vols {
		if v.Tags[audit.TagDrill] != "" {
			r.t.Errorf("the drill left volume %v", v)
		}
	}
	if len(vols) != before {
		r.t.Errorf("%d volumes in %s after the drill, %d before", len(vols), copyRegion, before)
	}
	after, _ := r.runAudit("--location", vslName)
	if line, _ := backupLine(after, backup); !strings.HasPrefix(line.LastDrill, "passed") {
		r.t.Errorf("audit shows the last drill of %s as %q, want it passed", backup, line.LastDrill)
	}
}

// waitCompleted waits until the snapshot id of acct in the source region is completed.
func (r *rig) waitCompleted(sim simClient, acct awsAccount, id string) {
	r.t.Helper()
	for deadline := time.Now().Add(snapshotWait); time.Now().Before(deadline); time.Sleep(time.Second) {
		for _, s := range sim.listIn("snapshots", srcRegion, acct.ID) {
			if s.ID == id && s.State == "completed" {
				return
			}
		}
	}
	r.t.Fatalf("snapshot %s not completed after %s", id, snapshotWait)
}

// runAudit runs audit with args and --output json, and returns its report and exit status.
func (r *rig) runAudit(args ...string) (audit.Report, int) {
	r.t.Helper()
	out, code := r.runSubcommand(audit.Command, append(args, "--output", "json")...)
	var rep audit.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		r.t.Fatalf("audit %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	text, _ := json.MarshalIndent(rep, "", "  ")
	r.saw("audit %s: exit status %d\n%s", strings.Join(args, " "), code, indent(string(text)))
	return rep, code
}

// runSubcommand runs the plugin binary's subcommand against the rig's cluster, as a person
// would beside Velero, and returns its standard output and exit status.
func (r *rig) runSubcommand(name string, args ...string) (string, int) {
	r.t.Helper()
	out, _, code := r.runSubcommandAs(r.kubeconfig, name, args...)
	return out, code
}

// runSubcommandAs runs the subcommand with kubeconfig, and returns its standard output and
// error and its exit status.
func (r *rig) runSubcommandAs(kubeconfig, name string, args ...string) (string, string, int) {
	r.t.Helper()
	return r.runPlugin(r.serverEnv, name, append([]string{"--kubeconfig", kubeconfig, "--namespace", veleroNS}, args...)...)
}

// runPlugin runs the plugin binary's subcommand name with args in the environment env (after
// the rig's own), and returns its standard output and error and its exit status.
func (r *rig) runPlugin(env []string, name string, args ...string) (string, string, int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), subcommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.pluginDir, pluginBin), append([]string{name}, args...)...)
	cmd.Env = append(inheritedEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stderr.Len() > 0 {
		r.saw("%s, standard error:\n%s", name, indent(stderr.String()))
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		r.t.Fatalf("running %s: %v\n%s", name, err, stderr.String())
	}
	return stdout.String(), stderr.String(), 0
}

func backupLine(rep audit.Report, name string) (audit.BackupLine, bool) {
	for _, b := range rep.Backups {
		if b.Name == name {
			return b, true
		}
	}
	return audit.BackupLine{}, false
}
