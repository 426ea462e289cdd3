// Command velero is the upstream Velero CLI and server (github.com/vmware-tanzu/velero cmd/velero),
// built from the module proxy for the e2e rig.
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
