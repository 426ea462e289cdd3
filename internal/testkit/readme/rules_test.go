package readme

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	serverconfig "github.com/vmware-tanzu/velero/pkg/cmd/server/config"
	"github.com/vmware-tanzu/velero/pkg/install"
	"sigs.k8s.io/yaml"
)

// The README's copy-paste rules: what a user copies in order must work together.
const (
	// maxLines bounds the README's length: a user reads it, a test report goes elsewhere.
	maxLines = 700
	// mainLocation is the name of this plugin's VolumeSnapshotLocation in every example; a
	// recovery cluster's location has the same name, another account's starts with it.
	mainLocation = "ebs"
	// pluginImage is the name this plugin's image is pushed under.
	pluginImage = "velero-plugin-for-aws-async"
	// imageLayout is the OCI layout `make image` writes.
	imageLayout = "_output/image"
)

// publishedImages are the images of others that a registry publishes: the README may name them
// without building them.
var publishedImages = []string{"velero/velero", "velero/velero-plugin-for-aws"}

// installServerFlags are the Velero server flags that `velero install` (v1.18.3,
// pkg/cmd/cli/install/install.go) sets: a CLI user may be told to pass them at install.
var installServerFlags = []string{"concurrent-backups", "default-repo-maintain-frequency", "default-snapshot-move-data",
	"default-volumes-to-fs-backup", "disable-informer-cache", "garbage-collection-frequency", "item-block-worker-count",
	"restore-only", "schedule-skip-immediately", "uploader-type"}

// testReport matches phrasing that belongs to a test report, not to a user's README.
var testReport = regexp.MustCompile(`(?i)\bthis round\b|\bround's\b|\bissue \d+|\bseeds? (a|per) second|\bfinal code\b|\bfindings history\b`)

// readmeDoc is the README read once per test.
func readmeDoc(t *testing.T) (string, []block) {
	t.Helper()
	src, err := os.ReadFile(readmePath(t))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := splitBlocks("README.md", string(src))
	if err != nil {
		t.Fatal(err)
	}
	return string(src), blocks
}

// TestREADMECopyPasteRules runs every rule on the repository's README (and Makefile).
func TestREADMECopyPasteRules(t *testing.T) {
	src, blocks := readmeDoc(t)
	makefile, err := os.ReadFile(filepath.Join(filepath.Dir(readmePath(t)), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for name, problems := range map[string][]string{
		"the image pushed is the image make image builds, and the one installed": imageProblems(string(makefile), blocks),
		"one location name, ebs, and recovery locations copy back":               locationProblems(blocks),
		"a server flag comes with the kubectl patch that sets it":                serverFlagProblems(src, blocks, veleroServerFlags(t)),
		"a user's README, not a test report":                                     lengthAndToneProblems(src),
		"every link leads somewhere":                                             linkProblems(src, filepath.Dir(readmePath(t))),
		"Helm values use the chart's keys":                                       helmValuesProblems(blocks),
		"no upstream location: none installed, an existing one moved over":       upstreamLocationProblems(blocks),
	} {
		t.Run(name, func(t *testing.T) {
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// veleroServerFlags are the flags of `velero server`, from Velero's own flag set.
func veleroServerFlags(t *testing.T) []string {
	t.Helper()
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	serverconfig.GetDefaultConfig().BindFlags(fs)
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if len(names) < 10 {
		t.Fatalf("Velero's server config binds %d flags: has its flag set moved?", len(names))
	}
	return names
}

// flagValue returns the value of --name (as "--name value" or "--name=value") in a command's words.
func flagValue(ws []string, name string) (string, bool) {
	for i, w := range ws {
		if v, ok := strings.CutPrefix(w, "--"+name+"="); ok {
			return v, true
		}
		if w == "--"+name && i+1 < len(ws) {
			return ws[i+1], true
		}
	}
	return "", false
}

var (
	imageTagDefault = regexp.MustCompile(`(?m)^IMAGE_TAG\s*\?=\s*(\S+)\s*$`)
	imageTarget     = regexp.MustCompile(`(?m)^image:.*\n((?:\t.*\n?)+)`)
	layoutRef       = regexp.MustCompile(`oci:` + regexp.QuoteMeta(imageLayout) + `:(\S+)`)
	pluginRef       = regexp.MustCompile(`[\w./-]*` + regexp.QuoteMeta(pluginImage) + `:[\w.-]+`)
	// defaultLocations is the server flag naming default locations, in a command or in a patch's value.
	defaultLocations = regexp.MustCompile(`--default-volume-snapshot-locations[= ]([\w.:/,-]+)`)
)

// imageProblems: the tag `make image` gives the layout (the Makefile's IMAGE_TAG, or the README's
// override) is the tag the push lines read and write, and every image of this plugin the README
// installs is the one pushed; other images are published ones.
func imageProblems(makefile string, blocks []block) []string {
	var problems []string
	m := imageTagDefault.FindStringSubmatch(makefile)
	recipe := imageTarget.FindStringSubmatch(makefile)
	if m == nil || recipe == nil || !strings.Contains(recipe[1], "-tag $(IMAGE_TAG)") {
		return []string{"the Makefile has no `IMAGE_TAG ?=` default, or its image target does not name the layout's index -tag $(IMAGE_TAG)"}
	}
	built := ""
	var pushed []string
	var installed []string
	for _, c := range shellCommands(blocks) {
		ws := words(c)
		switch {
		case len(ws) >= 2 && ws[0] == "make" && slices.Contains(ws, "image"):
			built = m[1]
			for _, w := range ws {
				if v, ok := strings.CutPrefix(w, "IMAGE_TAG="); ok {
					built = v
				}
			}
		case len(ws) >= 4 && ws[0] == "crane" && ws[1] == "push":
			if ws[2] != imageLayout {
				problems = append(problems, fmt.Sprintf("`%s` pushes %s, not the layout make image writes (%s)", c, ws[2], imageLayout))
			}
			pushed = append(pushed, ws[3])
		case len(ws) >= 2 && ws[0] == "velero" && ws[1] == "plugin" && len(ws) >= 4:
			installed = append(installed, ws[3])
		case len(ws) >= 2 && ws[0] == "velero" && ws[1] == "install":
			if v, ok := flagValue(ws, "plugins"); ok {
				installed = append(installed, strings.Split(v, ",")...)
			}
		}
	}
	all := blocksText(blocks, "")
	for _, b := range blocks {
		if b.lang == "yaml" {
			installed = append(installed, yamlImages(b)...)
		}
	}
	if built == "" || len(pushed) == 0 {
		return append(problems, "the README has no `make image` line and `crane push` line in its sh blocks: how does a user get the image?")
	}
	dest := pushed[0]
	if _, tag, _ := strings.Cut(lastSegment(dest), ":"); tag != built {
		problems = append(problems, fmt.Sprintf("`crane push` tags %s, but the README's `make image` names the layout's index %s", dest, built))
	}
	for _, ref := range layoutRef.FindAllStringSubmatch(all, -1) {
		if ref[1] != built {
			problems = append(problems, fmt.Sprintf("%s reads the layout's index %s, but the README's `make image` names it %s", ref[0], ref[1], built))
		}
	}
	for _, ref := range pluginRef.FindAllString(all, -1) {
		if ref != dest && !strings.HasPrefix(ref, "oci:") {
			problems = append(problems, fmt.Sprintf("the README names the image %s, but pushes %s", ref, dest))
		}
	}
	for _, img := range installed {
		repo := img
		if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
			repo = img[:i]
		}
		if img != dest && !slices.Contains(publishedImages, repo) {
			problems = append(problems, fmt.Sprintf("the README installs %s, which nothing publishes: the image pushed is %s", img, dest))
		}
	}
	return problems
}

func lastSegment(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

// blocksText is the text of every block of language lang ("" for all).
func blocksText(blocks []block, lang string) string {
	var sb strings.Builder
	for _, b := range blocks {
		if lang == "" || b.lang == lang {
			sb.WriteString(strings.Join(b.body, "\n"))
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

// yamlDocs parses the documents of a YAML block, leaving out those that do not parse (the
// blocks' own test reports them).
func yamlDocs(b block) []map[string]any {
	var out []map[string]any
	for _, doc := range strings.Split(strings.Join(b.body, "\n"), "\n---") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			continue
		}
		var m map[string]any
		if json.Unmarshal(j, &m) == nil && m != nil {
			out = append(out, m)
		}
	}
	return out
}

// yamlImages are the images of a YAML block: Helm values' image (repository and tag) and
// initContainers.
func yamlImages(b block) []string {
	var out []string
	for _, doc := range yamlDocs(b) {
		if img, ok := doc["image"].(map[string]any); ok {
			repo, _ := img["repository"].(string)
			tag, _ := img["tag"].(string)
			out = append(out, repo+":"+tag)
		}
		ics, _ := doc["initContainers"].([]any)
		for _, ic := range ics {
			c, _ := ic.(map[string]any)
			if s, ok := c["image"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// location is one VolumeSnapshotLocation of this provider the README makes.
type location struct {
	name   string
	config map[string]string
	where  string
}

// readmeLocations are this provider's locations the README makes (manifests, Helm values,
// `velero snapshot-location create`), in order, the defaults it sets and the names backups use.
func readmeLocations(blocks []block) (locs []location, defaults, used []string) {
	for _, b := range blocks {
		switch b.lang {
		case "yaml", "yml":
			for _, doc := range yamlDocs(b) {
				if doc["kind"] == "VolumeSnapshotLocation" {
					j, _ := json.Marshal(doc)
					var vsl velerov1.VolumeSnapshotLocation
					if json.Unmarshal(j, &vsl) == nil && vsl.Spec.Provider == provider {
						locs = append(locs, location{vsl.Name, vsl.Spec.Config, fmt.Sprintf("README.md:%d", b.line)})
					}
				}
				conf, _ := doc["configuration"].(map[string]any)
				vsls, _ := conf["volumeSnapshotLocation"].([]any)
				for _, v := range vsls {
					l, _ := v.(map[string]any)
					if l["provider"] != provider {
						continue
					}
					name, _ := l["name"].(string)
					c := map[string]string{}
					cm, _ := l["config"].(map[string]any)
					for k, v := range cm {
						c[k] = fmt.Sprint(v)
					}
					locs = append(locs, location{name, c, fmt.Sprintf("README.md:%d (Helm values)", b.line)})
				}
				if d, ok := conf["defaultVolumeSnapshotLocations"].(string); ok {
					defaults = append(defaults, d)
				}
			}
		}
	}
	for _, c := range shellCommands(blocks) {
		ws := words(c)
		if len(ws) >= 4 && ws[0] == "velero" && ws[1] == "snapshot-location" && ws[2] == "create" {
			if p, _ := flagValue(ws, "provider"); p == provider {
				cfg := map[string]string{}
				v, _ := flagValue(ws, "config")
				for _, kv := range strings.Split(v, ",") {
					if k, val, ok := strings.Cut(kv, "="); ok {
						cfg[k] = val
					}
				}
				locs = append(locs, location{ws[3], cfg, "`" + c + "`"})
			}
		}
		if v, ok := flagValue(ws, "volume-snapshot-locations"); ok {
			used = append(used, strings.Split(v, ",")...)
		}
		for _, m := range defaultLocations.FindAllStringSubmatch(c, -1) {
			defaults = append(defaults, m[1])
		}
	}
	return locs, defaults, used
}

// locationProblems: the main location is `ebs` and every other one's name starts with it (so a
// reader following the README in order never ends with locations that do not belong together);
// the default is `ebs`; backups name locations the README makes; a location `ebs` in another
// region than the main one (a recovery cluster's) copies back to the main region.
func locationProblems(blocks []block) []string {
	locs, defaults, used := readmeLocations(blocks)
	if len(locs) == 0 {
		return []string{"the README makes no VolumeSnapshotLocation of provider " + provider}
	}
	var problems []string
	if locs[0].name != mainLocation {
		problems = append(problems, fmt.Sprintf("%s: the first location is %q; every example's main location is %q", locs[0].where, locs[0].name, mainLocation))
	}
	mainRegion := locs[0].config["region"]
	names := map[string]bool{}
	for _, l := range locs {
		names[l.name] = true
		if l.name != mainLocation && !strings.HasPrefix(l.name, mainLocation+"-") {
			problems = append(problems, fmt.Sprintf("%s: location %q: name it %q, or %s-… for another account's, so that the README's locations add up", l.where, l.name, mainLocation, mainLocation))
		}
		if l.name == mainLocation && l.config["region"] != mainRegion && l.config["copyToRegion"] != mainRegion {
			problems = append(problems, fmt.Sprintf("%s: the recovery location %q in %s has copyToRegion %q, not the source region %s: its deletions would leave source snapshots",
				l.where, l.name, l.config["region"], l.config["copyToRegion"], mainRegion))
		}
	}
	for _, d := range defaults {
		if d != provider+":"+mainLocation {
			problems = append(problems, fmt.Sprintf("default volume snapshot locations %q: want %s:%s", d, provider, mainLocation))
		}
	}
	for _, u := range used {
		if !names[u] {
			problems = append(problems, fmt.Sprintf("a backup names location %q, which the README never makes", u))
		}
	}
	return problems
}

// chartKeys are the keys of the vmware-tanzu/velero chart 12.1.0 (charts/velero/values.yaml)
// under the top-level keys the README's values set, to the depth the README sets them.
var chartKeys = []string{"image", "image.repository", "image.tag", "image.pullPolicy", "image.imagePullSecrets",
	"initContainers",
	"configuration", "configuration.backupStorageLocation", "configuration.volumeSnapshotLocation", "configuration.uploaderType",
	"configuration.backupSyncPeriod", "configuration.defaultBackupStorageLocation", "configuration.defaultItemOperationTimeout",
	"configuration.defaultBackupTTL", "configuration.defaultVolumeSnapshotLocations", "configuration.features",
	"configuration.itemBlockWorkerCount", "configuration.extraArgs", "configuration.extraEnvVars", "configuration.logLevel",
	"rbac", "rbac.create", "rbac.clusterAdministrator", "rbac.clusterAdministratorName",
	"serviceAccount", "serviceAccount.server", "serviceAccount.server.create", "serviceAccount.server.name",
	"serviceAccount.server.annotations", "serviceAccount.server.labels", "serviceAccount.server.imagePullSecrets",
	"serviceAccount.server.automountServiceAccountToken",
	"credentials", "credentials.useSecret", "credentials.name", "credentials.existingSecret", "credentials.secretContents",
	"credentials.extraEnvVars", "credentials.extraSecretRef"}

// chartValuesKeys are the top-level keys that make a YAML block Helm values.
var chartValuesKeys = []string{"configuration", "credentials", "serviceAccount", "initContainers"}

// helmValuesProblems: every key the README's Helm values set (blocks without apiVersion whose
// top-level keys include the chart's) is one of the chart's; maps under a key the chart leaves
// open (annotations, labels, lists of locations) are the user's.
func helmValuesProblems(blocks []block) []string {
	var problems []string
	var walk func(path string, v any, where string)
	walk = func(path string, v any, where string) {
		if !slices.Contains(chartKeys, path) {
			problems = append(problems, fmt.Sprintf("%s: Helm values key %s is not a key of chart vmware-tanzu/velero 12.1.0", where, path))
			return
		}
		m, ok := v.(map[string]any)
		if !ok || !slices.ContainsFunc(chartKeys, func(k string) bool { return strings.HasPrefix(k, path+".") }) {
			return // a value, a list, or a map the chart leaves open
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			walk(path+"."+k, m[k], where)
		}
	}
	for _, b := range blocks {
		if b.lang != "yaml" {
			continue
		}
		for _, doc := range yamlDocs(b) {
			if doc["apiVersion"] != nil || !slices.ContainsFunc(chartValuesKeys, func(k string) bool { return doc[k] != nil }) {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(doc)) {
				walk(k, doc[k], fmt.Sprintf("README.md:%d", b.line))
			}
		}
	}
	return problems
}

// installedLocation is the name `velero install` gives the upstream VolumeSnapshotLocation it
// makes unless --use-volume-snapshots=false.
var installedLocation = install.VolumeSnapshotLocation("velero", "aws", nil).Name

// upstreamLocationProblems: Velero adds a provider's only VolumeSnapshotLocation to every
// backup, so the README's `velero install` makes no upstream one (--use-volume-snapshots=false),
// and for an install that has one it moves it to this plugin: a `kubectl patch` of the location
// `velero install` makes, whose merge patch decodes, strictly, into a VolumeSnapshotLocation of
// this provider.
func upstreamLocationProblems(blocks []block) []string {
	var problems []string
	moved := false
	for _, c := range shellCommands(blocks) {
		ws := words(c)
		if len(ws) >= 2 && ws[0] == "velero" && ws[1] == "install" {
			if v, _ := flagValue(ws, "use-volume-snapshots"); v != "false" {
				problems = append(problems, fmt.Sprintf("`%s` makes an upstream VolumeSnapshotLocation, which Velero adds to every backup: pass --use-volume-snapshots=false", c))
			}
		}
		i := slices.Index(ws, "volumesnapshotlocation")
		if len(ws) < 1 || ws[0] != "kubectl" || !slices.Contains(ws, "patch") || i < 0 || i+1 >= len(ws) {
			continue
		}
		p := slices.Index(ws, "-p")
		if p < 0 || p+1 >= len(ws) || !slices.Contains(ws, "merge") {
			problems = append(problems, fmt.Sprintf("`%s`: want --type merge -p with the patch", c))
			continue
		}
		var vsl velerov1.VolumeSnapshotLocation
		dec := json.NewDecoder(strings.NewReader(ws[p+1]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&vsl); err != nil {
			problems = append(problems, fmt.Sprintf("`%s`: the patch is no VolumeSnapshotLocation: %v", c, err))
			continue
		}
		if ws[i+1] == installedLocation && vsl.Spec.Provider == provider {
			moved = true
		}
	}
	if !moved {
		problems = append(problems, fmt.Sprintf("no `kubectl patch` moves the location %s that `velero install` makes to provider %s: an existing install keeps it, and it takes EBS volumes without copies", installedLocation, provider))
	}
	return problems
}

var flagMention = regexp.MustCompile(`--([a-z][a-z0-9-]+)`)

// serverFlagProblems: a Velero server flag that `velero install` cannot set is advised only
// with a `kubectl patch` of the Deployment that sets it, and no command runs `velero server`
// (a CLI user has no such command to run). Text blocks (sample outputs) are not advice.
func serverFlagProblems(src string, blocks []block, serverFlags []string) []string {
	var problems []string
	patched := map[string]bool{}
	for _, c := range shellCommands(blocks) {
		ws := words(c)
		if len(ws) >= 2 && ws[0] == "velero" && ws[1] == "server" {
			problems = append(problems, fmt.Sprintf("`%s`: a CLI user cannot run velero server; give the kubectl patch of the Deployment's args", c))
		}
		if len(ws) >= 1 && ws[0] == "kubectl" && slices.Contains(ws, "patch") {
			for _, m := range flagMention.FindAllStringSubmatch(c, -1) {
				patched[m[1]] = true
			}
		}
	}
	advice := src
	for _, b := range blocks {
		if b.lang == "text" {
			advice = strings.Replace(advice, strings.Join(b.body, "\n"), "", 1)
		}
	}
	seen := map[string]bool{}
	for _, m := range flagMention.FindAllStringSubmatch(advice, -1) {
		f := m[1]
		if seen[f] || !slices.Contains(serverFlags, f) || slices.Contains(installServerFlags, f) || patched[f] {
			continue
		}
		seen[f] = true
		problems = append(problems, fmt.Sprintf("the README mentions the server flag --%s, which velero install cannot set, and gives no kubectl patch setting it", f))
	}
	sort.Strings(problems)
	return problems
}

// lengthAndToneProblems: at most maxLines lines, and nothing that reads as a test report.
func lengthAndToneProblems(src string) []string {
	var problems []string
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	if len(lines) > maxLines {
		problems = append(problems, fmt.Sprintf("%d lines, more than %d: move engineering detail to internal/testkit/README.md", len(lines), maxLines))
	}
	for i, l := range lines {
		if m := testReport.FindString(l); m != "" {
			problems = append(problems, fmt.Sprintf("README.md:%d: %q reads as a test report", i+1, m))
		}
	}
	return problems
}

var (
	heading      = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	anchorDrop   = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	markdownLink = regexp.MustCompile(`\]\(([^)\s]*)\)`)
)

// anchor is the fragment GitHub gives a heading: lower case, punctuation dropped, spaces as dashes.
func anchor(h string) string {
	return strings.ReplaceAll(anchorDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
}

// linkProblems: every in-page link names a heading, and every relative link a file under root
// (and, with a fragment, a heading of that Markdown file).
func linkProblems(src, root string) []string {
	anchors := func(md string) map[string]bool {
		out := map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(md, -1) {
			out[anchor(m[1])] = true
		}
		return out
	}
	own := anchors(src)
	var problems []string
	for _, m := range markdownLink.FindAllStringSubmatch(src, -1) {
		target := m[1]
		if strings.Contains(target, "://") || target == "" {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		headings := own
		if file != "" {
			b, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				problems = append(problems, fmt.Sprintf("link %s: no such file", target))
				continue
			}
			headings = anchors(string(b))
		}
		if frag != "" && !headings[frag] {
			problems = append(problems, fmt.Sprintf("link %s: no heading #%s", target, frag))
		}
	}
	return problems
}

// TestCopyPasteRulesCatch shows each rule failing on the defect it guards against, and passing
// on the setup the README gives.
func TestCopyPasteRulesCatch(t *testing.T) {
	const makefile = "IMAGE_TAG  ?= dev\nimage:\n\tgo run ./internal/cmd/image -out $(BIN)/image -tag $(IMAGE_TAG)\n"
	const push = "```sh\nmake image IMAGE_TAG=v1\ncrane push _output/image reg.example.com/velero-plugin-for-aws-async:v1\n```\n"
	const ebs = "```yaml\napiVersion: velero.io/v1\nkind: VolumeSnapshotLocation\nmetadata: {name: ebs, namespace: velero}\nspec:\n  provider: velero-async.io/aws\n  config: {region: us-east-1, copyToRegion: us-west-2}\n```\n"
	serverFlags := []string{"default-item-operation-timeout", "default-volume-snapshot-locations", "item-block-worker-count"}
	tests := []struct {
		name string
		md   string
		rule func(md string, blocks []block) []string
		want string // a substring of the first problem; "" for none
	}{
		{name: "image built, pushed and installed under one tag", rule: withMakefile(makefile),
			md: push + "```sh\nvelero plugin add reg.example.com/velero-plugin-for-aws-async:v1 --confirm\n```\n"},
		{name: "push line reads another index than make image names", rule: withMakefile(makefile),
			md:   "```sh\nmake image\ncrane push _output/image reg.example.com/velero-plugin-for-aws-async:v0.1.0\n```\n",
			want: "names the layout's index dev"},
		{name: "skopeo reads an index make image never wrote", rule: withMakefile(makefile),
			md:   push + "or `skopeo copy --all oci:_output/image:v0.1.0 docker://reg.example.com/velero-plugin-for-aws-async:v1`\n```sh\nskopeo copy --all oci:_output/image:v0.1.0 docker://reg.example.com/velero-plugin-for-aws-async:v1\n```\n",
			want: "oci:_output/image:v0.1.0 reads the layout's index v0.1.0"},
		{name: "plugin add names an image nothing publishes", rule: withMakefile(makefile),
			md:   push + "```sh\nvelero plugin add velero-async/velero-plugin-for-aws:v0.1.0 --confirm\n```\n",
			want: "installs velero-async/velero-plugin-for-aws:v0.1.0, which nothing publishes"},
		{name: "Helm values install another tag than the one pushed", rule: withMakefile(makefile),
			md:   push + "```yaml\ninitContainers:\n- name: p\n  image: reg.example.com/velero-plugin-for-aws-async:v2\n```\n",
			want: "names the image reg.example.com/velero-plugin-for-aws-async:v2"},
		{name: "no make image line", rule: withMakefile(makefile), md: "```sh\nls\n```\n", want: "no `make image` line"},
		{name: "one location ebs, a second account's ebs-b, backups naming them", rule: locationRule,
			md: ebs + "```sh\nvelero snapshot-location create ebs-b --provider velero-async.io/aws --config region=us-east-1\nvelero backup create n --volume-snapshot-locations ebs-b\n```\n"},
		{name: "vault example under another location name", rule: locationRule,
			md:   ebs + strings.Replace(ebs, "name: ebs", "name: aws-async", 1),
			want: `location "aws-async": name it "ebs"`},
		{name: "recovery location without copyToRegion back", rule: locationRule,
			md:   ebs + "```yaml\napiVersion: velero.io/v1\nkind: VolumeSnapshotLocation\nmetadata: {name: ebs, namespace: velero}\nspec:\n  provider: velero-async.io/aws\n  config: {region: us-west-2}\n```\n",
			want: `the recovery location "ebs" in us-west-2 has copyToRegion ""`},
		{name: "backup names a location never made", rule: locationRule,
			md:   ebs + "```sh\nvelero backup create n --volume-snapshot-locations aws-async\n```\n",
			want: `names location "aws-async", which the README never makes`},
		{name: "default names another location", rule: locationRule,
			md:   ebs + "```yaml\nconfiguration:\n  defaultVolumeSnapshotLocations: velero-async.io/aws:account-a\n```\n",
			want: "want velero-async.io/aws:ebs"},
		{name: "server flag advised in prose without a patch", rule: flagRule(serverFlags),
			md:   "Add `--default-item-operation-timeout` to the server's arguments.\n",
			want: "--default-item-operation-timeout, which velero install cannot set"},
		{name: "velero server line", rule: flagRule(serverFlags),
			md:   "```sh\nvelero server --default-item-operation-timeout 12h\n```\n",
			want: "a CLI user cannot run velero server"},
		{name: "server flag with its kubectl patch; install flag; sample output", rule: flagRule(serverFlags),
			md: "```sh\nkubectl -n velero patch deployment velero --type json -p '[\n  {\"op\": \"add\", \"value\": \"--default-item-operation-timeout=12h\"}]'\n```\n" +
				"Use `--default-item-operation-timeout` and `velero install --item-block-worker-count 2`.\n```text\n  ✓ --default-volume-snapshot-locations: ebs\n```\n"},
		{name: "an existing install's upstream location moved to this plugin", rule: upstreamRule,
			md: "```sh\nvelero install --provider aws --use-volume-snapshots=false\nkubectl -n velero patch volumesnapshotlocation default --type merge -p '{\"spec\":{\"provider\":\"velero-async.io/aws\"}}'\n```\n"},
		{name: "an install that makes an upstream location", rule: upstreamRule,
			md:   "```sh\nvelero install --provider aws\nkubectl -n velero patch volumesnapshotlocation default --type merge -p '{\"spec\":{\"provider\":\"velero-async.io/aws\"}}'\n```\n",
			want: "pass --use-volume-snapshots=false"},
		{name: "an existing install's upstream location left as it is", rule: upstreamRule,
			md: "```sh\nvelero install --provider aws --use-volume-snapshots=false\n```\n", want: "no `kubectl patch` moves the location default"},
		{name: "a move whose patch misspells a field", rule: upstreamRule,
			md:   "```sh\nkubectl -n velero patch volumesnapshotlocation default --type merge -p '{\"spec\":{\"providr\":\"velero-async.io/aws\"}}'\n```\n",
			want: "the patch is no VolumeSnapshotLocation"},
		{name: "test-report phrasing", rule: toneRule, md: "Measured on this round's code (issue 21), 70 seeds a second.\n", want: "reads as a test report"},
		{name: "too long", rule: toneRule, md: strings.Repeat("line\n", maxLines+1), want: "more than 700"},
		{name: "Helm values of the chart's keys", rule: helmRule,
			md: "```yaml\ncredentials: {useSecret: false}\nserviceAccount: {server: {annotations: {eks.amazonaws.com/role-arn: arn}}}\n```\n"},
		{name: "a misspelt Helm values key", rule: helmRule, md: "```yaml\ncredentials: {useSecrets: false}\n```\n",
			want: "credentials.useSecrets is not a key of chart"},
		{name: "the service account's annotations a level too high", rule: helmRule,
			md:   "```yaml\nserviceAccount: {annotations: {eks.amazonaws.com/role-arn: arn}}\n```\n",
			want: "serviceAccount.annotations is not a key of chart"},
		{name: "links to headings that exist", rule: linkRule,
			md: "## Your first location, and `check`\n### With the velero CLI\nSee [check](#your-first-location-and-check), [CLI](#with-the-velero-cli) and [home](https://example.com/x#y).\n"},
		{name: "a link to a heading that moved", rule: linkRule, md: "## Known limits\nSee [Compatibility](#compatibility).\n", want: "no heading #compatibility"},
		{name: "a link to a file that is not there", rule: linkRule, md: "See [the kit](internal/nowhere/README.md).\n", want: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocks, err := splitBlocks("x.md", tt.md)
			if err != nil {
				t.Fatal(err)
			}
			problems := tt.rule(tt.md, blocks)
			switch {
			case tt.want == "" && len(problems) > 0:
				t.Fatalf("unexpected problems: %q", problems)
			case tt.want != "" && len(problems) == 0:
				t.Fatalf("no problem, want one with %q", tt.want)
			case tt.want != "" && !strings.Contains(problems[0], tt.want):
				t.Fatalf("problem %q, want one with %q", problems[0], tt.want)
			}
		})
	}
}

func withMakefile(makefile string) func(string, []block) []string {
	return func(_ string, blocks []block) []string { return imageProblems(makefile, blocks) }
}

func locationRule(_ string, blocks []block) []string { return locationProblems(blocks) }

func flagRule(serverFlags []string) func(string, []block) []string {
	return func(md string, blocks []block) []string { return serverFlagProblems(md, blocks, serverFlags) }
}

func toneRule(md string, _ []block) []string { return lengthAndToneProblems(md) }

func upstreamRule(_ string, blocks []block) []string { return upstreamLocationProblems(blocks) }

func linkRule(md string, _ []block) []string { return linkProblems(md, ".") }

func helmRule(_ string, blocks []block) []string { return helmValuesProblems(blocks) }

// TestVeleroCommands: commands continue over backslashes and open quotes, quotes group words,
// comments end them, and only velero commands are returned.
func TestVeleroCommands(t *testing.T) {
	md := "```sh\nvelero install --provider aws \\\n  --plugins a,b   # both plugins\n" +
		"kubectl patch x -p '[\n  {\"a\": 1}]'\nvelero schedule create n --schedule \"0 2 * * *\"\n```\n" +
		"```text\nvelero backup get\n```\n"
	cmds, err := VeleroCommands(md)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmds {
		got = append(got, strings.Join(c, "|"))
	}
	want := []string{"velero|install|--provider|aws|--plugins|a,b", "velero|schedule|create|n|--schedule|0 2 * * *"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
