package check

import "fmt"

// installRole is the README's ClusterRole that lets Velero's service account read the install
// identity (get on namespace kube-system), and where it is given.
const installRole = "the ClusterRole velero-async-aws (get on namespace kube-system; internal/location/README.md#kubernetes-permissions)"

// installIdentity judges the install identity the plugin tags every snapshot with: read
// (install), refused by the Kubernetes API, or unreadable otherwise (problem). A refusal is a
// warning, not a failure: backups still work, but their snapshots go untagged and audit never
// deletes them. inPod says whether the check runs as Velero's service account.
func installIdentity(install string, problem *unreadable, inPod bool) Finding {
	const check = "install identity"
	switch {
	case problem == nil:
		return pass(check, install+": every snapshot is tagged with it, and audit judges only this install's")
	case !problem.refused:
		return notChecked(check, problem.String())
	case inPod:
		return warn(check, fmt.Sprintf("Velero's service account may not read it (%s): the plugin tags no snapshot with this install, and audit never deletes untagged snapshots", problem),
			"bind "+installRole+" to Velero's service account")
	}
	return warn(check, fmt.Sprintf("not readable to whoever runs the check (%s); if Velero's service account may not read it either, the plugin tags no snapshot with this install, and audit never deletes untagged snapshots", problem),
		"bind "+installRole+" to Velero's service account, and to whoever runs the check")
}
