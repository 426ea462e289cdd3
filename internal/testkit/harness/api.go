package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1api "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// API is the cluster's Kubernetes API as core uses it: Velero's server writes its Backups and
// Restores there and reads the VolumeSnapshotLocations and their credential Secrets, and the
// plugin processes read the same objects. kubeapi.Server satisfies it.
type API interface {
	// Put creates or replaces an object (by kind, namespace and name), keeping a copy.
	Put(obj client.Object)
	// Delete deletes the object of obj's kind, namespace and name; it reports whether it existed.
	Delete(obj client.Object) bool
	// Get reads the object of into's kind, namespace and name into into; it reports whether it
	// exists.
	Get(namespace, name string, into client.Object) bool
}

// publish writes objs to the API, when core has one, as Velero's server writes its objects
// (the VolumeSnapshotLocations stand for what the user applied). Each is copied: core goes on
// changing its own.
func (c *Core) publish(objs ...client.Object) {
	if c.API == nil {
		return
	}
	for _, o := range objs {
		c.API.Put(o)
	}
}

// snapshotterConfig is the config core passes to the volume snapshotter's Init for loc, as
// Velero's server builds it (volume.UpdateVolumeSnapshotLocationWithCredentialConfig): the
// location's config and, when the location has spec.credential, credentialsFile naming a file
// that holds the Secret's key, overriding any credentialsFile of the config. The Secret is read
// from the API; core writes it to <CredentialsDir>/<namespace>/<secret>-<key>, as the server
// writes <os.TempDir()>/credentials/<namespace>/<secret>-<key>.
func (c *Core) snapshotterConfig(loc *velerov1api.VolumeSnapshotLocation) (map[string]string, error) {
	cfg := make(map[string]string, len(loc.Spec.Config)+1)
	for k, v := range loc.Spec.Config {
		cfg[k] = v
	}
	sel := loc.Spec.Credential
	if sel == nil {
		return cfg, nil
	}
	ns := loc.Namespace
	if ns == "" {
		ns = Namespace
	}
	if c.API == nil {
		return nil, fmt.Errorf("volume snapshot location %s has spec.credential, and core has no Kubernetes API to read Secret %s/%s from", loc.Name, ns, sel.Name)
	}
	for _, part := range []string{ns, sel.Name, sel.Key} {
		if part == "" || part == "." || part == ".." || strings.ContainsAny(part, `/\`) {
			return nil, fmt.Errorf("volume snapshot location %s: credential %s/%s key %q cannot name a file", loc.Name, ns, sel.Name, sel.Key)
		}
	}
	var secret corev1api.Secret
	if !c.API.Get(ns, sel.Name, &secret) {
		return nil, fmt.Errorf("volume snapshot location %s: credential Secret %s/%s not found", loc.Name, ns, sel.Name)
	}
	data, ok := secret.Data[sel.Key]
	if !ok {
		return nil, fmt.Errorf("volume snapshot location %s: credential Secret %s/%s has no key %q", loc.Name, ns, sel.Name, sel.Key)
	}
	path, err := c.writeCredentials(ns, sel.Name+"-"+sel.Key, data)
	if err != nil {
		return nil, fmt.Errorf("volume snapshot location %s: %w", loc.Name, err)
	}
	cfg["credentialsFile"] = path
	return cfg, nil
}

// writeCredentials writes data to <credentialsDir>/<ns>/<name>, mode 0600, replacing the file
// at once (a plugin process reading it sees the old content or the new).
func (c *Core) writeCredentials(ns, name string, data []byte) (string, error) {
	c.credMu.Lock()
	defer c.credMu.Unlock()
	if c.credDir == "" {
		c.credDir = c.CredentialsDir
		if c.credDir == "" {
			dir, err := os.MkdirTemp("", "velero-core-credentials-")
			if err != nil {
				return "", fmt.Errorf("credentials directory: %w", err)
			}
			c.credDir = dir
		}
	}
	dir := filepath.Join(c.credDir, ns)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("credentials directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	path := filepath.Join(dir, name)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	return path, nil
}
