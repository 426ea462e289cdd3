package tracking

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/velero-async/velero-plugin-for-aws/internal/ebs"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/mockec2"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
)

// The decisions of Progress and Cancel, one table each, a row per rule of the README's Tags
// section, Watching progress and Vault account copies.

// Which snapshots this plugin made: told by what its CreateSnapshot writes at creation, never by
// another tag of its prefix that a volume can carry.
func TestWhichSnapshotsThisPluginMade(t *testing.T) {
	tests := []struct {
		name string
		tags []string
		want bool
	}{
		{"a snapshot of this release carries its create token", []string{model.TagCreateToken, "t"}, true},
		{"a snapshot of this release carries its recorded mark", []string{model.TagRecorded, model.RecordedReturned}, true},
		{"an earlier release's snapshot carries the volume type it wrote", []string{model.TagVolumeType, "gp3"}, true},
		{"the upstream plugin's snapshot of a volume this plugin restored carries only the restore token", []string{model.TagRestoreToken, "r"}, false},
		{"a snapshot of a volume someone tagged with a copy region is not this plugin's", []string{model.TagCopyToRegion, mockec2.DstRegion}, false},
		{"a snapshot with no tag of this plugin is not its", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(tt.tags...))
			if got := model.MadeByThisPlugin(&s); got != tt.want {
				t.Errorf("madeByThisPlugin = %v, want %v", got, tt.want)
			}
		})
	}
}

// Which sources a Progress call copies: any source of the backup an operation follows, in one
// batch, and never one the rules rule out.
func TestWhichSourcesAFillCopies(t *testing.T) {
	open := fillFacts{followed: true}
	with := func(f func(*fillFacts)) fillFacts { x := open; f(&x); return x }
	tests := []struct {
		name  string
		facts fillFacts
		want  verdict
	}{
		{"the source of an open operation is copied, whichever operation's Progress call fills", open, copyNow},
		{"a source no operation follows yet waits for one to claim it (a stray, not the one of its PV carrying the backup's UID, never is copied)", fillFacts{}, copyOnClaim},
		{"a vault copy waits for its own operation's claim in this process: an operation that failed in an earlier one, its copy-failed mark refused, looks open to a fresh process", with(func(f *fillFacts) { f.vault = true }), copyOnClaim},
		{"a vault copy of a source its operation claimed in this process is shared and copied in the fill", with(func(f *fillFacts) { f.vault, f.claimed = true, true }), copyNow},
		{"a source whose operation this process reported ended is not copied", with(func(f *fillFacts) { f.ended = true }), copyNever},
		{"a source whose copy into another target was refused or failed is neither shared nor copied", with(func(f *fillFacts) { f.failing = true }), copyNever},
		{"a source marked copy-failed (its operation failed, in this process or another) is neither shared nor copied", with(func(f *fillFacts) { f.failed = true }), copyNever},
		{"a source with its copy is not copied again", with(func(f *fillFacts) { f.copied = true }), copyNever},
		{"a source marked copy-cancelled is not copied", with(func(f *fillFacts) { f.cancelled = true }), copyNever},
		{"a source past the item-operation timeout is not copied", with(func(f *fillFacts) { f.timedOut = true }), copyNever},
		{"a source still marked recorded=pending is not copied", with(func(f *fillFacts) { f.unreturned = true }), copyNever},
		{"a source whose deletion began is not copied", with(func(f *fillFacts) { f.deleting = true }), copyNever},
		{"a source whose copy was asked for within the listing lag waits for EC2's listing", with(func(f *fillFacts) { f.requested = true }), copyLater},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideFill(tt.facts); got != tt.want {
				t.Errorf("decideFill(%+v) = %d, want %d", tt.facts, got, tt.want)
			}
		})
	}
}

// When an operation with copies ends: a failed copy fails it, but only once no vault copy is
// still being made, locked or unshared; a vault phase with no copy is ended without one, its
// share removed.
func TestWhenAnOperationWithCopiesEnds(t *testing.T) {
	regional, vault := model.Target{Region: mockec2.DstRegion}, model.Target{Account: "222222222222", Region: "eu-west-1"}
	refused := phase{err: "copy of snapshot snap-0000000a to us-west-2 refused: KMS key"}
	copied := phase{units: 100, done: true, desc: "copy snap-c0000001 in us-west-2"}
	vaultDone := phase{units: 100, done: true, desc: "vault copy snap-v0000001"}
	vaultPending := phase{units: 40, busy: true, desc: "vault copy snap-v0000001: 50%"}
	vaultWaiting := phase{desc: "waiting for a copy slot in vault account 222222222222 in eu-west-1"}
	tests := []struct {
		name          string
		phases        []phase
		wantCompleted bool
		wantErr       string
		wantDesc      string
		wantAbandon   []int
	}{
		{name: "every copy done: the operation completes", phases: []phase{copied, vaultDone}, wantCompleted: true, wantDesc: "and its copy snap-c0000001 in us-west-2 and vault copy"},
		{name: "a copy still pending: the operation waits", phases: []phase{copied, vaultPending}, wantDesc: "vault copy snap-v0000001: 50%"},
		{name: "the regional copy refused while the vault copy is being made: it waits to lock and unshare, saying it will fail", phases: []phase{refused, vaultPending},
			wantDesc: "refused: KMS key; before failing: vault copy snap-v0000001: 50%"},
		{name: "the regional copy refused with no vault copy made: the vault phase ends without one, its share removed", phases: []phase{refused, vaultWaiting},
			wantCompleted: true, wantErr: "refused: KMS key", wantAbandon: []int{1}},
		{name: "the regional copy refused with the vault copy locked and unshared: the operation fails", phases: []phase{refused, vaultDone},
			wantCompleted: true, wantErr: "refused: KMS key"},
		{name: "the vault copy refused: the operation fails at once, the regional copy left to complete", phases: []phase{{units: 10, desc: "copy snap-c0000001 to us-west-2: 10%"}, {err: "vault copy refused"}},
			wantCompleted: true, wantErr: "vault copy refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets := []model.Target{regional, vault}
			if got := decideAbandon(targets, tt.phases); !slices.Equal(got, tt.wantAbandon) {
				t.Errorf("decideAbandon = %v, want %v", got, tt.wantAbandon)
			}
			p := decideReport(model.Operation{Region: mockec2.SrcRegion, VolumeID: mockec2.VolA}, "snap-0000000a", tt.phases, velero.OperationProgress{NCompleted: 100})
			if p.Completed != tt.wantCompleted || !strings.Contains(p.Err, tt.wantErr) || tt.wantErr == "" && p.Err != "" || !strings.Contains(p.Description, tt.wantDesc) {
				t.Errorf("got completed=%v err %q description %q; want completed=%v, err with %q, description with %q",
					p.Completed, p.Err, p.Description, tt.wantCompleted, tt.wantErr, tt.wantDesc)
			}
		})
	}
}

// What Cancel does at Velero's item-operation timeout: it removes a vault's share and deletes a
// copy still pending, but never one that is kept: locked, or a vault copy vaultRetainOnDelete
// keeps.
func TestWhatCancelDeletes(t *testing.T) {
	regional, vault := model.Target{Region: mockec2.DstRegion}, model.Target{Account: "222222222222", Region: "eu-west-1"}
	intent := []string{model.TagCopyToRegion, mockec2.DstRegion, model.TagVaultAccount, vault.Account, model.TagVaultRegion, vault.Region}
	tests := []struct {
		name      string
		srcTags   []string
		vaultCopy []string          // the vault copy's own tags
		config    map[string]string // the location's config now
		copyState types.SnapshotState
		lock      types.LockState
		want      []cancelStep
	}{
		{name: "pending copies are deleted", copyState: types.SnapshotStatePending,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}, {tg: vault, copyID: "snap-v0000001"}}},
		{name: "a shared source's share is removed first", srcTags: []string{model.TagVaultSharedAt, "2026-11-30T03:00:00Z"}, copyState: types.SnapshotStatePending,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}, {tg: vault, unshare: true}, {tg: vault, copyID: "snap-v0000001"}}},
		{name: "a locked pending vault copy is kept", copyState: types.SnapshotStatePending, lock: types.LockStateGovernance,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}}},
		{name: "a pending vault copy of a source vaultRetainOnDelete keeps is kept", srcTags: []string{model.TagVaultRetainOnDelete, "true"}, copyState: types.SnapshotStatePending,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}}},
		{name: "a pending vault copy tagged to be retained is kept", vaultCopy: []string{model.TagVaultRetainOnDelete, "true"}, copyState: types.SnapshotStatePending,
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}}},
		{name: "a pending vault copy the location's vaultRetainOnDelete, turned on since the snapshot was taken, keeps is kept", copyState: types.SnapshotStatePending,
			config: map[string]string{model.ConfigRegion: mockec2.SrcRegion, model.ConfigVaultAccountID: vault.Account, model.ConfigVaultRegion: vault.Region,
				model.ConfigVaultProfile: "vault", model.ConfigVaultRetainOnDelete: "true"},
			want: []cancelStep{{tg: regional, copyID: "snap-c0000001"}}},
		{name: "completed copies are the backup's and stay", copyState: types.SnapshotStateCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(append(slices.Clone(intent), tt.srcTags...)...))
			v := newBackupView(ebs.Place{Config: tt.config}, mockec2.SrcRegion, model.BackupIdentity{Name: mockec2.BackupName}, nil)
			v.locks = map[string]types.LockState{"snap-v0000001": tt.lock}
			vaultCopy := mockec2.CopyOfSnap("snap-v0000001", src, tt.copyState)
			mockec2.WithTags(tt.vaultCopy...)(&vaultCopy)
			v.copies = map[model.Target]map[string][]types.Snapshot{
				regional: {"snap-0000000a": {mockec2.CopyOfSnap("snap-c0000001", src, tt.copyState)}},
				vault:    {"snap-0000000a": {vaultCopy}},
			}
			got := decideCancel(v, model.Operation{}, &src, velerov1.BackupStatus{}, decideCfg{}, mockec2.T0).steps
			if !slices.Equal(got, tt.want) {
				t.Errorf("decideCancel's steps = %+v, want %+v", got, tt.want)
			}
			for _, st := range got {
				if st.copyID != "" && aws.ToString(v.copyOf(st.tg, "snap-0000000a").SnapshotId) != st.copyID {
					t.Errorf("step %+v deletes another snapshot than the target's copy", st)
				}
			}
		})
	}
}

// What a Cancel does with the operation's source, by what Velero and the source show.
func TestWhatCancelDoes(t *testing.T) {
	const window = time.Hour
	intent := []string{model.TagCopyToRegion, mockec2.DstRegion}
	unreturned := []string{model.TagRecorded, model.RecordedPending}
	failedOne := velerov1.BackupStatus{VolumeSnapshotsAttempted: 2, VolumeSnapshotsCompleted: 1}
	tests := []struct {
		name   string
		tags   []string
		status velerov1.BackupStatus
		after  time.Duration // since the operation was opened
		want   cancelPlan
	}{
		{name: "a source asking for a copy is marked cancelled", tags: intent, want: cancelPlan{markCancelled: true}},
		{name: "a source asking for no copy is left as it is", want: cancelPlan{}},
		{name: "a snapshot Velero recorded as failed is deleted", tags: append(slices.Clone(intent), unreturned...), status: failedOne, after: 2 * window,
			want: cancelPlan{deleteUnreturned: true}},
		{name: "a snapshot whose CreateSnapshot may still return is left", tags: append(slices.Clone(intent), unreturned...), status: failedOne, after: window / 2,
			want: cancelPlan{}},
		{name: "an unreturned snapshot Velero counts no failure for is neither deleted nor marked", tags: append(slices.Clone(intent), unreturned...), after: 2 * window,
			want: cancelPlan{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(tt.tags...))
			src.StartTime = aws.Time(mockec2.T0)
			v := newBackupView(ebs.Place{}, mockec2.SrcRegion, model.BackupIdentity{Name: mockec2.BackupName}, nil)
			op := model.Operation{Region: mockec2.SrcRegion, VolumeID: mockec2.VolA, Issued: mockec2.T0}
			got := decideCancel(v, op, &src, tt.status, decideCfg{createWindow: window}, mockec2.T0.Add(tt.after))
			if got.deleteUnreturned != tt.want.deleteUnreturned || got.markCancelled != tt.want.markCancelled {
				t.Errorf("decideCancel = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// What a read of the backup's snapshots is taken for.
func TestWhatTheViewTakesEachSnapshotFor(t *testing.T) {
	regional, vault := model.Target{Region: mockec2.DstRegion}, model.Target{Account: "222222222222", Region: "eu-west-1"}
	src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted)
	ownedBy := func(s types.Snapshot, account string) types.Snapshot { s.OwnerId = aws.String(account); return s }
	tests := []struct {
		name          string
		read          backupRead
		wantSources   int
		wantCopies    map[model.Target]int
		wantStrangers map[model.Target]string
	}{
		{name: "a snapshot that is no copy is a source of its volume",
			read: backupRead{listed: []types.Snapshot{src}}, wantSources: 1},
		{name: "a copy listed in the source region is no source",
			read: backupRead{listed: []types.Snapshot{src, mockec2.CopyOfSnap("snap-c0000001", src, types.SnapshotStateCompleted)}}, wantSources: 1},
		{name: "a copy is filed under its target and source",
			read:        backupRead{listed: []types.Snapshot{src}, copies: map[model.Target][]types.Snapshot{regional: {mockec2.CopyOfSnap("snap-c0000001", src, types.SnapshotStatePending)}}},
			wantSources: 1, wantCopies: map[model.Target]int{regional: 1}},
		{name: "a vault copy the vault account owns is a vault copy",
			read:        backupRead{listed: []types.Snapshot{src}, copies: map[model.Target][]types.Snapshot{vault: {ownedBy(mockec2.CopyOfSnap("snap-v0000001", src, types.SnapshotStateCompleted), vault.Account)}}},
			wantSources: 1, wantCopies: map[model.Target]int{vault: 1}},
		{name: "a snapshot another account owns is never a vault copy: the vault credentials are not the vault's",
			read:        backupRead{listed: []types.Snapshot{src}, copies: map[model.Target][]types.Snapshot{vault: {ownedBy(mockec2.CopyOfSnap("snap-v0000001", src, types.SnapshotStateCompleted), "333333333333")}}},
			wantSources: 1, wantCopies: map[model.Target]int{vault: 0}, wantStrangers: map[model.Target]string{vault: "333333333333"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sources, copies, strangers := classifyBackup(tt.read)
			if n := len(sources[mockec2.VolA]); n != tt.wantSources {
				t.Errorf("%d sources of the volume, want %d", n, tt.wantSources)
			}
			for tg, want := range tt.wantCopies {
				if n := len(copies[tg][aws.ToString(src.SnapshotId)]); n != want {
					t.Errorf("%d copies in %s, want %d", n, tg, want)
				}
			}
			if !maps.Equal(strangers, tt.wantStrangers) && len(strangers)+len(tt.wantStrangers) > 0 {
				t.Errorf("strangers %v, want %v", strangers, tt.wantStrangers)
			}
		})
	}
}

// What CreateSnapshot does after each answer of EC2, and after each look-up.
func TestWhatCreateSnapshotDoesNext(t *testing.T) {
	call := createCall{volumeID: mockec2.VolA, region: mockec2.SrcRegion, creds: "the default credential chain", token: "0123abcd", patience: 10 * time.Minute, listingLag: 30 * time.Second}
	deadline := mockec2.T0.Add(call.patience)
	lost := mockec2.SDKNoAnswer()
	perVolume := mockec2.APIErr(ec2api.CodeSnapshotCreationPerVolumeRateExceeded)
	tests := []struct {
		name    string
		step    func() createStep
		want    createStep
		wantErr []string
	}{
		{name: "a lost answer is looked up before any new request",
			step: func() createStep { return decideCreateAnswer(call, lost, 0, mockec2.T0, deadline) }, want: createStep{lookUp: true, ambiguous: true}},
		{name: "the per-volume limit waits 15 s, then asks again",
			step: func() createStep { return decideCreateAnswer(call, perVolume, 0, mockec2.T0, deadline) }, want: createStep{wait: perVolumeRateWait}},
		{name: "the per-volume limit after a lost answer says that request made the snapshot: it is looked up",
			step: func() createStep { return decideCreateAnswer(call, perVolume, 1, mockec2.T0, deadline) }, want: createStep{lookUp: true}},
		{name: "the account's concurrent snapshot limit waits 30 s",
			step: func() createStep {
				return decideCreateAnswer(call, mockec2.APIErr(ec2api.CodeConcurrentSnapshotLimitExceeded), 0, mockec2.T0, deadline)
			}, want: createStep{wait: concurrentLimitWait}},
		{name: "throttling past the SDK's retries waits 5 s",
			step: func() createStep {
				return decideCreateAnswer(call, mockec2.APIErr("RequestLimitExceeded"), 0, mockec2.T0, deadline)
			}, want: createStep{wait: throttleWait}},
		{name: "a refusal still there at the end of the patience fails, naming the patience",
			step:    func() createStep { return decideCreateAnswer(call, perVolume, 0, deadline.Add(-time.Second), deadline) },
			wantErr: []string{"still refused after 10m0s", mockec2.VolA}},
		{name: "any other refusal fails at once, naming the credentials",
			step: func() createStep {
				return decideCreateAnswer(call, mockec2.APIErr("UnauthorizedOperation"), 0, mockec2.T0, deadline)
			},
			wantErr: []string{"with the default credential chain", "UnauthorizedOperation"}},
		{name: "a look-up EC2 could not answer is tried again",
			step: func() createStep { return decideAfterLookUp(call, false, 1, lost, mockec2.T0, deadline) }, want: createStep{lookUp: true}},
		{name: "a look-up EC2 could not answer for the whole patience fails: the outcome is unknown",
			step:    func() createStep { return decideAfterLookUp(call, false, 1, lost, deadline.Add(time.Second), deadline) },
			wantErr: []string{"the outcome of a request is unknown"}},
		{name: "nothing found after a lost answer: the request is sent again",
			step: func() createStep { return decideAfterLookUp(call, true, 1, lost, mockec2.T0, deadline) }, want: createStep{}},
		{name: "nothing found and no listing lag left: fails naming the token a late snapshot carries",
			step: func() createStep {
				return decideAfterLookUp(call, true, 3, lost, deadline.Add(-10*time.Second), deadline)
			},
			wantErr: []string{"3 requests in 10m0s", model.TagCreateToken + "=0123abcd", "the backup's operation deletes it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.step()
			if len(tt.wantErr) > 0 {
				mockec2.WantErr(t, got.err, tt.wantErr...)
				return
			}
			if got != tt.want {
				t.Errorf("next step %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Whether CreateSnapshot's recorded mark is written, from EC2's answer and, after an answer
// that may hide it, the snapshot as EC2 lists it.
func TestWhenTheReturnedMarkIsWritten(t *testing.T) {
	deadline := mockec2.T0.Add(30 * time.Second)
	marked := []types.Snapshot{mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagRecorded, model.RecordedReturned))}
	unmarked := []types.Snapshot{mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(model.TagRecorded, model.RecordedPending))}
	tests := []struct {
		name     string
		err      error
		read     []types.Snapshot
		now      time.Time
		wantWait time.Duration
		wantErr  bool
	}{
		{name: "accepted", now: mockec2.T0},
		{name: "a lost answer whose mark EC2 lists took effect", err: mockec2.SDKNoAnswer(), read: marked, now: mockec2.T0},
		{name: "a lost answer without the mark is tried again", err: mockec2.SDKNoAnswer(), read: unmarked, now: mockec2.T0, wantWait: throttleWait},
		{name: "throttling is tried again while the listing lag lasts", err: mockec2.APIErr("RequestLimitExceeded"), now: mockec2.T0, wantWait: throttleWait},
		{name: "throttling to the end of the listing lag fails: the snapshot is not returned", err: mockec2.APIErr("RequestLimitExceeded"), now: deadline.Add(-time.Second), wantErr: true},
		{name: "a refusal fails at once: the snapshot is not returned", err: mockec2.APIErr("UnauthorizedOperation"), now: mockec2.T0, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, err := decideMarkAnswer(tt.err, tt.read, model.RecordedReturned, tt.now, deadline)
			if wait != tt.wantWait || (err != nil) != tt.wantErr {
				t.Errorf("decideMarkAnswer = %v, %v; want %v, an error: %v", wait, err, tt.wantWait, tt.wantErr)
			}
		})
	}
}

// When a vault copy is locked: as soon as EC2 lists it in the vault account, while the
// reconcile's time lasts, and never once its backup is being deleted.
func TestWhenAVaultCopyIsLocked(t *testing.T) {
	vault := model.Target{Account: "222222222222", Region: "eu-west-1"}
	lockAsked := []string{model.TagVaultAccount, vault.Account, model.TagVaultRegion, vault.Region, model.TagVaultLock, "governance:1"}
	tests := []struct {
		name     string
		srcTags  []string
		owner    string
		locked   bool
		wantLock bool
		wantDesc string
	}{
		{name: "listed in the vault account: locked", owner: vault.Account, wantLock: true},
		{name: "not listed in the vault account yet: waits", owner: "111111111111", wantDesc: "waiting for EC2 to list it in the vault account"},
		{name: "already locked: says so", owner: vault.Account, locked: true, wantDesc: "locked (governance, 1 day)"},
		{name: "its backup is being deleted: not locked, the deletion deletes it", owner: vault.Account,
			srcTags: []string{model.TagDeletionRequestedAt, "2026-11-30T03:00:00Z"}, wantDesc: "not locked: its backup is being deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted, mockec2.WithTags(append(slices.Clone(lockAsked), tt.srcTags...)...))
			cp := mockec2.CopyOfSnap("snap-v0000001", src, types.SnapshotStatePending)
			cp.OwnerId = aws.String(tt.owner)
			v := newBackupView(ebs.Place{}, mockec2.SrcRegion, model.BackupIdentity{Name: mockec2.BackupName}, nil)
			v.locks = map[string]types.LockState{}
			if tt.locked {
				v.locks["snap-v0000001"] = types.LockStateGovernance
			}
			d := decideVaultSteps(v, &src, vault, &cp)
			if (d.lock != nil) != tt.wantLock || !strings.Contains(d.phase.desc, tt.wantDesc) {
				t.Errorf("decideVaultSteps: lock %v, %q; want lock %v, %q", d.lock, d.phase.desc, tt.wantLock, tt.wantDesc)
			}
		})
	}
}

// What a vault copy's phase reports while STS has not confirmed the vault credentials' account:
// nothing is done to the copy, but what EC2 lists of it counts, so the progress never goes back,
// and a copy EC2 made holds up another phase's failure until it is locked and its source unshared.
func TestVaultPhaseWhileItsAccountIsConfirmed(t *testing.T) {
	vault, src := vaultBound()
	tests := []struct {
		name      string
		copyState types.SnapshotState // "" for no copy listed
		wantUnits int64
		wantBusy  bool
	}{
		{name: "no vault copy listed: nothing counted", wantUnits: 0},
		{name: "a vault copy 40% made counts its share and holds up a failure", copyState: types.SnapshotStatePending, wantUnits: 40 * vaultCopyUnits / 100, wantBusy: true},
		{name: "a vault copy in error counts nothing", copyState: types.SnapshotStateError, wantUnits: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := vaultView(vault)
			if tt.copyState != "" {
				cp := mockec2.CopyOfSnap("snap-v0000001", src, tt.copyState)
				cp.OwnerId, cp.Progress = aws.String(vault.Account), aws.String("40%")
				v.copies[vault]["snap-0000000a"] = []types.Snapshot{cp}
			}
			d := decideCopyPhase(v, &src, vault, fill{vault: vaultCheck{wait: "waiting to confirm the account"}}, mockec2.T0, 30*time.Second, 20)
			if d.phase.units != tt.wantUnits || d.phase.busy != tt.wantBusy || d.phase.done || d.vaultCopy != nil || d.fail != "" {
				t.Errorf("decideCopyPhase = %+v; want %d units, busy %v, waiting, nothing done", d, tt.wantUnits, tt.wantBusy)
			}
		})
	}
}

// What a vault copy's phase reports when the place has no vault credentials: a location that
// names none waits for them; a location the Kubernetes API refuses to show may name them, and a
// vault copy started before may be under way, so it holds up another phase's failure.
func TestVaultPhaseWithoutVaultCredentials(t *testing.T) {
	vault, src := vaultBound()
	tests := []struct {
		name     string
		place    ebs.Place
		wantDesc string
		wantBusy bool
	}{
		{"a location naming no vault credentials waits for them", ebs.Place{Location: "aws"}, "names none the plugin can read", false},
		{"locations the Kubernetes API refuses to show hold up a failure until the vault copy can be followed", ebs.Place{Unread: true}, "waiting to read the backup's location", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newBackupView(tt.place, mockec2.SrcRegion, model.BackupIdentity{Name: mockec2.BackupName}, nil)
			d := decideCopyPhase(v, &src, vault, fill{}, mockec2.T0, 30*time.Second, 20)
			if d.phase.busy != tt.wantBusy || !strings.Contains(d.phase.desc, tt.wantDesc) || d.phase.done || d.fail != "" || d.vaultCopy != nil {
				t.Errorf("decideCopyPhase = %+v; want waiting with %q, busy %v", d, tt.wantDesc, tt.wantBusy)
			}
		})
	}
}

// What a vault copy's phase reports when STS refuses to name the vault credentials' account: the
// operation fails, marked like a refused copy, unless a vault copy asked for once the account was
// confirmed is under way: then the failure waits for EC2 to list it in the vault account, which
// confirms the account, so that it is locked before the operation ends.
func TestVaultPhaseWhenSTSRefusesToConfirmTheAccount(t *testing.T) {
	vault, _ := vaultBound()
	tests := []struct {
		name      string
		requested bool
		copyState types.SnapshotState // "" for no copy listed
		wantFail  bool
	}{
		{name: "no vault copy asked for: the operation fails", wantFail: true},
		{name: "a vault copy asked for within the listing lag: the failure waits for EC2 to list it", requested: true},
		{name: "a vault copy just made, not yet listed in the vault account: the failure waits", copyState: types.SnapshotStatePending},
		{name: "a vault copy in error: the operation fails", copyState: types.SnapshotStateError, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, src := vaultBound()
			if tt.requested {
				model.SetTag(&src, vault.RequestedTag(), mockec2.T0.Format(time.RFC3339))
			}
			v := vaultView(vault)
			v.began = mockec2.T0
			if tt.copyState != "" {
				v.copies[vault]["snap-0000000a"] = []types.Snapshot{mockec2.CopyOfSnap("snap-v0000001", src, tt.copyState)}
			}
			d := decideCopyPhase(v, &src, vault, fill{vault: vaultCheck{unconfirmed: "the account cannot be confirmed"}}, mockec2.T0, 30*time.Second, 20)
			if failed := d.fail != ""; failed != tt.wantFail || !failed && (!d.phase.busy || !strings.Contains(d.phase.desc, "which confirms it")) || failed && !d.mark {
				t.Errorf("decideCopyPhase = %+v; want failed %v (marked), else busy waiting for the listing", d, tt.wantFail)
			}
		})
	}
}

// When a source's operation may be past Velero's item-operation timeout, so that no copy of it
// is started: Velero cancels the operation a timeout after it opened, and it may have opened a
// create window before the source started (its CreateSnapshot riding out EC2's limits), so no
// copy starts that late, whether or not Cancel could mark the source; a short timeout keeps
// three quarters of it for the copy.
func TestWhenASourceIsPastItsOperationsTimeout(t *testing.T) {
	const createWindow = 12 * time.Minute
	tests := []struct {
		name    string
		timeout time.Duration
		since   time.Duration // from the source's start to now
		want    bool
	}{
		{"well within the timeout: copied", 4 * time.Hour, time.Hour, false},
		{"just more than a create window before the timeout after the source started: copied", 4 * time.Hour, 4*time.Hour - createWindow - time.Second, false},
		{"within a create window of the timeout after the source started: its operation, opened as early, may be cancelled", 4 * time.Hour, 4*time.Hour - createWindow + time.Second, true},
		{"a timeout shorter than four create windows keeps three quarters of it for the copy", 20 * time.Minute, 15*time.Minute - time.Second, false},
		{"a timeout shorter than four create windows: past at three quarters of it (Cancel's mark stops a later copy)", 20 * time.Minute, 15*time.Minute + time.Second, true},
		{"a timeout Velero did not pass: never past", 0, 48 * time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newBackupView(ebs.Place{}, mockec2.SrcRegion, model.BackupIdentity{Name: mockec2.BackupName}, nil)
			v.setOperationTimeout(tt.timeout, createWindow)
			src := mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted)
			if got := v.timedOut(&src, mockec2.T0.Add(tt.since)); got != tt.want {
				t.Errorf("timedOut = %v, want %v", got, tt.want)
			}
		})
	}
}

// vaultBound is a vault target and a completed source bound for it.
func vaultBound() (model.Target, types.Snapshot) {
	vault := model.Target{Account: "222222222222", Region: "eu-west-1"}
	return vault, mockec2.Snapshot("snap-0000000a", mockec2.VolA, types.SnapshotStateCompleted,
		mockec2.WithTags(model.TagVaultAccount, vault.Account, model.TagVaultRegion, vault.Region))
}

// vaultView is a view of the backup with vault credentials, listing no vault copy yet.
func vaultView(vault model.Target) *backupView {
	v := newBackupView(ebs.Place{Vault: func(context.Context, string) (ec2api.EC2, error) { return nil, nil }}, mockec2.SrcRegion, model.BackupIdentity{Name: mockec2.BackupName}, nil)
	v.copies = map[model.Target]map[string][]types.Snapshot{vault: {}}
	return v
}
