package explore

import (
	"net/url"
	"strings"

	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// The promise on a source being deleted: no copy of it starts, and it is not shared, once EC2
// took its deletion's mark (velero-async.io/deletion-requested-at) before the copy was asked
// for (its copy-requested mark). A deletion marks the source before it looks for copies, and a
// tracker marks a batch's sources before it reads them again and copies: whichever marks first
// is seen by the other. A tracker acting on a view of EC2 read before the deletion's mark (the
// view it caches for a reconcile) sees the mark only in that second read. Judged on each
// CopySnapshot and share request as it is sent.

// catCopiedBeingDeleted is the promise on sources being deleted.
const catCopiedBeingDeleted category = "a source shared or copied though its deletion was marked before the copy was asked for"

// markLog is when EC2 took the marks of sources, as the places of the requests that wrote them
// in the order EC2 answered them (request.completed).
type markLog struct {
	// deleting holds, by source, the first deletion mark EC2 took.
	deleting map[string]int
	// asked holds, by source and copy-requested tag, the last copy-requested mark EC2 took.
	asked map[string]int
}

// noteMarks records the marks q, a CreateTags request EC2 has just answered with success, wrote.
func (w *world) noteMarks(q request, form url.Values) {
	if q.action != "CreateTags" || !q.answered {
		return
	}
	if w.marks.deleting == nil {
		w.marks = markLog{deleting: map[string]int{}, asked: map[string]int{}}
	}
	var ids, keys []string
	for k, vs := range form {
		switch {
		case strings.HasPrefix(k, "ResourceId."):
			ids = append(ids, vs...)
		case strings.HasPrefix(k, "Tag.") && strings.HasSuffix(k, ".Key"):
			keys = append(keys, vs...)
		}
	}
	for _, key := range keys {
		for _, id := range ids {
			switch key {
			case model.TagDeletionRequestedAt:
				if _, ok := w.marks.deleting[id]; !ok {
					w.marks.deleting[id] = q.completed
				}
			case model.TagCopyRequestedAt, model.TagVaultRequestedAt:
				w.marks.asked[id+" "+key] = q.completed
			}
		}
	}
}

// checkCopyOfDeleting checks a CopySnapshot or share request before EC2 serves it: EC2 did not
// take its source's deletion mark before the mark asking for this copy.
func (w *world) checkCopyOfDeleting(q request, form url.Values) {
	id := copySource(q.action, form)
	if id == "" {
		return
	}
	key := model.TagCopyRequestedAt
	if q.action == "ModifySnapshotAttribute" || q.role == "vault" {
		key = model.TagVaultRequestedAt
	}
	deleting, marked := w.marks.deleting[id]
	if asked, ok := w.marks.asked[id+" "+key]; marked && ok && deleting < asked {
		w.violate(catCopiedBeingDeleted, "%s of %s (%s): EC2 took its %s mark (answer %d) before the %s mark of this copy (answer %d)",
			q.action, id, key, model.TagDeletionRequestedAt, deleting, key, asked)
	}
}
