package explore

import (
	"cmp"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Another install's snapshot still marked not returned: another cluster's backup of the same
// name and PV, whose CreateSnapshot (of this plugin) is under way, or returned an error to its
// Velero, so that its snapshot stays velero-async.io/recorded=pending. A deletion of this
// backup looks for the backup's snapshots so marked (its failed CreateSnapshot calls'), by the
// backup's name; an operation of this backup whose candidates carry no UID takes those this
// plugin made. Neither may take the other install's for this backup's: it is never followed,
// copied, deleted or taken for a stray (the promises on other installs' snapshots).

// actPendingOther is another install's CreateSnapshot of a backup of the same name leaving its
// snapshot marked pending.
const actPendingOther = "other install: a snapshot of a backup of the same name, still marked pending"

// pendingOtherSnapshot is another install's snapshot of a backup of the same name and PV pv,
// marked pending, with what this plugin's CreateSnapshot writes at creation: its own create
// token, the volume type, its backup's UID (unless its handoff was lost) and its install's
// identity (none for a release before the install tag), and the copy its location asks for. It
// is of vol: the other install's own volume, or one of this backup's (a static PV on one EBS
// volume in both clusters). One of this backup's volumes without a UID or an install tag could
// be the own snapshot of an operation of the volume, open or to come, by every rule (rule 1
// tells only by the UID and the install): it then carries its install tag.
func (w *world) pendingOtherSnapshot(pv, vol string, withUID bool, install string) {
	if vol != w.otherVols[0] && !withUID {
		install = theirInstall
	}
	tags := veleroTags(pv)
	tags[model.TagRecorded], tags[model.TagVolumeType] = model.RecordedPending, "gp3"
	tags[model.TagCreateToken] = fmt.Sprintf("theirs-pending-%d", len(w.foreign))
	if withUID {
		tags[model.TagBackupUID] = otherUID
	}
	if install != "" {
		tags[model.TagInstall] = install
	}
	if w.setup.copyTo {
		tags[model.TagCopyToRegion] = copyRegion
	}
	out, err := w.other(sourceRegion).CreateSnapshot(context.Background(), &ec2.CreateSnapshotInput{
		VolumeId:          aws.String(vol),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSnapshot, Tags: tagList(tags)}},
	})
	if err != nil {
		w.logf("other install: CreateSnapshot of %s refused: %v", vol, err)
		return
	}
	id := aws.ToString(out.SnapshotId)
	f := foreignSnapshot{account: sourceAccount, region: sourceRegion, tags: tags}
	if vol != w.otherVols[0] {
		f.volumeID, f.started = vol, w.clk.Now()
	}
	w.foreign[id] = f
	w.logf("other install: snapshot %s of %s, backup %s, PV %s, marked pending, UID tag %v, install %s", id, vol, backupName, pv, withUID, cmp.Or(install, noInstall))
}
