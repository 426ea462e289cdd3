package audit

import (
	"context"
	"errors"
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
	"github.com/velero-async/velero-plugin-for-aws/internal/objectstore"
	"github.com/velero-async/velero-plugin-for-aws/internal/vault"
)

// resolveBackupName names the Backup the audit asks the Resolver about: one naming only the
// location audited.
const resolveBackupName = "velero-async-audit"

// Stores reads what Velero keeps in a backup storage location's object storage
// (*objectstore.Reader): the backups it holds, and a backup's record of its native snapshots
// (objectstore.ErrNoRecord when it holds none).
type Stores interface {
	Backups(ctx context.Context, bsl *velerov1.BackupStorageLocation) ([]string, error)
	VolumeSnapshots(ctx context.Context, bsl *velerov1.BackupStorageLocation, backup string) ([]RecordedSnapshot, error)
}

// Auditor reads what an audit judges. Its fields are the narrow ports it reads through.
type Auditor struct {
	// Kube reads Velero's objects and the cluster's identity.
	Kube     client.Reader
	Stores   Stores
	Resolver cli.Resolver
	Clients  cli.Clients
	// Buckets loads the AWS config of the vault buckets' S3 clients (*ec2api.Factory).
	Buckets vault.Configs
	Clock   clock.PassiveClock
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

// Read reads the World of the plugin's locations, auditing every one or only the one named.
func (a *Auditor) Read(ctx context.Context, only string) (World, error) {
	w := World{Now: a.Clock.Now(), Only: only, Stored: map[string]Stored{}, Records: map[string]Record{}}
	var vsls velerov1.VolumeSnapshotLocationList
	if err := a.Kube.List(ctx, &vsls, client.InNamespace(a.Namespace)); err != nil {
		return w, fmt.Errorf("listing the VolumeSnapshotLocations in namespace %s: %w", a.Namespace, err)
	}
	for _, v := range vsls.Items {
		if v.Spec.Provider == a.Provider {
			w.Locations = append(w.Locations, a.location(ctx, v))
		}
	}
	if !slices.ContainsFunc(w.Locations, func(l Location) bool { return only == "" || l.Name == only }) {
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
	a.readStores(ctx, &w)
	a.readPlaces(ctx, &w)
	a.readVaultBuckets(ctx, &w)
	return w, nil
}

// readVaultBuckets lists the records in the vault bucket of every location naming one, with its
// vault credentials.
func (a *Auditor) readVaultBuckets(ctx context.Context, w *World) {
	w.VaultBuckets = map[string]BucketRead{}
	for _, l := range w.Locations {
		b := l.Config.Vault.Bucket
		if l.Err != "" || !b.Enabled() || l.VaultCreds == nil {
			continue
		}
		r := BucketRead{Bucket: b}
		c, err := vault.Client(ctx, a.Buckets, b.Region, *l.VaultCreds)
		if err == nil {
			r.Records, err = vault.ReadRecords(ctx, c, b)
		}
		if err != nil {
			r.Err = err.Error()
		}
		w.VaultBuckets[l.Name] = r
	}
}

// location reads v's config and the credentials the item actions use for it.
func (a *Auditor) location(ctx context.Context, v velerov1.VolumeSnapshotLocation) Location {
	l := Location{Name: v.Name}
	cfg, err := model.ParseConfig(v.Spec.Config)
	l.Config = cfg
	if err != nil {
		l.Err = err.Error()
		return l
	}
	backup := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: resolveBackupName},
		Spec: velerov1.BackupSpec{VolumeSnapshotLocations: []string{v.Name}}}
	choice, err := a.Resolver.ForBackup(ctx, backup, "")
	if err == nil && (len(choice.Locations) == 0 || choice.Locations[0].Name != v.Name) {
		err = fmt.Errorf("its credentials cannot be read: %s", choice.Note)
	}
	if err != nil {
		l.Err = err.Error()
		return l
	}
	l.Creds, l.VaultCreds = choice.Locations[0].Credentials, choice.Locations[0].Vault
	return l
}

// readStores lists the backups of every storage location, and reads the record of each backup
// of the cluster that may have one, from its storage location.
func (a *Auditor) readStores(ctx context.Context, w *World) {
	bsls := map[string]*velerov1.BackupStorageLocation{}
	for i := range w.StorageLocations {
		bsl := &w.StorageLocations[i]
		bsls[bsl.Name] = bsl
		names, err := a.Stores.Backups(ctx, bsl)
		st := Stored{Backups: names}
		if err != nil {
			st.Err = err.Error()
		}
		w.Stored[bsl.Name] = st
	}
	for i := range w.Backups {
		b := &w.Backups[i]
		if b.Status.VolumeSnapshotsAttempted == 0 || !recorded(b.Status.Phase) {
			continue
		}
		bsl, ok := bsls[b.Spec.StorageLocation]
		if !ok {
			w.Records[b.Name] = Record{Err: fmt.Sprintf("its storage location %s is not in the cluster", b.Spec.StorageLocation)}
			continue
		}
		snaps, err := a.Stores.VolumeSnapshots(ctx, bsl, b.Name)
		rec := Record{Snapshots: snaps}
		switch {
		case errors.Is(err, objectstore.ErrNoRecord) && b.Status.Phase == velerov1.BackupPhaseFailed:
			// A backup that failed before Velero recorded its snapshots: it records none.
		case err != nil:
			rec.Err = fmt.Sprintf("storage location %s: %v", bsl.Name, err)
		}
		w.Records[b.Name] = rec
	}
}

// recorded reports whether a backup in phase has a record to read: Velero writes it once the
// item phase is over (a deletion removes it last).
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

// place is where the audit lists snapshots: one kind, credentials and region.
type place struct {
	kind   Kind
	creds  ec2api.Credentials
	region string
	// location names the location it was found through; account the vault account it names.
	location, account string
}

// key identifies a place: a copy region may be another location's region.
func (p place) key() string { return fmt.Sprintf("%s|%s|%s", ownOrVault(p.kind), p.creds, p.region) }

// readPlaces lists the snapshots of every place the audited locations keep them in, then of
// every place their sources asked for a copy in that none of them names now (a config changed
// since), with the credentials of a location that reaches it.
func (a *Auditor) readPlaces(ctx context.Context, w *World) {
	done := map[string]bool{}
	read := func(places []place) {
		for _, p := range places {
			if p.region == "" || done[p.key()] {
				continue
			}
			done[p.key()] = true
			pr := PlaceRead{Kind: ownOrVault(p.kind), Creds: p.creds, Region: p.region, Location: p.location, Account: p.account}
			snaps, vols, err := a.listPlace(ctx, p)
			if err != nil {
				pr.Err = err.Error()
			}
			w.Places = append(w.Places, pr)
			w.Snapshots = append(w.Snapshots, snaps...)
			w.DrillVolumes = append(w.DrillVolumes, vols...)
		}
	}
	var first []place
	for _, l := range w.Locations {
		if l.Err != "" || w.Only != "" && l.Name != w.Only {
			continue
		}
		first = append(first, place{kind: KindSource, creds: l.Creds, region: l.Config.Region, location: l.Name},
			place{kind: KindCopy, creds: l.Creds, region: l.Config.CopyToRegion, location: l.Name})
		if v := l.Config.Vault; v.Enabled() && l.VaultCreds != nil {
			first = append(first, place{kind: KindVault, creds: *l.VaultCreds, region: v.Region, location: l.Name, account: v.AccountID})
		}
	}
	read(first)
	var asked []place
	for _, s := range w.Snapshots {
		if s.Kind != KindSource {
			continue
		}
		asked = append(asked, place{kind: KindCopy, creds: s.Creds, region: s.Tags[model.TagCopyToRegion], location: s.Location})
		if acct := s.Tags[model.TagVaultAccount]; acct != "" {
			for _, l := range w.Locations {
				if l.Err == "" && l.Config.Vault.AccountID == acct && l.VaultCreds != nil {
					asked = append(asked, place{kind: KindVault, creds: *l.VaultCreds, region: s.Tags[model.TagVaultRegion], location: l.Name, account: acct})
				}
			}
		}
	}
	read(asked)
	w.Snapshots, w.DrillVolumes = oncePerSnapshot(w.Snapshots), oncePerVolume(w.DrillVolumes)
}

// oncePerSnapshot keeps one listing of each snapshot that two places reached (a location
// restoring from the vault reaches the vault's region with the vault's credentials): the one
// with its lock, else the first.
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

// listPlace lists the snapshots of p's account in p's region that carry Velero's backup tag,
// with their locks where any is a vault copy, and the drills' volumes in a location's own
// account.
func (a *Auditor) listPlace(ctx context.Context, p place) ([]Snapshot, []DrillVolume, error) {
	c, err := a.Clients.Client(ctx, p.region, p.creds)
	if err != nil {
		return nil, nil, err
	}
	var vols []DrillVolume
	if p.kind != KindVault {
		if vols, err = ListDrillVolumes(ctx, c, p.region, p.creds); err != nil {
			return nil, nil, err
		}
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
			out = append(out, snapshotOf(s, p))
		}
	}
	if slices.ContainsFunc(out, func(s Snapshot) bool { return s.Kind == KindVault }) {
		locks, err := listLocks(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		for i := range out {
			out[i].Lock = locks[out[i].ID]
		}
	}
	return out, vols, nil
}

// snapshotOf is s as the audit keeps it: a snapshot in the vault account, or one naming the
// account it was copied from (a location restoring from the vault reads the vault copies as its
// own account's), is a vault copy; another copy in the location's account is a copy.
func snapshotOf(s types.Snapshot, p place) Snapshot {
	tags := map[string]string{}
	for _, t := range s.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	kind := KindSource
	switch {
	case p.kind == KindVault || tags[model.TagSourceAccount] != "":
		kind = KindVault
	case tags[model.TagSourceSnapshotID] != "":
		kind = KindCopy
	}
	out := Snapshot{ID: aws.ToString(s.SnapshotId), Account: aws.ToString(s.OwnerId), Region: p.region, Kind: kind,
		State: string(s.State), Started: aws.ToTime(s.StartTime), Completed: aws.ToTime(s.CompletionTime),
		Tier: string(s.StorageTier), Tags: tags, Location: p.location, Creds: p.creds}
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
			return nil, fmt.Errorf("listing the locked snapshots, which a vault copy here may be (allow ec2:DescribeLockedSnapshots to these credentials): %w", err)
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
