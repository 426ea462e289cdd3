package security

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// upstreamPlugin is the upstream velero-plugin-for-aws the README installs for the
// BackupStorageLocation, with the same credentials as this plugin.
const upstreamPlugin = "github.com/vmware-tanzu/velero-plugin-for-aws@v1.14.3"

// s3Call is one S3 request the upstream plugin's object store makes: in which ObjectStore
// method, through which Go call, the S3 operations it sends, the IAM action that allows them,
// and when it is made only with some config ("" always).
type s3Call struct {
	Method, Call, Operations, Action, Only string
}

// upstreamS3Calls are the S3 requests of upstream velero-plugin-for-aws v1.14.3's object store
// (velero-plugin-for-aws/object_store.go, the methods of ObjectStore, which Velero's server calls
// for a BackupStorageLocation), each with the IAM action S3 authorizes it by. Its PutObject goes
// through aws-sdk-go-v2 feature/s3/manager v1.22.18's Uploader (upload.go): PutObject, or a
// multipart upload (CreateMultipartUpload, UploadPart, CompleteMultipartUpload, all s3:PutObject)
// that it aborts when a part fails; it never calls ListParts (s3:ListMultipartUploadParts).
// GetBucketRegion (bucket_region.go) sends HeadBucket, and only when the location has no region.
// TestUpstreamS3CallsAreTheSource compares the Go calls with the source when the module cache
// holds it.
var upstreamS3Calls = []s3Call{
	{"Init", "manager.GetBucketRegion", "HeadBucket", "s3:ListBucket", "without the location's region"},
	{"PutObject", "o.s3Uploader.Upload", "PutObject, CreateMultipartUpload, UploadPart, CompleteMultipartUpload", "s3:PutObject", ""},
	{"PutObject", "o.s3Uploader.Upload", "AbortMultipartUpload", "s3:AbortMultipartUpload", ""},
	{"PutObject", "o.s3Uploader.Upload", "PutObject with the Tagging header", "s3:PutObjectTagging", "with the location's tagging"},
	{"ObjectExists", "o.s3.HeadObject", "HeadObject", "s3:GetObject", ""},
	{"GetObject", "o.s3.GetObject", "GetObject", "s3:GetObject", ""},
	{"ListCommonPrefixes", "s3.NewListObjectsV2Paginator", "ListObjectsV2", "s3:ListBucket", ""},
	{"ListObjects", "s3.NewListObjectsV2Paginator", "ListObjectsV2", "s3:ListBucket", ""},
	{"DeleteObject", "o.s3.DeleteObject", "DeleteObject", "s3:DeleteObject", ""},
	{"CreateSignedURL", "o.preSignS3.PresignGetObject", "GetObject through the presigned URL (Velero's download requests)", "s3:GetObject", ""},
}

// bucketLevel are the S3 actions S3 authorizes on the bucket's ARN; every other on its objects'.
var bucketLevel = []string{"s3:ListBucket"}

// s3Statement is an S3 statement of the README's policy.
type s3Statement struct {
	Sid      string
	Effect   string
	Action   []string
	Resource string
}

// readmeS3Statements returns the README's policy statements that allow S3 actions.
func readmeS3Statements(t *testing.T, readme []byte) []s3Statement {
	t.Helper()
	var out []s3Statement
	for _, m := range jsonBlock.FindAllSubmatch(readme, -1) {
		var p struct{ Statement []json.RawMessage }
		if json.Unmarshal(m[1], &p) != nil {
			continue
		}
		for _, raw := range p.Statement {
			var s s3Statement
			if json.Unmarshal(raw, &s) != nil || !slices.ContainsFunc(s.Action, func(a string) bool { return strings.HasPrefix(a, "s3:") }) {
				continue
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatal("no IAM policy statement with S3 actions in README.md")
	}
	return out
}

// The README's S3 statements are exactly what the upstream plugin calls on the bucket it
// installs: every action the object store always needs, each on the bucket or its objects as
// S3 authorizes it, and none other; an action needed only with some config is named in the
// README's text, not granted.
func TestREADMES3StatementsAreExactlyWhatTheUpstreamPluginCalls(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	bucket := readmeBucket(t, readme)
	want := map[string]bool{}
	for _, c := range upstreamS3Calls {
		if c.Only == "" {
			want[c.Action] = true
		} else if !want[c.Action] && !strings.Contains(string(readme), c.Action) {
			t.Errorf("the README does not name %s, which the upstream plugin needs for %s %s", c.Action, c.Operations, c.Only)
		}
	}
	granted := map[string]bool{}
	for _, s := range readmeS3Statements(t, readme) {
		if s.Effect != "Allow" {
			t.Errorf("statement %s: Effect %q, want Allow", s.Sid, s.Effect)
		}
		for _, a := range s.Action {
			resource := "arn:aws:s3:::" + bucket + "/*"
			if slices.Contains(bucketLevel, a) {
				resource = "arn:aws:s3:::" + bucket
			}
			switch {
			case strings.ContainsAny(a, "*?"):
				t.Errorf("statement %s allows %q: a wildcard is not least privilege", s.Sid, a)
			case !want[a]:
				t.Errorf("statement %s allows %s, which the upstream plugin never needs on its bucket", s.Sid, a)
			case s.Resource != resource:
				t.Errorf("statement %s allows %s on %q, want %q", s.Sid, a, s.Resource, resource)
			}
			granted[a] = true
		}
	}
	for a := range want {
		if !granted[a] {
			t.Errorf("the README's policy does not allow %s, which the upstream plugin's object store calls", a)
		}
	}
}

// createBucket matches the README's command creating the bucket.
var createBucket = regexp.MustCompile(`aws s3api create-bucket --bucket (\S+) --region (\S+)(.*)`)

// bslRegion matches the region of the README's BackupStorageLocation of `velero install`.
var bslRegion = regexp.MustCompile(`--bucket (\S+) --backup-location-config region=(\S+)`)

// locationConstraint matches the create-bucket command's region option.
var locationConstraint = regexp.MustCompile(`^\s*--create-bucket-configuration LocationConstraint=(\S+)`)

// readmeBucket returns the bucket of the README's `velero install`, after checking that the
// README creates it in the storage location's region the way S3 accepts: us-east-1 refuses a
// LocationConstraint, every other region needs its own.
func readmeBucket(t *testing.T, readme []byte) string {
	t.Helper()
	install, create := bslRegion.FindSubmatch(readme), createBucket.FindSubmatch(readme)
	if install == nil || create == nil {
		t.Fatalf("README.md: velero install's --bucket and region %q, aws s3api create-bucket %q: want both", install, create)
	}
	bucket, region := string(install[1]), string(install[2])
	if string(create[1]) != bucket || string(create[2]) != region {
		t.Errorf("README.md creates bucket %s in %s, velero install uses %s in %s", create[1], create[2], bucket, region)
	}
	constraint := locationConstraint.FindSubmatch(create[3])
	switch {
	case region == "us-east-1" && constraint != nil:
		t.Errorf("README.md creates the bucket in us-east-1 with a LocationConstraint, which S3 refuses there")
	case region != "us-east-1" && (constraint == nil || string(constraint[1]) != region):
		t.Errorf("README.md creates the bucket in %s without LocationConstraint=%s", region, region)
	}
	return bucket
}

// sourceCall matches a Go call of the upstream object store that sends S3 requests.
var sourceCall = regexp.MustCompile(`\b(o\.s3\.\w+|o\.s3Uploader\.\w+|o\.preSignS3\.\w+|manager\.GetBucketRegion|s3\.New\w+Paginator)\(`)

// objectStoreMethod matches the first line of a method of the upstream ObjectStore.
var objectStoreMethod = regexp.MustCompile(`^func \(o \*ObjectStore\) (\w+)\(`)

// The table of the upstream plugin's S3 requests is its source's: each ObjectStore method makes
// exactly the Go calls the table gives it. It reads the source from the Go module cache, where
// the e2e rig's build of the upstream plugin puts it, and is skipped when it is not there.
func TestUpstreamS3CallsAreTheSource(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), upstreamPlugin, "velero-plugin-for-aws", "object_store.go"))
	if os.IsNotExist(err) {
		t.Skipf("%s is not in the module cache (make e2e downloads it)", upstreamPlugin)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]bool{}
	method := ""
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "func ") {
			method = ""
			if m := objectStoreMethod.FindStringSubmatch(line); m != nil {
				method = m[1]
			}
		}
		for _, m := range sourceCall.FindAllStringSubmatch(line, -1) {
			if method == "" {
				t.Errorf("%s: %s outside an ObjectStore method: %q", upstreamPlugin, m[1], strings.TrimSpace(line))
			}
			got[[2]string{method, m[1]}] = true
		}
	}
	want := map[[2]string]bool{}
	for _, c := range upstreamS3Calls {
		want[[2]string{c.Method, c.Call}] = true
	}
	for k := range got {
		if !want[k] {
			t.Errorf("%s: ObjectStore.%s calls %s, which the table leaves out", upstreamPlugin, k[0], k[1])
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("the table says ObjectStore.%s calls %s; %s does not", k[0], k[1], upstreamPlugin)
		}
	}
}
