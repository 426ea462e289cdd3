package harness

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestMain is the TestMain of a test package that drives the plugin binary: it answers Velero's
// plugin discovery, builds the plugin once into *plugin, runs the tests, removes the build and
// exits with the tests' code.
func TestMain(m *testing.M, plugin **Plugin) {
	ServeBuiltinPlugins()
	flag.Parse() // before PluginArgs rewrites os.Args
	PluginArgs()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	p, err := BuildPlugin(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*plugin = p
	code := m.Run()
	p.Remove()
	os.Exit(code)
}
