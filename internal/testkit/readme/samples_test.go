package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// capturedDir holds describe outputs of a real Velero server, as the end-to-end suite saves them
// (logs/describe/samples): NNN-<kind>.txt, the kind's spaces as dashes.
const capturedDir = "testdata/describe"

// TestREADMESamplesMatchCapturedDescribe compares the README's describe samples with describe
// outputs an end-to-end run captured, so that a README edit cannot drift from what Velero
// prints; the end-to-end suite compares them with its own run's.
func TestREADMESamplesMatchCapturedDescribe(t *testing.T) {
	src, err := os.ReadFile(readmePath(t))
	if err != nil {
		t.Fatal(err)
	}
	samples, err := Samples(string(src))
	if err != nil {
		t.Fatal(err)
	}
	captures := capturedDescribe(t)
	kinds := map[Kind]bool{}
	for _, s := range samples {
		kinds[s.Kind] = true
		for _, p := range Mismatches(s, captures) {
			t.Error(p)
		}
	}
	for _, k := range []Kind{BackupWaiting, BackupCompleted, Restore} {
		if !kinds[k] {
			t.Errorf("the README has no describe sample of a %s", k)
		}
	}
}

// capturedDescribe reads the captured describe outputs.
func capturedDescribe(t *testing.T) []Capture {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(capturedDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured describe output in %s: %v", capturedDir, err)
	}
	var out []Capture
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		_, kind, _ := strings.Cut(name, "-")
		out = append(out, Capture{Kind: Kind(strings.ReplaceAll(kind, "-", " ")), Text: string(b)})
	}
	return out
}

// TestSamplesAndMismatches shows the comparison passing on a sample of real shape and failing
// on each way a sample drifts.
func TestSamplesAndMismatches(t *testing.T) {
	const waiting = "Name:         e2e-main\nNamespace:    velero\n\nPhase:  WaitingForPluginOperations\n\nBackup Item Operations:\n" +
		"  Operation for persistentvolumes /e2e-pv-1:\n    Backup Item Action Plugin:  velero-async.io/aws-snapshot-progress\n" +
		"    Operation ID:               ebs:v2:us-east-1:vol-0123456789abcdef0:1764770401:e2e-pv-1\n    Phase:                      InProgress\n" +
		"    Progress:                   150 of 200 complete (%)\n    Progress description:       copy snap-0aa to us-west-2: 50%\n" +
		"    Created:                    2026-12-03 13:40:01 +0000 UTC\n" +
		"  Operation for persistentvolumes /e2e-pv-2:\n    Progress description:       waiting to copy snap-0dd to us-west-2 (1 copies of this backup in flight)\n"
	const later = "Phase:  WaitingForPluginOperations\nBackup Item Operations:\n  Operation for persistentvolumes /e2e-pv-2:\n" +
		"    Progress description:       snapshot snap-0bb in us-east-1: 30%\n"
	const completed = "Phase:  Completed\n  Operation for persistentvolumes /e2e-pv-1:\n    Phase:                      Completed\n" +
		"    Progress:                   200 of 200 complete (%)\n" +
		"    Progress description:       snapshot snap-0aa in us-east-1 and its copy snap-0cc in us-west-2 completed\n"
	captures := []Capture{{BackupWaiting, waiting}, {BackupWaiting, later}, {BackupCompleted, completed}}
	tests := []struct {
		name   string
		sample string
		want   string // a substring of the first problem; "" for none
	}{
		{name: "excerpt of real shape, other names, IDs, times and numbers",
			sample: "$ velero backup describe nightly --details\nName:         nightly\n…\nPhase:  WaitingForPluginOperations\n…\n" +
				"  Operation for persistentvolumes /pvc-3f2a:\n    Operation ID:  ebs:v2:us-west-2:vol-0a1b…:1700000000:pvc-3f2a\n" +
				"    Progress:  145 of 200 complete (%)\n    Progress description:  copy snap-0b2c… to us-west-2: 45%\n" +
				"    Created:  2026-01-01 02:00:04 +0000 UTC\n  …\n    Progress description:  snapshot snap-0c3d in us-east-1: 60%\n"},
		{name: "a completed operation's description the plugin never gives",
			sample: "$ velero backup describe nightly --details\nPhase:  Completed\n    Progress description:  copy snap-0b2c… to us-west-2: 100%\n",
			want:   `no backup completed description has this form`},
		{name: "lines in another order than Velero prints them",
			sample: "$ velero backup describe nightly --details\nPhase:  WaitingForPluginOperations\n    Progress:  1 of 2 complete (%)\n    Operation ID:  ebs:v2:us-east-1:vol-01:1:pv\n",
			want:   `"Operation ID:  ebs:v2:us-east-1:vol-01:1:pv"`},
		{name: "a line Velero does not print",
			sample: "$ velero backup describe nightly --details\nPhase:  Completed\n    Copies:  1 of 1\n",
			want:   `"Copies:  1 of 1" ("Copies: N of N") is not in any captured describe output of a backup completed`},
		{name: "no capture of the sample's kind",
			sample: "$ velero restore describe nightly-dr --details\nPhase:  Completed\n",
			want:   "no captured describe output of a restore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples, err := Samples("text\n```text\n" + tt.sample + "```\n")
			if err != nil || len(samples) != 1 {
				t.Fatalf("%d samples, %v; want 1", len(samples), err)
			}
			problems := Mismatches(samples[0], captures)
			switch {
			case tt.want == "" && len(problems) > 0:
				t.Fatalf("unexpected problems: %q", problems)
			case tt.want != "" && len(problems) == 0:
				t.Fatalf("no problem, want one with %q", tt.want)
			case tt.want != "" && !strings.Contains(problems[0], tt.want):
				t.Fatalf("problem %q, want one with %q", problems[0], tt.want)
			}
		})
	}
}

// TestSampleKinds: a backup sample's kind is read from its Phase line; other text blocks are not
// samples.
func TestSampleKinds(t *testing.T) {
	md := "```text\n$ velero backup describe a --details\nPhase:  WaitingForPluginOperations\n```\n" +
		"```text\n$ velero backup describe a --details\nName: a\nPhase:  Completed\n```\n" +
		"```text\n$ velero restore describe r --details\n…\n```\n" +
		"```text\nVolumeSnapshotLocation velero/ebs\n```\n```sh\n$ velero backup describe a --details\n```\n"
	samples, err := Samples(md)
	if err != nil {
		t.Fatal(err)
	}
	var got []Kind
	for _, s := range samples {
		got = append(got, s.Kind)
	}
	want := []Kind{BackupWaiting, BackupCompleted, Restore}
	if strings.Join(kindStrings(got), ",") != strings.Join(kindStrings(want), ",") {
		t.Fatalf("kinds %v, want %v", got, want)
	}
}

func kindStrings(ks []Kind) []string {
	var out []string
	for _, k := range ks {
		out = append(out, string(k))
	}
	return out
}
