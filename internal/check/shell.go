package check

// serviceAccountToken is where Kubernetes mounts a pod's service account token.
const serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// Shell is where the check runs, as far as AWS's default credential chain goes: in a pod
// (Velero's, through kubectl exec) or in a person's shell, and which source of the chain that
// environment sets. Main reads it from the environment; the checks only label credentials
// with it.
type Shell struct {
	// InPod: KUBERNETES_SERVICE_HOST is set and a service account token is mounted.
	InPod bool
	// Source is the first source of the default chain the environment sets, as the user would
	// recognise it: "AWS_ACCESS_KEY_ID", "AWS_PROFILE=prod", "AWS_SHARED_CREDENTIALS_FILE=/credentials/cloud"
	// (velero install's Secret), "AWS_WEB_IDENTITY_TOKEN_FILE, IRSA", "AWS_CONTAINER_CREDENTIALS_FULL_URI,
	// EKS Pod Identity"; "" for none (the shared files' default profile, else the instance's role).
	Source string
}

// shellOf reads the Shell from the environment (getenv) and the file system (exists).
func shellOf(getenv func(string) string, exists func(string) bool) Shell {
	s := Shell{InPod: getenv("KUBERNETES_SERVICE_HOST") != "" && exists(serviceAccountToken)}
	switch {
	case getenv("AWS_ACCESS_KEY_ID") != "":
		s.Source = "AWS_ACCESS_KEY_ID"
	case getenv("AWS_PROFILE") != "":
		s.Source = "AWS_PROFILE=" + getenv("AWS_PROFILE")
	case getenv("AWS_SHARED_CREDENTIALS_FILE") != "": // velero install's cloud-credentials Secret
		s.Source = "AWS_SHARED_CREDENTIALS_FILE=" + getenv("AWS_SHARED_CREDENTIALS_FILE")
	case getenv("AWS_WEB_IDENTITY_TOKEN_FILE") != "":
		s.Source = "AWS_WEB_IDENTITY_TOKEN_FILE, IRSA"
	case getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI") != "":
		s.Source = "AWS_CONTAINER_CREDENTIALS_FULL_URI, EKS Pod Identity"
	}
	return s
}

// chain names the default credential chain where the check runs.
func (s Shell) chain() string {
	c := "this shell's default credential chain"
	if s.InPod {
		c = "this pod's default credential chain"
	}
	if s.Source != "" {
		c += " (" + s.Source + ")"
	}
	return c
}

// where names the environment whose credentials files and profiles the check reads.
func (s Shell) where() string {
	if s.InPod {
		return "this pod"
	}
	return "this shell"
}

// reacher names what must reach AWS's endpoints for the check to answer: the Velero pod, or this
// shell off it (and the pod too, for the plugin's operations).
func (s Shell) reacher() string {
	if s.InPod {
		return "the Velero pod"
	}
	return "this shell (and the Velero pod)"
}
