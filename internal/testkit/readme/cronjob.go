package readme

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// drillCronJobSentence is the audit README's sentence on the drill's CronJob: its name, then
// what it changes in the audit's, as inline YAML.
var drillCronJobSentence = regexp.MustCompile("(?s)as the CronJob `([^`]+)`(.*?)(?:\n\n|$)")

// codeSpan matches a Markdown code span, which may run over a line break.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// CronJobs returns the CronJobs of the audit README md: the audit's, its YAML block as written
// and parsed, and the drill's, which the README gives as the audit's with the name, command,
// activeDeadlineSeconds and terminationGracePeriodSeconds of its sentence on it.
func CronJobs(md string) (auditYAML string, audit, drill *batchv1.CronJob, err error) {
	blocks, err := splitBlocks("internal/audit/README.md", md)
	if err != nil {
		return "", nil, nil, err
	}
	for _, b := range blocks {
		body := strings.Join(b.body, "\n")
		var c batchv1.CronJob
		if b.lang == "yaml" && yaml.Unmarshal([]byte(body), &c) == nil && c.Kind == "CronJob" {
			auditYAML, audit = body, &c
		}
	}
	if audit == nil {
		return "", nil, nil, fmt.Errorf("no CronJob")
	}
	m := drillCronJobSentence.FindStringSubmatch(md)
	if m == nil {
		return "", nil, nil, fmt.Errorf("no sentence on the drill's CronJob (\"as the CronJob `NAME`\")")
	}
	var set struct {
		Command                       []string `json:"command"`
		ActiveDeadlineSeconds         *int64   `json:"activeDeadlineSeconds"`
		TerminationGracePeriodSeconds *int64   `json:"terminationGracePeriodSeconds"`
	}
	for _, span := range codeSpan.FindAllStringSubmatch(m[2], -1) {
		// Spans that are no such YAML mapping (a flag's name) leave set as it is.
		_ = yaml.Unmarshal([]byte(strings.ReplaceAll(span[1], "\n", " ")), &set)
	}
	var missing []string
	for name, none := range map[string]bool{"command": len(set.Command) == 0, "activeDeadlineSeconds": set.ActiveDeadlineSeconds == nil,
		"terminationGracePeriodSeconds": set.TerminationGracePeriodSeconds == nil} {
		if none {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", nil, nil, fmt.Errorf("the sentence on the drill's CronJob %s gives no %s as inline YAML", m[1], strings.Join(missing, ", "))
	}
	drill = audit.DeepCopy()
	drill.Name = m[1]
	drill.Spec.JobTemplate.Spec.ActiveDeadlineSeconds = set.ActiveDeadlineSeconds
	pod := &drill.Spec.JobTemplate.Spec.Template.Spec
	pod.TerminationGracePeriodSeconds = set.TerminationGracePeriodSeconds
	pod.Containers[0].Command = set.Command
	return auditYAML, audit, drill, nil
}
