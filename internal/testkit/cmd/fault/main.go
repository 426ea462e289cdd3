// Command fault runs the fault suite (internal/testkit/faults) against the built plugin binary and
// prints the Reliability table. It exits non-zero when any operation failed that was not
// meant to, any snapshot or copy was duplicated, or any was left after deletion.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/faults"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

func main() {
	rig.ServeBuiltinPlugins()
	quick := flag.Bool("quick", false, "the smaller sizes of go test, without the throttling storm")
	only := flag.String("only", "", "run only the scenarios whose name contains this text (case-insensitive)")
	skip := flag.String("skip", "", "skip the scenarios whose name contains this text (case-insensitive)")
	logDir := flag.String("logs", "", "directory for core's and the plugin's logs (default: a new temporary directory)")
	flag.Parse()
	rig.PluginArgs()
	os.Exit(run(*quick, *only, *skip, *logDir))
}

func run(quick bool, only, skip, logDir string) int {
	sizes := faults.Full
	if quick {
		sizes = faults.Quick
	}
	if logDir == "" {
		dir, err := os.MkdirTemp("", "fault-logs-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		logDir = dir
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	buildCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	plugin, err := rig.BuildPlugin(buildCtx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer plugin.Remove()
	env := &rig.Env{Plugin: plugin, LogDir: logDir, Progress: os.Stderr}
	fmt.Fprintf(os.Stderr, "logs in %s\n", logDir)
	var results []*rig.Result
	for _, s := range faults.Scenarios(sizes) {
		name := strings.ToLower(s.Name)
		if (quick && s.Heavy) || !strings.Contains(name, strings.ToLower(only)) || (skip != "" && strings.Contains(name, strings.ToLower(skip))) {
			continue
		}
		results = append(results, faults.Run(ctx, env, s))
	}
	fmt.Println()
	if err := faults.WriteTable(os.Stdout, results); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	code := 0
	for _, r := range results {
		if !r.OK() {
			code = 1
			fmt.Fprintf(os.Stderr, "FAIL %s\n", r.Summary())
		}
	}
	return code
}
