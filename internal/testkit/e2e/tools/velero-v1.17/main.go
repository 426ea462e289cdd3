// Command velero is the upstream Velero CLI and server (github.com/vmware-tanzu/velero cmd/velero),
// built from the module proxy for the e2e rig: Velero v1.17.x (its own module, since each Velero
// minor version has its own dependency graph; E2E_VELERO_VERSION=v1.17.2 in build-tools.sh).
package main

import (
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/vmware-tanzu/velero/pkg/cmd"
	"github.com/vmware-tanzu/velero/pkg/cmd/velero"
)

func main() {
	defer klog.Flush()
	err := velero.NewCommand(filepath.Base(os.Args[0])).Execute()
	cmd.CheckError(err)
}
