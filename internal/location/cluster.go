package location

import (
	"context"
	"fmt"
	"os"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Velero's namespace.
const (
	// DefaultNamespace is Velero's namespace when VELERO_NAMESPACE is not set.
	DefaultNamespace = "velero"
	// NamespaceEnv names the variable Velero's install sets to its namespace; plugin processes
	// inherit the server's environment.
	NamespaceEnv = "VELERO_NAMESPACE"
)

// clientTimeout bounds each request of a client NewClient builds.
const clientTimeout = 30 * time.Second

// clusterNamespace is the namespace whose UID identifies a cluster.
const clusterNamespace = "kube-system"

// NewClient builds a client of the cluster from the kubeconfig named, else clientcmd's default
// loading rules (KUBECONFIG, ~/.kube/config, else the in-cluster config, as Velero's
// client.Factory does), knowing Velero's, core and apps kinds.
func NewClient(kubeconfig, userAgent string) (client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes client config in KUBECONFIG, ~/.kube/config or in-cluster: %w", err)
	}
	cfg.UserAgent, cfg.Timeout = userAgent, clientTimeout
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{velerov1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	return c, nil
}

// Namespace is Velero's namespace: VELERO_NAMESPACE when set, else DefaultNamespace.
func Namespace() string {
	if ns := os.Getenv(NamespaceEnv); ns != "" {
		return ns
	}
	return DefaultNamespace
}

// InstallIdentity is the identity of a Velero install (ebs.TagInstall): the UID of its
// cluster's kube-system namespace, which no other cluster shares and a Velero reinstall does
// not change, and Velero's namespace, which tells two installs in one cluster apart.
func InstallIdentity(clusterUID, namespace string) string { return clusterUID + "/" + namespace }

// ReadInstall reads this install's identity from the Kubernetes API.
func ReadInstall(ctx context.Context, kube client.Reader, namespace string) (string, error) {
	var ns corev1.Namespace
	if err := kube.Get(ctx, client.ObjectKey{Name: clusterNamespace}, &ns); err != nil {
		return "", fmt.Errorf("reading namespace %s, whose UID identifies the cluster: %w (grant get on namespaces)", clusterNamespace, err)
	}
	return InstallIdentity(string(ns.UID), namespace), nil
}
