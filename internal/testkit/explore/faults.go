package explore

import (
	"fmt"
	"time"
)

// faultEffect is what an injected fault does to a request.
type faultEffect int

const (
	// faultThrottle answers RequestLimitExceeded before any effect.
	faultThrottle faultEffect = iota
	// faultServerError answers 500 InternalError before any effect.
	faultServerError
	// faultRefuse answers 403 UnauthorizedOperation: an IAM policy without the action.
	faultRefuse
	// faultLoseAnswer lets the request take effect and loses its answer.
	faultLoseAnswer
	// faultLoseThenDown loses the answer and leaves the region unreachable for the rest of the call.
	faultLoseThenDown
	// faultSlow answers after slowAnswer of the fake clock: STS taking its time.
	faultSlow
	numFaultEffects
)

// slowAnswer is how long a slow answer takes.
const slowAnswer = 10 * time.Second

// duplicateCopyCategory is the promise a second copy of a source breaks: whether an answer
// came slowly in the run tells a finding apart.
func (w *world) duplicateCopyCategory() category {
	if w.slowAnswered {
		return catDuplicateAfterSlow
	}
	return catDuplicateCopy
}

func (e faultEffect) String() string {
	return [...]string{"throttle", "5xx", "IAM refusal", "answer lost after effect", "answer lost, then region down", "slow answer"}[e]
}

// faultRule injects effect into every every-th request of action ("" for any action) made for
// role ("" for any: "source" for the location's credentials, "vault" for the vault's). A rule
// of oneCall passes with the first Progress or Cancel call it hits: it clears before Velero's
// next call in the same reconcile.
type faultRule struct {
	action  string
	role    string
	effect  faultEffect
	every   int
	oneCall bool
	seen    int
	// spent: a rule of oneCall whose call has returned.
	spent bool
}

func (r *faultRule) String() string {
	action := r.action
	if action == "" {
		action = "every action"
	}
	if r.role != "" {
		action += " with the " + r.role + " credentials"
	}
	scope := ""
	if r.oneCall {
		scope = ", for one call"
	}
	return fmt.Sprintf("%s on %s (1 in %d%s)", r.effect, action, r.every, scope)
}

// faults are the rules in force for one step.
type faults []*faultRule

// match returns the rule that hits this request of action, if any.
func (f faults) match(action, role string) *faultRule {
	for _, r := range f {
		if r.spent || r.action != "" && r.action != action || r.role != "" && r.role != role {
			continue
		}
		if (r.effect == faultLoseAnswer || r.effect == faultLoseThenDown) && !mutating[action] {
			continue
		}
		r.seen++
		if (r.seen-1)%r.every == 0 {
			return r
		}
	}
	return nil
}

// callReturned clears the rules of oneCall that the plugin call just returned hit. They stay
// in the step's faults, so that the checks still judge the step a faulty one.
func (f faults) callReturned() {
	for _, r := range f {
		r.spent = r.spent || r.oneCall && r.seen > 0
	}
}

// faultRoles are the credentials a fault may single out: any, the location's, the vault's (an
// IAM policy or KMS key policy of one account refusing what the other allows).
var faultRoles = []string{"", "source", "vault"}

// faultActions are the EC2 actions a fault may single out.
var faultActions = []string{
	"", "CreateSnapshot", "CopySnapshot", "DescribeSnapshots", "CreateTags", "DeleteSnapshot",
	"ModifySnapshotAttribute", "LockSnapshot", "DescribeLockedSnapshots", "DescribeSnapshotAttribute",
	"CreateVolume", "DescribeVolumes", "GetCallerIdentity",
}
