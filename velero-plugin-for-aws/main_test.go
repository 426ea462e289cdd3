package plugin_test

import (
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// built is the plugin binary, built once for the go test run.
var built *rig.Plugin

// TestMain answers Velero's plugin discovery as the Velero server binary does (the registry
// asks its own executable for built-in plugins first) and gets the plugin built.
func TestMain(m *testing.M) { rig.TestMain(m, &built) }
