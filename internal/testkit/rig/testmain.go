package rig

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain is the TestMain of a test package that drives the plugin binary: it answers Velero's
// plugin discovery, gets the plugin built once for the go test run (SharedPlugin) into *plugin,
// runs the tests and exits with their code.
func TestMain(m *testing.M, plugin **Plugin) {
	ServeBuiltinPlugins()
	flag.Parse() // before PluginArgs rewrites os.Args
	PluginArgs()
	// No deadline but go test's own: a cold build takes minutes, more on a busy machine.
	p, err := SharedPlugin(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*plugin = p
	os.Exit(m.Run())
}
