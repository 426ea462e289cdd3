package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	velerov1api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/itemoperation"
	corev1api "k8s.io/api/core/v1"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/harness"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

const (
	// maxTags is EC2's limit of tags on a resource.
	maxTags = 50
	// listingLagOfThePlugin is the plugin's default wait for EC2 to list what it made: a
	// cancelled copy could be started again once it has passed.
	listingLagOfThePlugin = 30 * time.Second
)

// reusedNames plays what makes a backup's name identify nothing: a backup named again while the
// first one's snapshots and copies are still in the account (a Backup removed without its
// snapshots), and, at the same time, another Velero install backing up other volumes under the
// same name into the same account. Every backup must complete with one snapshot and one copy per
// volume of its own, and deleting the three must leave nothing.
func reusedNames(ctx context.Context, e *rig.Env, res *rig.Result, volumes int) error {
	return withRig(e, "reused names", rig.FastConfig(7), 2*volumes, func(r *rig.Rig) error {
		mine, theirs := r.PVs[:volumes], r.PVs[volumes:]
		other, err := r.NewCore()
		if err != nil {
			return err
		}
		loc := rig.Location(rig.SourceRegion, rig.CopyRegion)
		const name = "nightly"
		first, err := r.BackupPVs(ctx, res, harness.BackupRequest{Name: name, Location: loc, PVs: mine})
		if err != nil {
			return err
		}
		var again, elsewhere *harness.BackupResult
		var errAgain, errElsewhere error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			again, errAgain = r.BackupPVs(ctx, res, harness.BackupRequest{Name: name, Location: loc, PVs: mine})
		}()
		go func() {
			defer wg.Done()
			elsewhere, errElsewhere = other.Backup(ctx, harness.BackupRequest{Name: name, Location: loc, PVs: theirs})
		}()
		wg.Wait()
		if errAgain != nil || errElsewhere != nil {
			return fmt.Errorf("backups of %s: %v, %v", name, errAgain, errElsewhere)
		}
		res.Operations += len(elsewhere.Operations)
		res.LongestReconcile = max(res.LongestReconcile, elsewhere.LongestReconcile)
		for _, op := range elsewhere.Operations {
			if op.Status.Phase == itemoperation.OperationPhaseFailed {
				res.Failed++
			}
		}
		checkOwn(res, first, mine)
		checkOwn(res, again, mine)
		checkOwn(res, elsewhere, theirs)
		res.Duplicates = rig.Duplicates(r.Sim, name) // over all three backups of the name, each by its UID
		for _, b := range []*harness.BackupResult{first, again} {
			r.Delete(res, b, loc)
		}
		if err := other.DeleteBackup(elsewhere, loc); err != nil {
			res.Problemf("deleting the other install's backup: %v", err)
		}
		r.CountLeaked(res, deletionSettle)
		return nil
	})
}

// checkOwn records as problems a backup that did not complete, or whose snapshots are not
// exactly one per PV of pvs.
func checkOwn(res *rig.Result, b *harness.BackupResult, pvs []*corev1api.PersistentVolume) {
	if b.Backup.Status.Phase != velerov1api.BackupPhaseCompleted {
		res.Problemf("backup %s (%s) is %s: %v", b.Backup.Name, b.Backup.UID, b.Backup.Status.Phase, b.OperationErrors)
	}
	if len(b.Snapshots) != len(pvs) || len(b.Operations) != len(pvs) {
		res.Problemf("backup %s (%s): %d snapshots and %d operations for %d PVs", b.Backup.Name, b.Backup.UID, len(b.Snapshots), len(b.Operations), len(pvs))
	}
}

// untaggable fills one source snapshot to EC2's 50 tags while its backup waits (another tool
// tagging it): only that operation may fail, naming the refusal; every other volume gets its copy.
func untaggable(ctx context.Context, e *rig.Env, res *rig.Result, volumes int) error {
	return withRig(e, "untaggable", rig.FastConfig(8), volumes, func(r *rig.Rig) error {
		victim := r.PVs[len(r.PVs)-1].Name
		const name = "untaggable"
		var fillErr error
		r.Core.Hooks.AfterItem = func(i int) {
			if i != len(r.PVs)-1 {
				return
			}
			src, _ := r.SourceOf(name, victim)
			tags := make([]types.Tag, 0, maxTags)
			for k := len(src.Tags); k < maxTags; k++ {
				tags = append(tags, types.Tag{Key: aws.String(fmt.Sprintf("other-tool-%02d", k)), Value: aws.String("x")})
			}
			_, fillErr = r.EC2(rig.SourceRegion).CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{src.ID}, Tags: tags})
		}
		defer func() { r.Core.Hooks.AfterItem = nil }()
		err := backupAndDeleteTo(ctx, r, res, name, rig.CopyRegion, map[string]string{victim: "TagLimitExceeded"})
		if fillErr != nil {
			res.Problemf("filling the tags of %s's snapshot: %v", victim, fillErr)
		}
		res.WantFailed = 1
		return err
	})
}

// cancelled has Velero cancel one operation early (its item-operation timeout) while the others
// go on past EC2's listing lag: that operation fails, and no copy of its source may exist at the
// end, although later reconciles could start one.
func cancelled(ctx context.Context, e *rig.Env, res *rig.Result, volumes int) error {
	cfg := rig.FastConfig(9)
	cfg.CopyDuration = ec2sim.Range(listingLagOfThePlugin, listingLagOfThePlugin+5*time.Second)
	return withRig(e, "cancelled", cfg, volumes, func(r *rig.Rig) error {
		victim := r.PVs[0].Name
		r.Core.Hooks.Expire = func(n int, op *harness.Operation) bool { return n == 3 && op.Resource.Name == victim }
		defer func() { r.Core.Hooks.Expire = nil }()
		const name = "cancelled"
		loc := rig.Location(rig.SourceRegion, rig.CopyRegion)
		b, err := r.Backup(ctx, res, name, loc)
		if err != nil {
			return err
		}
		res.WantFailed = 1
		r.Check(res, b, map[string]string{victim: "timed out"})
		if src, cp := r.SourceOf(name, victim); cp.ID != "" {
			res.Duplicates++ // a copy nobody tracks, holding a slot
			res.Problemf("the cancelled operation's source %s has copy %s (%s)", src.ID, cp.ID, cp.State)
		}
		r.Delete(res, b, loc)
		r.CountLeaked(res, deletionSettle)
		return nil
	})
}
