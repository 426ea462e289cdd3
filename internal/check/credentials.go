package check

import (
	"context"
	"errors"
	"fmt"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
)

// checkBackupName names the Backup the check asks the Resolver about: one that names only the
// location checked, as a backup through it would.
const checkBackupName = "velero-async-preflight-check"

// resolve finds the location's credentials through the Resolver, as the item actions do.
func resolve(ctx context.Context, lc *locationCheck) bool {
	backup := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: lc.Namespace, Name: checkBackupName},
		Spec: velerov1.BackupSpec{VolumeSnapshotLocations: []string{lc.vsl.Name}}}
	choice, err := lc.Resolver.ForBackup(ctx, backup, "")
	var ce *location.CredentialError
	switch {
	case errors.As(err, &ce):
		lc.add(fail("credentials", err.Error(), fmt.Sprintf("kubectl -n %s create secret generic %s --from-file=%s=./credentials", ce.Namespace, ce.Secret, ce.Key)))
		return false
	case err != nil:
		lc.add(fail("credentials", err.Error(), "let Velero's service account read this location and its Secrets (README, Credentials)"))
		return false
	case len(choice.Locations) == 0 || choice.Locations[0].DefaultChain() || choice.Locations[0].Name != lc.vsl.Name:
		if u := secretRefused(ctx, lc); u != nil {
			lc.add(u.finding("credentials", ""))
			return false
		}
		lc.add(fail("credentials", "the item actions would not find this location: "+choice.Note,
			"let Velero's service account get and list volumesnapshotlocations and get secrets in "+lc.Namespace+" (README, Kubernetes permissions)"))
		return false
	}
	lc.loc = choice.Locations[0]
	lc.add(pass("credentials", credentialsSummary(lc)))
	if lc.vsl.Spec.Credential == nil && !lc.Shell.InPod {
		lc.add(warn("credentials where Velero runs", "the check used "+lc.sourceCredentialsName()+"; Velero's pod uses its own environment (its cloud-credentials Secret, IRSA or EKS Pod Identity), which may differ",
			fmt.Sprintf("check them where Velero runs: kubectl -n %s exec deploy/%s -c %s -- /plugins/%s %s", lc.Namespace, veleroDeployment, veleroContainer, binaryName, Command)))
	}
	return true
}

// secretRefused is, when the check runs off-pod and the API refuses it the location's Secret,
// what it could not read: the refusal is then of whoever runs the check, not of Velero's
// service account, which the item actions use.
func secretRefused(ctx context.Context, lc *locationCheck) *unreadable {
	sel := lc.vsl.Spec.Credential
	if sel == nil || lc.Shell.InPod {
		return nil
	}
	err := lc.Kube.Get(ctx, ktypes.NamespacedName{Namespace: lc.Namespace, Name: sel.Name}, &corev1.Secret{})
	if err == nil {
		return nil
	}
	if u := newUnreadable("the location's Secret "+lc.Namespace+"/"+sel.Name+" is not readable", "get on secrets in namespace "+lc.Namespace, err); u.refused {
		return u
	}
	return nil
}

// credentialsSummary says where the location's credentials come from, never what they are.
func credentialsSummary(lc *locationCheck) string {
	var parts []string
	if sel := lc.vsl.Spec.Credential; sel != nil {
		parts = append(parts, fmt.Sprintf("Secret %s/%s key %s", lc.Namespace, sel.Name, sel.Key))
	} else if f := lc.cfg.Credentials.File; f != "" {
		parts = append(parts, "credentials file "+f+" of "+lc.Shell.where())
	}
	if p := lc.cfg.Credentials.Profile; p != "" {
		parts = append(parts, "profile "+p)
	}
	if len(parts) == 0 {
		parts = append(parts, lc.Shell.chain())
	}
	if v := lc.cfg.Vault; v.Enabled() {
		switch {
		case v.CredentialSecret != "":
			s := fmt.Sprintf("vault: Secret %s/%s key %s", lc.Namespace, v.CredentialSecret, v.CredentialKey)
			if v.Profile != "" {
				s += " profile " + v.Profile
			}
			parts = append(parts, s)
		default:
			parts = append(parts, "vault: profile "+v.Profile+" of the location's credentials")
		}
	}
	return strings.Join(parts, "; ")
}
