package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"

	appsv1 "k8s.io/api/apps/v1"
	corev1api "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/check"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
)

// runCheck runs the plugin binary's check on the location against the Kubernetes API of the
// kubeconfig, with this process's environment (the simulator's endpoint and the source
// account's credentials, as the plugin processes have them), its output to w. It returns the
// check's exit status, or why it could not run.
func runCheck(ctx context.Context, binary, kubeconfig, location string, w io.Writer) (int, error) {
	cmd := exec.CommandContext(ctx, binary, check.Command, "--kubeconfig", kubeconfig, "--namespace", harness.Namespace, "--location", location)
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), nil
	case err != nil:
		return 0, fmt.Errorf("running %s %s: %w", binary, check.Command, err)
	}
	return check.ExitOK, nil
}

// veleroDeployment is Velero's Deployment as `velero install` makes it, with the demo's
// settings, for check's lines on them.
func veleroDeployment(o options) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: harness.Namespace, Name: "velero"},
	}
	d.Spec.Template.Spec.Containers = []corev1api.Container{{
		Name: "velero", Image: "velero/velero:v1.18.3", Command: []string{"/velero"},
		Args: []string{"server", "--features=", "--uploader-type=kopia",
			"--item-operation-sync-frequency=" + o.sync.String(), fmt.Sprintf("--item-block-worker-count=%d", o.workers)},
	}}
	return d
}
