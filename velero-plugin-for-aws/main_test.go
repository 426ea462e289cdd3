package plugin_test

import (
	"os"
	"testing"

	"github.com/spf13/pflag"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
)

// TestMain lets this test binary answer Velero's plugin discovery as the Velero server binary
// does: the registry always asks its own executable ("run-plugins") for built-in plugins first.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "run-plugins" {
		framework.NewServer().BindFlags(pflag.CommandLine).Serve()
		return
	}
	os.Exit(m.Run())
}
