package security

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// The README's statements of the vault without keys: the vault role's trust policy, and the
// statement Velero's own role needs to assume it.
const (
	sidVaultTrust      = "VeleroAssumesVaultRole"
	sidVaultAssumeRole = "VaultAssumeRole"
	// readmeTokenPath is where the README's profile reads IRSA's web identity token.
	readmeTokenPath = "/var/run/secrets/eks.amazonaws.com/serviceaccount/token"
	// irsaSection starts the README profile's source section, which EKS Pod Identity does without.
	irsaSection = "\n[profile irsa]"
	// The IAM actions of the vault's role chain.
	stsAssumeRole = "sts:AssumeRole"
	stsTagSession = "sts:TagSession"
)

// The README profile's lines that name the source of the vault role's session.
const (
	irsaSource        = "source_profile = irsa"
	podIdentitySource = "credential_source = EcsContainer"
	externalIDLine    = "external_id = "
)

// veleroServiceAccount is the subject of the web identity token of Velero's service account.
var veleroServiceAccount = ec2sim.ServiceAccountSubject("velero", "velero")

// roleStatement is a README policy statement, as the role tests read it.
type roleStatement struct {
	Sid       string
	Effect    string
	Principal struct{ AWS string }
	Action    []string
	Resource  json.RawMessage
	Condition map[string]map[string]string
}

// readmeRoleStatement returns the README's policy statement sid.
func readmeRoleStatement(t *testing.T, sid string) roleStatement {
	t.Helper()
	for _, m := range jsonBlock.FindAllSubmatch(readmeBytes(t), -1) {
		var p struct{ Statement []roleStatement }
		if json.Unmarshal(m[1], &p) != nil {
			continue
		}
		for _, s := range p.Statement {
			if s.Sid == sid && s.Effect == "Allow" {
				return s
			}
		}
	}
	t.Fatalf("no IAM policy statement %s in README.md", sid)
	return roleStatement{}
}

var iniBlock = regexp.MustCompile("(?s)```ini\n(.*?)```")

// readmeVaultProfile is the README's profile of the vault role, for IRSA.
func readmeVaultProfile(t *testing.T) string {
	t.Helper()
	for _, m := range iniBlock.FindAllSubmatch(readmeBytes(t), -1) { // the credentials file's block comes first
		if strings.Contains(string(m[1]), irsaSource) && strings.Contains(string(m[1]), readmeTokenPath) {
			return string(m[1])
		}
	}
	t.Fatalf("README.md has no ini block with the vault's IRSA profile (%q, %s)", irsaSource, readmeTokenPath)
	return ""
}

func readmeBytes(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// podIdentityProfile is the IRSA profile changed as the README says for EKS Pod Identity.
func podIdentityProfile(irsa string) string {
	head, _, _ := strings.Cut(irsa, irsaSection)
	return strings.Replace(head, irsaSource, podIdentitySource, 1)
}

// vaultReach is how a vault run reaches the vault account without its keys: the simulator's
// roles and Pod Identity association, and the vault Secret's profile.
type vaultReach struct {
	roles       []ec2sim.Role
	pods        []ec2sim.PodIdentityAssociation
	profile     string
	podIdentity bool
}

// clients are the plugin's EC2 clients of the vault, from the profile, with the web identity
// token and the Pod Identity endpoint where IRSA and the Pod Identity agent put them, and no
// credentials of this process's own.
func (v *vaultReach) clients(t *testing.T, url string) ec2api.Regional {
	rig.WithoutOwnCredentials(t, url)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(ec2sim.WebIdentityToken(veleroServiceAccount)), 0o600); err != nil {
		t.Fatal(err)
	}
	if v.podIdentity {
		t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url+"/v1/credentials")
		t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token)
	}
	path := filepath.Join(dir, "vault-role.ini")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(v.profile, readmeTokenPath, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	return ec2api.NewFactory().ForCredentials(ec2api.Credentials{File: path})
}

// TestVaultRoleStatementsAreExactlyWhatTheChainNeeds runs vault backups and a deletion with the
// vault reached through the README's profile, its source role allowed the README's plugin,
// sharing and VaultAssumeRole statements, the vault role trusting as the README's trust policy
// says and allowed only VaultCopies: clean with IRSA and with EKS Pod Identity. Then each part of
// the trust and of VaultAssumeRole left out breaks the chain that needs it.
func TestVaultRoleStatementsAreExactlyWhatTheChainNeeds(t *testing.T) {
	trust, assume := readmeRoleStatement(t, sidVaultTrust), readmeRoleStatement(t, sidVaultAssumeRole)
	var vaultRole string
	if err := json.Unmarshal(assume.Resource, &vaultRole); err != nil {
		t.Fatalf("statement %s: Resource %s, want the vault role's ARN", sidVaultAssumeRole, assume.Resource)
	}
	sourceRole, externalID := trust.Principal.AWS, trust.Condition["StringEquals"]["sts:ExternalId"]
	if !slices.Contains(trust.Action, stsAssumeRole) || sourceRole == "" || externalID == "" {
		t.Fatalf("statement %s: %+v, want sts:AssumeRole for a role, on condition of sts:ExternalId", sidVaultTrust, trust)
	}
	t.Logf("README: %s trusts %s with external ID %q and %v; %s allows %v", vaultRole, sourceRole, externalID, trust.Action, sidVaultAssumeRole, assume.Action)
	source := slices.Concat(readmeEC2Actions(t, sidPlugin), readmeEC2Actions(t, sidVaultSharing), assume.Action)
	irsa := readmeVaultProfile(t)
	reach := func(trustActions []string, profile string, podIdentity bool) *vaultReach {
		return &vaultReach{
			roles: []ec2sim.Role{
				{ARN: sourceRole, Trust: ec2sim.Trust{WebIdentitySubjects: []string{veleroServiceAccount}, PodIdentity: true}},
				{ARN: vaultRole, AllowedActions: readmeEC2Actions(t, sidVaultCopies), Trust: ec2sim.Trust{
					Principals: []string{sourceRole}, ExternalID: externalID, TagSession: slices.Contains(trustActions, stsTagSession)}},
			},
			pods:    []ec2sim.PodIdentityAssociation{{Namespace: "velero", ServiceAccount: "velero", RoleARN: sourceRole}},
			profile: profile, podIdentity: podIdentity,
		}
	}
	without := func(actions []string, denied string) []string {
		return slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return a == denied })
	}
	noExternalID := regexp.MustCompile(`(?m)^`+externalIDLine+`.*\n`).ReplaceAllString(irsa, "")
	tests := []struct {
		name      string
		source    []string
		reach     *vaultReach
		wantClean bool
	}{
		{"the README's statements, IRSA", source, reach(trust.Action, irsa, false), true},
		{"the README's statements, EKS Pod Identity", source, reach(trust.Action, podIdentityProfile(irsa), true), true},
		{"the vault trust without sts:TagSession, EKS Pod Identity", source, reach(without(trust.Action, stsTagSession), podIdentityProfile(irsa), true), false},
		{"the source role without sts:TagSession, EKS Pod Identity", without(source, stsTagSession), reach(trust.Action, podIdentityProfile(irsa), true), false},
		{"the source role without sts:TagSession, IRSA: only Pod Identity needs it", without(source, stsTagSession), reach(trust.Action, irsa, false), true},
		{"the source role without sts:AssumeRole, IRSA", without(source, stsAssumeRole), reach(trust.Action, irsa, false), false},
		{"the profile without the external ID, IRSA", source, reach(trust.Action, noExternalID, false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := vaultRun(t, tt.source, nil, tt.reach)
			switch {
			case tt.wantClean && len(problems) > 0:
				t.Fatalf("the run fails: %s", strings.Join(problems, "; "))
			case !tt.wantClean && len(problems) == 0:
				t.Fatal("the run is clean: the README's statement grants more than the chain needs, or the simulator does not enforce it")
			case !tt.wantClean:
				t.Logf("as expected: %s", problems[0])
			}
		})
	}
}
