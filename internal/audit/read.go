package audit

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/cli"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// resolveBackupName names the Backup the audit asks the Resolver about: one naming only the
// location audited.
const resolveBackupName = "velero-async-audit"

// Auditor reads what an audit judges. Its fields are the narrow ports it reads through.
type Auditor struct {
	// Kube reads Velero's objects and the cluster's identity.
	Kube     client.Reader
	Records  Records
	Resolver cli.Resolver
	Clients  cli.Clients
	Clock    clock.PassiveClock
	// Namespace is Velero's; Provider the plugin's (location.DefaultProvider).
	Namespace, Provider string
}

// Run reads, decides, and, when deleteOrphans, deletes this install's orphans.
func (a *Auditor) Run(ctx context.Context, only string, opts Options, deleteOrphans bool) (Report, error) {
	w, err := a.Read(ctx, only)
	if err != nil {
		return Report{}, err
	}
	rep := Decide(w, opts)
	if deleteOrphans {
		DeleteOrphans(ctx, a.Clients, w, &rep)
	}
	return rep, nil
}

// place is where the audit lists snapshots: one kind, credentials and region.
type place struct {
	kind   Kind
	creds  ec2api.Credentials
	region string
	// location names the location it was found through, for messages.
	location string
}

// Read reads the World of the plugin's locations, or only the one named.
func (a *Auditor) Read(ctx context.Context, only string) (World, error) {
	w := World{Now: a.Clock.Now(), Records: map[string]Record{}}
	var vsls velerov1.VolumeSnapshotLocationList
	if err := a.Kube.List(ctx, &vsls, client.InNamespace(a.Namespace)); err != nil {
		return w, fmt.Errorf("listing the VolumeSnapshotLocations in namespace %s: %w", a.Namespace, err)
	}
	for _, v := range vsls.Items {
		if v.Spec.Provider != a.Provider || only != "" && v.Name != only {
			continue
		}
		l := Location{Name: v.Name}
		cfg, err := model.ParseConfig(v.Spec.Config)
		if err != nil {
			l.Err = err.Error()
		}
		l.Config = cfg
		w.Locations = append(w.Locations, l)
	}
	if len(w.Locations) == 0 {
		return w, fmt.Errorf("no VolumeSnapshotLocation of provider %s%s in namespace %s", a.Provider, named(only), a.Namespace)
	}
	sort.Slice(w.Locations, func(i, j int) bool { return w.Locations[i].Name < w.Locations[j].Name })
	var err error
	if w.Install, err = location.ReadInstall(ctx, a.Kube, a.Namespace); err != nil {
		w.InstallErr = err.Error()
	}
	var backups velerov1.BackupList
	var schedules velerov1.ScheduleList
	var bsls velerov1.BackupStorageLocationList
	for _, list := range []client.ObjectList{&backups, &schedules, &bsls} {
		if err := a.Kube.List(ctx, list, client.InNamespace(a.Namespace)); err != nil {
			return w, fmt.Errorf("listing %T in namespace %s: %w", list, a.Namespace, err)
		}
	}
	w.Backups, w.Schedules, w.StorageLocations = backups.Items, schedules.Items, bsls.Items
	for i := range w.Backups {
		b := &w.Backups[i]
		if b.Status.VolumeSnapshotsAttempted == 0 || !recorded(b.Status.Phase) {
			continue
		}
		snaps, err := a.Records.VolumeSnapshots(ctx, b)
		rec := Record{Snapshots: snaps}
		if err != nil {
			rec.Err = err.Error()
		}
		w.Records[b.Name] = rec
	}
	for _, p := range a.places(ctx, w.Locations, &w) {
		snaps, vols, err := a.listPlace(ctx, p)
		if err != nil {
			w.Unread = append(w.Unread, fmt.Sprintf("%s (location %s, %s): %v", placeName(p.kind, "", p.region), p.location, p.creds, err))
			continue
		}
		w.Snapshots = append(w.Snapshots, snaps...)
		w.DrillVolumes = append(w.DrillVolumes, vols...)
		w.Read = append(w.Read, Place{Kind: ownOrVault(p.kind), Region: p.region})
	}
	w.Snapshots, w.DrillVolumes = oncePerSnapshot(w.Snapshots), oncePerVolume(w.DrillVolumes)
	return w, nil
}

// oncePerSnapshot keeps one listing of each snapshot that two places reached (a location
// restoring from the vault reaches the vault's region with the vault's credentials): the one
// with its lock (read in the vault's place), else the first.
func oncePerSnapshot(snaps []Snapshot) []Snapshot {
	at := map[string]int{}
	var out []Snapshot
	for _, s := range snaps {
		key := s.Account + "/" + s.ID
		i, seen := at[key]
		switch {
		case !seen:
			at[key] = len(out)
			out = append(out, s)
		case s.Lock != nil:
			out[i] = s
		}
	}
	return out
}

// oncePerVolume keeps one listing of each drill volume that two places reached.
func oncePerVolume(vols []DrillVolume) []DrillVolume {
	seen := map[string]bool{}
	return slices.DeleteFunc(vols, func(v DrillVolume) bool {
		dup := seen[v.ID]
		seen[v.ID] = true
		return dup
	})
}

// recorded reports whether a backup in phase has a record to read: Velero writes it once the
// item phase is over, and removes it while deleting the backup.
func recorded(phase velerov1.BackupPhase) bool {
	switch phase {
	case "", velerov1.BackupPhaseNew, velerov1.BackupPhaseInProgress, velerov1.BackupPhaseFailedValidation, velerov1.BackupPhaseDeleting:
		return false
	}
	return true
}

func named(only string) string {
	if only == "" {
		return ""
	}
	return " named " + only
}

// places lists, without repeats, where the locations keep sources, copies and vault copies,
// with the credentials the item actions use there.
func (a *Auditor) places(ctx context.Context, locs []Location, w *World) []place {
	seen := map[string]bool{}
	var out []place
	add := func(p place) {
		key := fmt.Sprintf("%s|%s|%s", ownOrVault(p.kind), p.creds, p.region) // a copy region may be another location's region
		if p.region != "" && !seen[key] {
			seen[key] = true
			out = append(out, p)
		}
	}
	for _, l := range locs {
		if l.Err != "" {
			w.Unread = append(w.Unread, fmt.Sprintf("location %s: %s", l.Name, l.Err))
			continue
		}
		backup := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: resolveBackupName},
			Spec: velerov1.BackupSpec{VolumeSnapshotLocations: []string{l.Name}}}
		choice, err := a.Resolver.ForBackup(ctx, backup, "")
		if err == nil && (len(choice.Locations) == 0 || choice.Locations[0].Name != l.Name) {
			err = fmt.Errorf("its credentials cannot be read: %s", choice.Note)
		}
		if err != nil {
			w.Unread = append(w.Unread, fmt.Sprintf("location %s: %v", l.Name, err))
			continue
		}
		loc := choice.Locations[0]
		add(place{kind: KindSource, creds: loc.Credentials, region: l.Config.Region, location: l.Name})
		add(place{kind: KindCopy, creds: loc.Credentials, region: l.Config.CopyToRegion, location: l.Name})
		if l.Config.Vault.Enabled() && loc.Vault != nil {
			add(place{kind: KindVault, creds: *loc.Vault, region: l.Config.Vault.Region, location: l.Name})
		}
	}
	return out
}

// listPlace lists the snapshots of p's account in p's region that carry Velero's backup tag,
// with their locks in a vault, and the drills' volumes in a location's own account.
func (a *Auditor) listPlace(ctx context.Context, p place) ([]Snapshot, []DrillVolume, error) {
	c, err := a.Clients.Client(ctx, p.region, p.creds)
	if err != nil {
		return nil, nil, err
	}
	locks := map[string]*Lock{}
	var vols []DrillVolume
	if p.kind == KindVault {
		locks, err = listLocks(ctx, c)
	} else {
		vols, err = ListDrillVolumes(ctx, c, p.region, p.creds)
	}
	if err != nil {
		return nil, nil, err
	}
	in := &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}, MaxResults: aws.Int32(describePage),
		Filters: []types.Filter{{Name: aws.String("tag-key"), Values: []string{model.TagBackup}}}}
	var out []Snapshot
	for pages := ec2.NewDescribeSnapshotsPaginator(c, in); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, s := range page.Snapshots {
			out = append(out, snapshotOf(s, p, locks))
		}
	}
	return out, vols, nil
}

// snapshotOf is s as the audit keeps it: a snapshot in the vault account, or one naming the
// account it was copied from (a location restoring from the vault reads the vault copies as its
// own account's), is a vault copy; another copy in the location's account is a copy.
func snapshotOf(s types.Snapshot, p place, locks map[string]*Lock) Snapshot {
	tags := map[string]string{}
	for _, t := range s.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	kind := p.kind
	switch {
	case kind == KindVault || tags[model.TagSourceAccount] != "":
		kind = KindVault
	case tags[model.TagSourceSnapshotID] != "":
		kind = KindCopy
	default:
		kind = KindSource
	}
	out := Snapshot{ID: aws.ToString(s.SnapshotId), Account: aws.ToString(s.OwnerId), Region: p.region, Kind: kind,
		State: string(s.State), Started: aws.ToTime(s.StartTime), Completed: aws.ToTime(s.CompletionTime),
		Tier: string(s.StorageTier), Tags: tags, Lock: locks[aws.ToString(s.SnapshotId)], Creds: p.creds}
	if s.FullSnapshotSizeInBytes != nil {
		out.Bytes, out.Exact = *s.FullSnapshotSizeInBytes, true
	} else {
		out.Bytes = int64(aws.ToInt32(s.VolumeSize)) << 30
	}
	return out
}

// listLocks lists the locked snapshots of c's account and region.
func listLocks(ctx context.Context, c ec2api.EC2) (map[string]*Lock, error) {
	locks := map[string]*Lock{}
	in := &ec2.DescribeLockedSnapshotsInput{MaxResults: aws.Int32(describePage)}
	for {
		out, err := c.DescribeLockedSnapshots(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("listing the locked snapshots: %w", err)
		}
		for _, l := range out.Snapshots {
			locks[aws.ToString(l.SnapshotId)] = &Lock{Mode: lockMode(l.LockState), State: string(l.LockState), Until: aws.ToTime(l.LockExpiresOn)}
		}
		if aws.ToString(out.NextToken) == "" {
			return locks, nil
		}
		in.NextToken = out.NextToken
	}
}

// lockMode is the mode of a lock in state: a compliance lock in its cool-off is a compliance
// lock; an expired one's mode is not told.
func lockMode(state types.LockState) string {
	switch state {
	case types.LockStateCompliance, types.LockStateComplianceCooloff:
		return string(types.LockModeCompliance)
	case types.LockStateGovernance:
		return string(types.LockModeGovernance)
	}
	return ""
}
