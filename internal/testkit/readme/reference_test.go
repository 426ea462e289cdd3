package readme

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/velero-async/velero-plugin-for-aws/internal/drill"
)

// referenceDocs are the READMEs beside the code that the top-level one links to for manifests:
// the Roles, and the audit's and drill's CronJob and alerts.
var referenceDocs = []string{filepath.Join("internal", "location", "README.md"), filepath.Join("internal", "audit", "README.md")}

// The reference READMEs' YAML and JSON blocks parse as the top-level README's do: Kubernetes
// manifests strictly into their API types, Prometheus rule files strictly into their format.
func TestReferenceREADMEBlocksParse(t *testing.T) {
	root := filepath.Dir(readmePath(t))
	for _, doc := range referenceDocs {
		src, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		blocks, errs := checkMarkdown(doc, string(src))
		for _, err := range errs {
			t.Error(err)
		}
		yamls := 0
		for _, b := range blocks {
			if b.lang == "yaml" {
				yamls++
			}
		}
		if yamls == 0 {
			t.Errorf("%s: no YAML block: is the splitter broken?", doc)
		}
	}
}

// ruleFile is a Prometheus rule file (a PrometheusRule's spec), as Prometheus reads it.
type ruleFile struct {
	Groups []struct {
		Name     string `json:"name"`
		Interval string `json:"interval,omitempty"`
		Rules    []struct {
			Alert       string            `json:"alert,omitempty"`
			Record      string            `json:"record,omitempty"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

// checkRuleFile decodes a Prometheus rule file strictly: an unknown or misspelt field fails, and
// every rule has an expression and is an alert or a recording.
func checkRuleFile(j []byte) error {
	rf, err := decodeRuleFile(j)
	if err != nil {
		return err
	}
	for _, g := range rf.Groups {
		for i, r := range g.Rules {
			if strings.TrimSpace(r.Expr) == "" || (r.Alert == "") == (r.Record == "") {
				return fmt.Errorf("rule group %s, rule %d: want an expr and exactly one of alert and record", g.Name, i)
			}
		}
	}
	return nil
}

func decodeRuleFile(j []byte) (ruleFile, error) {
	var rf ruleFile
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rf); err != nil {
		return rf, fmt.Errorf("prometheus rule file: %w", err)
	}
	if len(rf.Groups) == 0 {
		return rf, fmt.Errorf("prometheus rule file: no rule group")
	}
	return rf, nil
}

// Selectors of kube-state-metrics series in the alerts' expressions.
var (
	jobSelector     = regexp.MustCompile(`job_name=~"([^"]+)"`)
	cronJobSelector = regexp.MustCompile(`cronjob=~"([^"]+)"`)
)

// drillCronJob is the name the audit README gives the drill's CronJob.
const drillCronJob = "velero-async-drill"

// The audit README's CronJob makes a hung or failed run a failed Job, and its alerts watch the
// Jobs the audit's and the drill's CronJobs make (named CronJob-<scheduled minute>): a failed
// one, and no success within the period and slack.
func TestCronJobAlertsWatchItsJobs(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(filepath.Dir(readmePath(t)), referenceDocs[1]))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := splitBlocks(referenceDocs[1], string(src))
	if err != nil {
		t.Fatal(err)
	}
	_, cron, _, err := CronJobs(string(src))
	if err != nil {
		t.Fatalf("%s: %v", referenceDocs[1], err)
	}
	var rules *ruleFile
	for _, b := range blocks {
		if b.lang != "yaml" {
			continue
		}
		if j, err := yaml.YAMLToJSON([]byte(strings.Join(b.body, "\n"))); err == nil {
			if rf, err := decodeRuleFile(j); err == nil {
				rules = &rf
			}
		}
	}
	if rules == nil {
		t.Fatalf("%s: no rule file", referenceDocs[1])
	}
	job := cron.Spec.JobTemplate.Spec
	if job.ActiveDeadlineSeconds == nil || *job.ActiveDeadlineSeconds <= 0 {
		t.Error("the CronJob's Jobs have no activeDeadlineSeconds: a hung run never fails")
	}
	if job.BackoffLimit == nil || *job.BackoffLimit != 0 {
		t.Error("the CronJob's Jobs retry a failed run: backoffLimit must be 0")
	}
	jobs, cronJobs := 0, 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range jobSelector.FindAllStringSubmatch(r.Expr, -1) {
				jobs++
				for _, name := range []string{cron.Name, drillCronJob} {
					if re := regexp.MustCompile("^(?:" + m[1] + ")$"); !re.MatchString(name + "-29512345") {
						t.Errorf("alert %s: job_name=~%q misses the Jobs of CronJob %s", r.Alert, m[1], name)
					}
				}
			}
			for _, m := range cronJobSelector.FindAllStringSubmatch(r.Expr, -1) {
				cronJobs++
				for _, name := range []string{cron.Name, drillCronJob} {
					if re := regexp.MustCompile("^(?:" + m[1] + ")$"); !re.MatchString(name) {
						t.Errorf("alert %s: cronjob=~%q misses CronJob %s", r.Alert, m[1], name)
					}
				}
			}
		}
	}
	if jobs == 0 || cronJobs == 0 {
		t.Errorf("the alerts select %d Jobs and %d CronJobs: want a failed-Job alert and a no-recent-success alert", jobs, cronJobs)
	}
	if !strings.Contains(string(src), "CronJob `"+drillCronJob+"`") {
		t.Errorf("%s does not name the drill's CronJob %s, which the alerts watch", referenceDocs[1], drillCronJob)
	}
}

// drillCleanup is how long a stopped drill takes at most to delete the volumes it made (the
// audit README's "for at most 5 minutes").
const drillCleanup = 5 * time.Minute

// The drill's CronJob, as the audit README's sentence makes it of the audit's, runs the same
// binary's drill with --confirm, fails a hung run only after the drill's own --timeout, and
// gives a drill stopped at the deadline its time to delete the volumes it made.
func TestDrillCronJobOutlastsTheDrill(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(filepath.Dir(readmePath(t)), referenceDocs[1]))
	if err != nil {
		t.Fatal(err)
	}
	_, audit, dr, err := CronJobs(string(src))
	if err != nil {
		t.Fatalf("%s: %v", referenceDocs[1], err)
	}
	cmd, auditCmd := dr.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Command, audit.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Command
	if len(cmd) < 2 || cmd[0] != auditCmd[0] || cmd[1] != drill.Command || !slices.Contains(cmd, "--confirm") {
		t.Errorf("the drill's CronJob runs %q: want %s %s … --confirm", cmd, auditCmd[0], drill.Command)
	}
	if d := *dr.Spec.JobTemplate.Spec.ActiveDeadlineSeconds; time.Duration(d)*time.Second <= drill.DefaultTimeout {
		t.Errorf("the drill's CronJob ends its Jobs after %d s, within the drill's --timeout %s: a slow drill fails as hung", d, drill.DefaultTimeout)
	}
	if g := *dr.Spec.JobTemplate.Spec.Template.Spec.TerminationGracePeriodSeconds; time.Duration(g)*time.Second <= drillCleanup {
		t.Errorf("the drill's pod has %d s to stop, not more than the %s a stopped drill takes to delete its volumes", g, drillCleanup)
	}
}
