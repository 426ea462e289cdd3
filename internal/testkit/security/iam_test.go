package security

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/fixture"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// policy is the part of an IAM policy document the test reads.
type policy struct {
	Statement []struct {
		Sid    string
		Effect string
		Action []string
	}
}

var jsonBlock = regexp.MustCompile("(?s)```json\n(.*?)```")

// The Sids of the README's policy statements: the plugin's own, and those a vault adds in the
// source account and needs in the vault account.
const (
	sidPlugin       = "EBSSnapshotsCopiesRestores"
	sidVaultSharing = "VaultSharing"
	sidVaultCopies  = "VaultCopies"
)

// readmeEC2Actions returns the EC2 actions the README's policy statements with these Sids allow,
// without "ec2:".
func readmeEC2Actions(t *testing.T, sids ...string) []string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, m := range jsonBlock.FindAllSubmatch(b, -1) {
		var p policy
		if json.Unmarshal(m[1], &p) != nil || len(p.Statement) == 0 {
			continue
		}
		for _, s := range p.Statement {
			if !slices.Contains(sids, s.Sid) {
				continue
			}
			for _, a := range s.Action {
				if name, ok := strings.CutPrefix(a, "ec2:"); ok && s.Effect == "Allow" {
					if strings.ContainsAny(name, "*?") {
						t.Fatalf("the README's policy allows %q: a wildcard is not least privilege", a)
					}
					actions = append(actions, name)
				}
			}
		}
	}
	if len(actions) == 0 {
		t.Fatalf("no IAM policy statement %v with EC2 actions in README.md", sids)
	}
	return actions
}

// smallVolumeGiB is the size of the IAM runs' volumes: they initialize in about 3 s at 300 MiB/s.
const smallVolumeGiB = 1

// waitForInitialization is the locations' config for restores that wait until EC2 reports
// their volumes initialized at a provisioned rate, as ec2:DescribeVolumeStatus lets them.
var waitForInitialization = map[string]string{model.ConfigVolumeInitializationRate: "300", model.ConfigWaitForVolumeInitialization: "true"}

// TestIAMPolicyIsExactlyWhatThePluginNeeds runs a backup with copies (more copies than EC2
// slots, so some are queued), a restore in the copy region that waits for its volumes'
// initialization (its location read through the Kubernetes API, as in a cluster), and the
// deletion with the simulator allowing only the README's EC2 actions: the run is clean. Then,
// for each action, with that one denied: the run fails or leaves snapshots behind.
func TestIAMPolicyIsExactlyWhatThePluginNeeds(t *testing.T) {
	actions := readmeEC2Actions(t, sidPlugin)
	t.Logf("README policy: %v", actions)
	run := func(t *testing.T, allowed []string) *rig.Result {
		cfg := rig.FastConfig(1)
		cfg.AllowedActions = allowed
		cfg.CopyLimit = 1 // queued copies: the plugin clears their marks with DeleteTags
		env := &rig.Env{Plugin: built, LogDir: t.TempDir(), SyncPeriod: syncPeriod, KubeAPI: true}
		r, err := env.NewRig("iam", cfg, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.PVs = fixture.Fleet{Region: rig.SourceRegion, Count: 2, SizeGiB: smallVolumeGiB}.Seed(r.Sim)
		return cycle{rig: r, opTimeout: 8 * time.Second, extra: waitForInitialization}.run(t.Context())
	}
	t.Run("README policy", func(t *testing.T) {
		if res := run(t, actions); !res.OK() {
			t.Fatalf("the run fails with the README's policy: %s", res.Summary())
		}
	})
	for _, denied := range actions {
		t.Run("without "+denied, func(t *testing.T) {
			allowed := slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return a == denied })
			res := run(t, allowed)
			if res.OK() {
				t.Fatalf("the run is clean without ec2:%s: the policy grants more than the plugin needs", denied)
			}
			t.Logf("without ec2:%s: %d of %d operations failed, %d leaked; first problem: %s", denied, res.Failed,
				res.Operations, res.Leaked, first(res.Problems))
		})
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return s[0]
}
