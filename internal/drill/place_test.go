package drill

import (
	"strings"
	"testing"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
)

// Where a drill restores, one row per rule.
func TestPlaceOf(t *testing.T) {
	cfg, err := model.ParseConfig(map[string]string{
		model.ConfigRegion: "us-east-1", model.ConfigCopyToRegion: "us-west-2", model.ConfigEBSKMSKeyID: "arn:aws:kms:us-east-1:111111111111:key/k",
		model.ConfigRestoreAvailabilityZone: "us-east-1b", model.ConfigVolumeInitializationRate: "300",
		model.ConfigVaultAccountID: "222222222222", model.ConfigVaultRegion: "eu-west-1", model.ConfigVaultProfile: "vault",
	})
	if err != nil {
		t.Fatal(err)
	}
	plain := cfg
	plain.CopyToRegion, plain.Vault = "", model.VaultConfig{}
	own, vault := ec2api.Credentials{Profile: "source"}, &ec2api.Credentials{Profile: "vault"}
	ebs := locationView{Name: "ebs", Cfg: cfg, Creds: own, Vault: vault}
	for _, tc := range []struct {
		name string
		loc  locationView
		from From
		// want is the place's from, region, credentials' profile, the snapshots it takes and
		// whether the location's region-bound keys still apply; wantNote and wantErr what it says.
		want            From
		region, profile string
		source          model.RestoreSource
		ownRegionKeys   bool
		wantNote        string
		wantErr         string
	}{
		{name: "copy: only the copies, in copyToRegion, with the location's credentials", loc: ebs, from: FromCopy,
			want: FromCopy, region: "us-west-2", profile: "source", source: model.RestoreSource{CopiesOnly: true}},
		{name: "copy without copyToRegion: the location's region, as Velero's restore there, saying so", loc: locationView{Name: "ebs", Cfg: plain, Creds: own}, from: FromCopy,
			want: FromSource, region: "us-east-1", profile: "source", ownRegionKeys: true, wantNote: "location ebs has no copyToRegion: restoring in its region us-east-1"},
		{name: "source: the location's region, its ebsKmsKeyId and restoreAvailabilityZone", loc: ebs, from: FromSource,
			want: FromSource, region: "us-east-1", profile: "source", ownRegionKeys: true},
		{name: "vault: only vault copies, in vaultRegion, with the vault's credentials", loc: ebs, from: FromVault,
			want: FromVault, region: "eu-west-1", profile: "vault", source: model.RestoreSource{CopiesOnly: true}},
		{name: "vault of a location without one names the key", loc: locationView{Name: "ebs", Cfg: plain, Creds: own}, from: FromVault,
			wantErr: "location ebs has no vault (no vaultAccountId)"},
		{name: "an unknown place is named with the ones there are", loc: ebs, from: "replica", wantErr: `--from "replica": want copy, source or vault`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := placeOf(tc.loc, tc.from)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.From != tc.want || p.Region != tc.region || p.Config.Region != tc.region || p.Creds.Profile != tc.profile || p.Source != tc.source {
				t.Errorf("place %+v: want from %s in %s with profile %s taking %+v", p, tc.want, tc.region, tc.profile, tc.source)
			}
			if kept := p.Config.EBSKMSKeyID != "" && p.Config.RestoreAvailabilityZone != ""; kept != tc.ownRegionKeys {
				t.Errorf("ebsKmsKeyId %q and restoreAvailabilityZone %q in %s: want them kept %v", p.Config.EBSKMSKeyID, p.Config.RestoreAvailabilityZone, p.Region, tc.ownRegionKeys)
			}
			if p.Config.Restore.InitializationRate != 300 {
				t.Errorf("volumeInitializationRate %d, want the location's 300", p.Config.Restore.InitializationRate)
			}
			if !strings.Contains(p.Note, tc.wantNote) || tc.wantNote == "" && p.Note != "" {
				t.Errorf("note %q, want %q", p.Note, tc.wantNote)
			}
		})
	}
}

// The accounts STS names complete the place of a vault drill, or refuse it.
func TestWithAccounts(t *testing.T) {
	vault := Place{Location: "ebs", From: FromVault, VaultAccount: "222222222222", Source: model.RestoreSource{CopiesOnly: true}}
	for _, tc := range []struct {
		name           string
		place          Place
		location, here string
		wantSource     model.RestoreSource
		wantNote       string
		wantErr        string
	}{
		{name: "the vault copies taken are of the location's own account's snapshots", place: vault, location: "111111111111", here: "222222222222",
			wantSource: model.RestoreSource{CopiesOnly: true, VaultOf: "111111111111"}},
		{name: "vault credentials of another account are refused, naming both", place: vault, location: "111111111111", here: "111111111111",
			wantErr: "are account 111111111111's, not vaultAccountId 222222222222's"},
		{name: "a drill of the copies takes no account's vault copies", place: Place{From: FromCopy, Source: model.RestoreSource{CopiesOnly: true}}, location: "111111111111", here: "111111111111",
			wantSource: model.RestoreSource{CopiesOnly: true}},
		{name: "a recovery cluster's location in the vault account takes what its restore takes, saying so", place: vault, location: "222222222222", here: "222222222222",
			wantNote: "location ebs is the vault account's own (a recovery cluster's)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := withAccounts(tc.place, tc.location, tc.here)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || p.Source != tc.wantSource || !strings.Contains(p.Note, tc.wantNote) || tc.wantNote == "" && p.Note != "" {
				t.Errorf("place %+v, err %v: want it taking %+v, note %q", p, err, tc.wantSource, tc.wantNote)
			}
		})
	}
}
