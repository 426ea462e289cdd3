package readme

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/commands"
)

// TestREADMESubcommandLines: every line running one of the plugin binary's commands (check,
// audit, drill) passes only flags that command has, and names only backups, schedules and
// locations the README made before it: a user who copies the README in order can run it.
func TestREADMESubcommandLines(t *testing.T) {
	_, blocks := readmeDoc(t)
	for _, p := range subcommandProblems(blocks) {
		t.Error(p)
	}
}

// subcommandProblems: the flags of each subcommand line are its command's, and its --backup,
// --schedule and --location name a backup (velero backup create), a schedule (velero schedule
// create) and a location the README makes, the first two before the line.
func subcommandProblems(blocks []block) []string {
	locs, _, _ := readmeLocations(blocks)
	var problems []string
	made := map[string][]string{"backup": nil, "schedule": nil, "location": nil}
	for _, l := range locs {
		made["location"] = append(made["location"], l.name)
	}
	for _, cmd := range shellCommands(blocks) {
		ws := words(cmd)
		if len(ws) >= 4 && ws[0] == "velero" && ws[2] == "create" && (ws[1] == "backup" || ws[1] == "schedule") {
			made[ws[1]] = append(made[ws[1]], ws[3])
			continue
		}
		name, args, ok := pluginCommand(ws)
		if !ok {
			continue
		}
		flags := subcommandFlags(name)
		if flags == nil {
			continue // version, --help: no flags
		}
		for j, w := range args {
			f, ok := strings.CutPrefix(w, "--")
			if !ok {
				continue
			}
			f, _, _ = strings.Cut(f, "=")
			if !slices.Contains(flags, f) {
				problems = append(problems, fmt.Sprintf("`%s`: %s has no flag --%s", cmd, name, f))
				continue
			}
			if names, named := made[f]; named && j+1 < len(args) && !slices.Contains(names, args[j+1]) {
				problems = append(problems, fmt.Sprintf("`%s`: --%s %s names a %s the README does not make before (it makes %v)", cmd, f, args[j+1], f, names))
			}
		}
	}
	return problems
}

// pluginCommand finds in a command line's words the plugin binary's command and its arguments.
func pluginCommand(ws []string) (name string, args []string, ok bool) {
	i := slices.IndexFunc(ws, func(w string) bool { return strings.HasSuffix(w, "/"+cli.BinaryName) || w == cli.BinaryName })
	if i < 0 || i+1 >= len(ws) {
		return "", nil, false
	}
	return ws[i+1], ws[i+2:], true
}

// usageFlag finds the flags in a command's usage.
var usageFlag = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z][a-z0-9-]*)`)

// subcommandFlags lists the flags of the plugin binary's command name, from its --help; nil for
// a command without flags of its own, or none.
var subcommandFlags = func() func(string) []string {
	var mu sync.Mutex
	known := map[string][]string{}
	return func(name string) []string {
		mu.Lock()
		defer mu.Unlock()
		if f, ok := known[name]; ok {
			return f
		}
		var usage strings.Builder
		commands.Run(context.Background(), []string{name, "--help"}, io.Discard, &usage)
		var flags []string
		for _, m := range usageFlag.FindAllStringSubmatch(usage.String(), -1) {
			flags = append(flags, m[1])
		}
		known[name] = flags
		return flags
	}
}()

// Each subcommand-line rule failing on the defect it guards against, and passing on what the
// README does.
func TestSubcommandRulesCatch(t *testing.T) {
	const ebs = "```sh\nvelero snapshot-location create ebs --provider velero-async.io/aws --config region=us-east-1\n```\n" +
		"```yaml\napiVersion: velero.io/v1\nkind: VolumeSnapshotLocation\nmetadata: {name: ebs, namespace: velero}\nspec:\n  provider: velero-async.io/aws\n  config: {region: us-east-1}\n```\n"
	const exec = "kubectl -n velero exec deploy/velero -c velero -- /plugins/velero-plugin-for-aws-async "
	for _, tc := range []struct {
		name, md, want string
	}{
		{name: "a drill of the backup made before, through the location made",
			md: ebs + "```sh\nvelero backup create nightly --snapshot-volumes\n" + exec + "drill --backup nightly --location ebs --confirm --max-volumes 5\n```\n"},
		{name: "a drill of the schedule made before", md: "```sh\nvelero schedule create nightly-b --schedule \"0 2 * * *\"\n" + exec + "drill --schedule nightly-b --confirm\n```\n"},
		{name: "a drill of a backup the README never made", md: "```sh\nvelero backup create nightly\n" + exec + "drill --backup nightly-20260301020000 --confirm\n```\n",
			want: "--backup nightly-20260301020000 names a backup the README does not make before"},
		{name: "a drill of a backup made only after it", md: "```sh\n" + exec + "drill --backup nightly --confirm\nvelero backup create nightly\n```\n",
			want: "--backup nightly names a backup"},
		{name: "a drill through a location never made", md: ebs + "```sh\nvelero backup create nightly\n" + exec + "drill --backup nightly --location recovery --confirm\n```\n",
			want: "--location recovery names a location"},
		{name: "a flag the command does not have", md: "```sh\n" + exec + "audit --since 1d\n```\n", want: "audit has no flag --since"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := splitBlocks("x.md", tc.md)
			if err != nil {
				t.Fatal(err)
			}
			problems := subcommandProblems(blocks)
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Fatalf("unexpected problems: %q", problems)
			case tc.want != "" && (len(problems) == 0 || !strings.Contains(problems[0], tc.want)):
				t.Fatalf("problems %q, want one with %q", problems, tc.want)
			}
		})
	}
}
