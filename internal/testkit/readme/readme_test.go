package readme

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const (
	modulePath = "github.com/velero-async/velero-plugin-for-aws"
	provider   = "velero-async.io/aws"
)

// TestREADMEBlocksParse parses every ```yaml, ```yml and ```json block of the repository's
// README.md. Blocks of any other language (sh, text, …) are not parsed.
func TestREADMEBlocksParse(t *testing.T) {
	path := readmePath(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, errs := checkMarkdown("README.md", string(src))
	for _, err := range errs {
		t.Error(err)
	}
	count := map[string]int{}
	for _, b := range blocks {
		count[b.lang]++
	}
	t.Logf("README.md: %d fenced blocks: %v", len(blocks), count)
	// A splitter that finds nothing must not pass: the README has manifests and the IAM policy.
	if count["yaml"]+count["yml"] < 3 || count["json"] < 1 {
		t.Errorf("README.md: found %d YAML and %d JSON blocks, want at least 3 and 1: is the splitter broken?",
			count["yaml"]+count["yml"], count["json"])
	}
}

// readmePath finds README.md at the module root, walking up from the working directory (the
// package directory under go test) to the go.mod that declares this module.
func readmePath(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(mod); m != nil && string(m[1]) == modulePath {
				return filepath.Join(dir, "README.md")
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// vaultREADME is the README of the records in the vault account and of the runbook for the
// loss of the source account, beside the code that reads the vault bucket.
const vaultREADME = "internal/vault/README.md"

// TestVaultREADMEBlocksParse checks the vault README as the top-level one: its YAML and JSON
// blocks parse strictly, its manifests decode into their API types with only the config keys of
// the top-level Config reference, and its links lead somewhere. (Its recovery location has no
// copyToRegion back to the source region, which the top-level rule asks for: the source account
// it would copy into is gone.)
func TestVaultREADMEBlocksParse(t *testing.T) {
	root := filepath.Dir(readmePath(t))
	top, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, vaultREADME))
	if err != nil {
		t.Fatal(err)
	}
	blocks, errs := checkMarkdownWith(vaultREADME, string(src), configKeys(string(top)))
	for _, err := range errs {
		t.Error(err)
	}
	count := map[string]int{}
	for _, b := range blocks {
		count[b.lang]++
	}
	if count["yaml"] < 2 || count["json"] < 4 || count["sh"] < 3 {
		t.Errorf("%s: found %v blocks, want at least 2 YAML, 4 JSON and 3 sh: is the splitter broken?", vaultREADME, count)
	}
	for _, p := range linkProblems(string(src), filepath.Dir(filepath.Join(root, vaultREADME))) {
		t.Error(p)
	}
}

// TestVaultREADMESubcommandFlags: the runbook's lines running the plugin's commands in the
// recovery cluster (audit, drill --from vault) pass only flags those commands have.
func TestVaultREADMESubcommandFlags(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(filepath.Dir(readmePath(t)), vaultREADME))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := splitBlocks(vaultREADME, string(src))
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, cmd := range shellCommands(blocks) {
		name, args, ok := pluginCommand(words(cmd))
		if !ok {
			continue
		}
		ran = append(ran, name)
		for _, w := range args {
			if f, isFlag := strings.CutPrefix(w, "--"); isFlag && !slices.Contains(subcommandFlags(name), f) {
				t.Errorf("`%s`: %s has no flag --%s", cmd, name, f)
			}
		}
	}
	if !slices.Contains(ran, "audit") || !slices.Contains(ran, "drill") {
		t.Errorf("%s runs the plugin's commands %v, want audit and drill in the recovery cluster: is the splitter broken?", vaultREADME, ran)
	}
}

// checkMarkdown splits a Markdown document and parses its YAML and JSON blocks, returning the
// blocks and every error, each naming the document and a line.
func checkMarkdown(name, src string) ([]block, []error) {
	return checkMarkdownWith(name, src, configKeys(src))
}

// checkMarkdownWith is checkMarkdown with the config keys of a Config reference elsewhere.
func checkMarkdownWith(name, src string, keys map[string]bool) ([]block, []error) {
	blocks, err := splitBlocks(name, src)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, b := range blocks {
		var err error
		switch b.lang {
		case "yaml", "yml":
			err = checkYAML(b, keys)
		case "json":
			err = checkJSON(b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %s block: %w", name, b.line, b.lang, err))
		}
	}
	return blocks, errs
}

var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// checkYAML parses each document of a YAML block (documents split at `---` lines, as kubectl and
// Helm split them) with sigs.k8s.io/yaml, strictly: a duplicate key fails. Errors give README
// line numbers. A document with apiVersion and kind is also decoded strictly into its API type.
func checkYAML(b block, keys map[string]bool) error {
	docs := 0
	start := 0 // index in b.body of the current document's first line
	for i := 0; i <= len(b.body); i++ {
		if i < len(b.body) && !isDocSeparator(b.body[i]) {
			continue
		}
		doc := strings.Join(b.body[start:i], "\n")
		firstLine := b.line + 1 + start // README line of b.body[start]
		start = i + 1
		j, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			msg := yamlLine.ReplaceAllStringFunc(err.Error(), func(s string) string {
				n, _ := strconv.Atoi(yamlLine.FindStringSubmatch(s)[1])
				return fmt.Sprintf("line %d", firstLine+n-1)
			})
			return fmt.Errorf("document at line %d: %s", firstLine, msg)
		}
		if string(j) == "null" { // empty, or only comments
			continue
		}
		docs++
		if err := checkManifest(j, keys); err != nil {
			return fmt.Errorf("document at line %d: %w", firstLine, err)
		}
	}
	if docs == 0 {
		return errors.New("no YAML document")
	}
	return nil
}

// isDocSeparator reports a YAML document separator line: "---", optionally followed by a comment.
func isDocSeparator(line string) bool {
	rest, ok := strings.CutPrefix(line, "---")
	rest = strings.TrimSpace(rest)
	return ok && (rest == "" || strings.HasPrefix(rest, "#"))
}

// scheme knows the API types a README manifest may have: Kubernetes' built-in ones and Velero's.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := velerov1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

var strictDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
	kjson.SerializerOptions{Strict: true})

// checkManifest decodes a document that has apiVersion and kind strictly into its API type (an
// unknown or misspelt field fails), and checks the config keys of this plugin's
// VolumeSnapshotLocations, in manifests and in Helm values, against the README's Config
// reference.
func checkManifest(j []byte, keys map[string]bool) error {
	var doc map[string]any
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil // a list or a scalar: parsed, nothing more to check
	}
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	if apiVersion != "" && kind != "" {
		obj, gvk, err := strictDecoder.Decode(j, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			return fmt.Errorf("%s %s: no API type known to this test (add its group to the scheme in readme_test.go): %w", apiVersion, kind, err)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", apiVersion, kind, err)
		}
		if vsl, ok := obj.(*velerov1.VolumeSnapshotLocation); ok && vsl.Spec.Provider == provider {
			return checkConfigKeys(fmt.Sprintf("%s %s", gvk.Kind, vsl.Name), vsl.Spec.Config, keys)
		}
		return nil
	}
	if _, ok := doc["groups"]; ok {
		return checkRuleFile(j)
	}
	// Helm values of the vmware-tanzu/velero chart: configuration.volumeSnapshotLocation[].
	conf, _ := doc["configuration"].(map[string]any)
	vsls, _ := conf["volumeSnapshotLocation"].([]any)
	for i, v := range vsls {
		loc, _ := v.(map[string]any)
		if loc["provider"] != provider {
			continue
		}
		config := map[string]string{}
		c, _ := loc["config"].(map[string]any)
		for k := range c {
			config[k] = ""
		}
		if err := checkConfigKeys(fmt.Sprintf("configuration.volumeSnapshotLocation[%d]", i), config, keys); err != nil {
			return err
		}
	}
	return nil
}

func checkConfigKeys(what string, config map[string]string, keys map[string]bool) error {
	if keys == nil {
		return fmt.Errorf("%s: the document has no Config reference table to check its config keys against", what)
	}
	var unknown []string
	for k := range config {
		if !keys[k] {
			unknown = append(unknown, k)
		}
	}
	if unknown == nil {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("%s: config keys %q are not in the Config reference", what, unknown)
}

var (
	configRow     = regexp.MustCompile("^\\| `([A-Za-z]+)` \\|")
	configHeading = regexp.MustCompile(`(?m)^##+ Config reference.*$`)
)

// configKeys returns the keys of the "Config reference" table (under a heading of any level), or
// nil without one.
func configKeys(src string) map[string]bool {
	loc := configHeading.FindStringIndex(src)
	if loc == nil {
		return nil
	}
	after := src[loc[1]:]
	keys := map[string]bool{}
	for _, line := range strings.Split(after, "\n")[1:] {
		if strings.HasPrefix(line, "#") {
			break
		}
		if m := configRow.FindStringSubmatch(line); m != nil {
			keys[m[1]] = true
		}
	}
	return keys
}

// checkJSON parses a JSON block with encoding/json (no trailing comma, no comment, one value)
// and rejects duplicate object keys, which encoding/json would silently merge.
func checkJSON(b block) error {
	data := []byte(strings.Join(b.body, "\n"))
	lineAt := func(off int64) int {
		return b.line + 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("line %d: %w", lineAt(se.Offset), err)
		}
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					return fmt.Errorf("line %d: duplicate key %q", lineAt(dec.InputOffset()), key)
				}
				seen[key] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		return err
	}
	return walk()
}

// TestCheckMarkdown shows that the splitter and the parsers fail where they should.
func TestCheckMarkdown(t *testing.T) {
	const configTable = "\n### Config reference\n\n| Key | Required |\n|---|---|\n| `region` | yes |\n| `copyToRegion` | no |\n\n### Next\n"
	tests := []struct {
		name   string
		md     string
		blocks int
		errs   []string // each a substring of one error, in order; none: no error
	}{
		{name: "good yaml and json", blocks: 2,
			md: "text\n```yaml\na: 1\nb: [x, y]\n```\n```json\n{\"a\": [1, 2]}\n```\n"},
		{name: "bad yaml", blocks: 1,
			md:   "# t\n\n```yaml\na: 1\n  b: 2\n```\n",
			errs: []string{"x.md:3: yaml block: document at line 4: ", "line 5"}},
		{name: "yaml tab indentation", blocks: 1,
			md:   "```yml\na:\n\tb: 1\n```\n",
			errs: []string{"x.md:1: yml block"}},
		{name: "yaml duplicate key", blocks: 1,
			md:   "```yaml\na: 1\na: 2\n```\n",
			errs: []string{`x.md:1: yaml block: document at line 2: `, `"a" already set`}},
		{name: "second yaml document bad, line named", blocks: 1,
			md:   "```yaml\na: 1\n---\nb: 2\nc: [\n```\n",
			errs: []string{"x.md:1: yaml block: document at line 4: "}},
		{name: "several yaml documents, comments, separator with a comment", blocks: 1,
			md: "```yaml\n# only a comment\n---\na: 1\n--- # next\nb: 2\n---\n```\n"},
		{name: "empty yaml block", blocks: 1,
			md:   "```yaml\n# nothing\n```\n",
			errs: []string{"x.md:1: yaml block: no YAML document"}},
		{name: "json trailing comma", blocks: 1,
			md:   "a\n```json\n{\n  \"a\": [1, 2],\n}\n```\n",
			errs: []string{"x.md:2: json block: line 5: invalid character '}'"}},
		{name: "json comment", blocks: 1,
			md:   "```json\n{\"a\": 1} // no\n```\n",
			errs: []string{"x.md:1: json block: line 2:"}},
		{name: "json duplicate key", blocks: 1,
			md:   "```json\n{\"a\": {\"b\": 1,\n \"b\": 2}}\n```\n",
			errs: []string{`x.md:1: json block: line 3: duplicate key "b"`}},
		{name: "unterminated fence", blocks: 1,
			md:   "```sh\nls\n```\n\n~~~yaml\na: 1\n```\n",
			errs: []string{"x.md:5: code fence ~~~ never closed"}},
		{name: "shorter closing fence does not close", blocks: 0,
			md:   "````yaml\na: 1\n```\n",
			errs: []string{"x.md:1: code fence ```` never closed"}},
		{name: "sh and text blocks are not parsed", blocks: 3,
			md: "```sh\n{ not: json,\n```\n```text\na: b: c\n```\n```\n: : :\n```\n"},
		{name: "a longer fence holds a shorter one; the next block is still found", blocks: 2,
			md:   "````markdown\n```yaml\nnot: [closed\n```\n````\n```json\n[1,]\n```\n",
			errs: []string{"x.md:6: json block: line 7:"}},
		{name: "tilde fence, info string with attributes", blocks: 3,
			md:   "~~~yaml title=\"values.yaml\"\na: [\n~~~\n``` {.json}\n[1,]\n```\n```YAML{.numberLines}\nok: true\n```\n",
			errs: []string{"x.md:1: yaml block", "x.md:4: json block"}},
		{name: "backticks in a backtick info string: not a fence", blocks: 0,
			md: "```yaml``` is inline code\na: [\n"},
		{name: "indented fence in a list item", blocks: 1,
			md: "- step\n\n   ```yaml\n   a:\n     b: 1\n   ```\n"},
		{name: "manifest decoded strictly", blocks: 1,
			md: "```yaml\napiVersion: velero.io/v1\nkind: VolumeSnapshotLocation\nmetadata:\n  name: ebs\nspec:\n  provider: velero-async.io/aws\n  config:\n    region: us-east-1\n```\n" + configTable},
		{name: "manifest with an unknown field", blocks: 1,
			md:   "```yaml\napiVersion: velero.io/v1\nkind: VolumeSnapshotLocation\nmetadata:\n  name: ebs\nspec:\n  provider: velero-async.io/aws\n  confg:\n    region: us-east-1\n```\n" + configTable,
			errs: []string{`VolumeSnapshotLocation: strict decoding error: unknown field "spec.confg"`}},
		{name: "second manifest of a block with a wrong field type", blocks: 1,
			md:   "```yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\nrules:\n- verbs: get\n```\n",
			errs: []string{"x.md:1: yaml block: document at line 6: rbac.authorization.k8s.io/v1 Role:"}},
		{name: "manifest of an unknown kind", blocks: 1,
			md:   "```yaml\napiVersion: example.com/v1\nkind: Widget\n```\n",
			errs: []string{"example.com/v1 Widget: no API type known to this test"}},
		{name: "prometheus rule file", blocks: 1,
			md: "```yaml\ngroups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n```\n"},
		{name: "prometheus rule file with a misspelt field", blocks: 1,
			md:   "```yaml\ngroups:\n  - name: g\n    rules:\n      - alert: A\n        exp: up == 0\n```\n",
			errs: []string{`prometheus rule file: json: unknown field "exp"`}},
		{name: "prometheus rule without an expression", blocks: 1,
			md:   "```yaml\ngroups:\n  - name: g\n    rules:\n      - alert: A\n```\n",
			errs: []string{"rule group g, rule 0: want an expr"}},
		{name: "config key not in the Config reference", blocks: 1,
			md:   "```yaml\napiVersion: velero.io/v1\nkind: VolumeSnapshotLocation\nmetadata:\n  name: ebs\nspec:\n  provider: velero-async.io/aws\n  config:\n    region: us-east-1\n    copyRegion: us-west-2\n```\n" + configTable,
			errs: []string{`VolumeSnapshotLocation ebs: config keys ["copyRegion"] are not in the Config reference`}},
		{name: "another provider's config is not checked", blocks: 1,
			md: "```yaml\napiVersion: velero.io/v1\nkind: VolumeSnapshotLocation\nmetadata:\n  name: ebs\nspec:\n  provider: aws\n  config:\n    apiTimeout: 1m\n```\n" + configTable},
		{name: "helm values with a config key not in the Config reference", blocks: 1,
			md:   "```yaml\nconfiguration:\n  volumeSnapshotLocation:\n  - name: ebs\n    provider: velero-async.io/aws\n    config:\n      region: us-east-1\n      copy_to_region: us-west-2\n```\n" + configTable,
			errs: []string{`configuration.volumeSnapshotLocation[0]: config keys ["copy_to_region"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocks, errs := checkMarkdown("x.md", tt.md)
			if len(blocks) != tt.blocks {
				t.Errorf("%d blocks, want %d: %+v", len(blocks), tt.blocks, blocks)
			}
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			all := strings.Join(got, "\n")
			if len(tt.errs) == 0 && len(got) > 0 {
				t.Fatalf("unexpected errors:\n%s", all)
			}
			if len(tt.errs) > 0 && len(got) == 0 {
				t.Fatalf("no error, want %q", tt.errs)
			}
			rest := all
			for _, want := range tt.errs {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("errors lack %q (in order):\n%s", want, all)
				}
				rest = rest[i+len(want):]
			}
		})
	}
}
