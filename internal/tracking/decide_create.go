package tracking

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Waits of CreateSnapshot between refused requests.
const (
	// perVolumeRateWait outlasts EC2's interval between two snapshots of one volume (15 s).
	perVolumeRateWait = 15 * time.Second
	// concurrentLimitWait lets one of the volume's pending snapshots complete.
	concurrentLimitWait = 30 * time.Second
	// throttleWait follows throttling that outlasted the SDK's own retries.
	throttleWait = 5 * time.Second
)

// createCall is what of one CreateSnapshot call its decisions name.
type createCall struct {
	volumeID, region, creds, token string
	patience, listingLag           time.Duration
}

// createStep is what a CreateSnapshot call does next: send its request (after wait), look up
// the snapshot a request may have made (ambiguous: the last answer was lost or a server
// error, so that request may have made one), or fail with err.
type createStep struct {
	wait      time.Duration
	lookUp    bool
	ambiguous bool
	err       error
}

// decideCreateAnswer decides what follows EC2's refusal err of a CreateSnapshot request, at
// now, mayHaveMade earlier requests having possibly made a snapshot: an answer that may hide
// a snapshot is looked up before any new request; EC2's per-volume and concurrency limits,
// throttling and credentials not ready yet are waited out while the patience lasts (the
// per-volume limit after an unanswered request says that request made a snapshot: it is looked
// up); any other refusal fails at once, naming the credentials.
func decideCreateAnswer(call createCall, err error, mayHaveMade int, now, deadline time.Time) createStep {
	var wait time.Duration
	switch code := ec2api.Code(err); {
	case ec2api.IsAmbiguous(err):
		return createStep{lookUp: true, ambiguous: true}
	case code == ec2api.CodeSnapshotCreationPerVolumeRateExceeded:
		if mayHaveMade > 0 {
			return createStep{lookUp: true}
		}
		wait = perVolumeRateWait
	case code == ec2api.CodeConcurrentSnapshotLimitExceeded:
		wait = concurrentLimitWait
	case ec2api.IsThrottle(err), ec2api.IsCredentialsFailure(err):
		wait = throttleWait
	default:
		return createStep{err: fmt.Errorf("creating a snapshot of volume %s in %s with %s: %w", call.volumeID, call.region, call.creds, err)}
	}
	if now.Add(wait).After(deadline) {
		return createStep{err: fmt.Errorf("creating a snapshot of volume %s in %s: still refused after %s: %w", call.volumeID, call.region, call.patience, err)}
	}
	return createStep{wait: wait}
}

// decideAfterLookUp decides what follows a look-up that found no snapshot made by the call's
// requests, at now: known says EC2 answered it. A look-up EC2 could not answer is tried again
// while the patience lasts; after one it answered, the request is sent again when a listing lag
// still fits in the patience, and otherwise the call fails, naming the token a snapshot its
// requests may yet show carries.
func decideAfterLookUp(call createCall, known bool, requests int, unanswered error, now, deadline time.Time) createStep {
	switch {
	case !known && now.After(deadline):
		return createStep{err: fmt.Errorf("creating a snapshot of volume %s in %s: the outcome of a request is unknown and EC2 could not be asked for %s", call.volumeID, call.region, call.patience)}
	case !known:
		return createStep{lookUp: true}
	case now.Add(call.listingLag).After(deadline):
		return createStep{err: fmt.Errorf("creating a snapshot of volume %s in %s: %d requests in %s got no answer or a server error, and EC2 lists no snapshot made by them; "+
			"one may still appear, tagged %s=%s and %s=%s, and the backup's operation deletes it: %w",
			call.volumeID, call.region, requests, call.patience, model.TagCreateToken, call.token, model.TagRecorded, model.RecordedPending, unanswered)}
	}
	return createStep{}
}

// decideMarkAnswer judges EC2's answer err to marking a snapshot recorded=value, at now: read is
// the snapshot as listed after an answer that may hide the mark (lost, a server error). The
// mark is written when EC2 accepted it or the read shows it; a transient failure is tried
// again after a wait while the call's deadline allows; otherwise err stands.
func decideMarkAnswer(err error, read []types.Snapshot, value string, now, deadline time.Time) (wait time.Duration, _ error) {
	switch {
	case err == nil, len(read) == 1 && model.TagValue(read[0].Tags, model.TagRecorded) == value:
		return 0, nil
	case !ec2api.IsTransient(err) || now.Add(throttleWait).After(deadline):
		return 0, err
	}
	return throttleWait, nil
}
