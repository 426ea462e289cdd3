package location

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
)

// silentReader never answers: each read ends with the request's time limit.
type silentReader struct{ client.Reader }

func (silentReader) Get(ctx context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	<-ctx.Done()
	return ctx.Err()
}

func (silentReader) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	<-ctx.Done()
	return ctx.Err()
}

// secretsFail fails only the reads of Secrets.
type secretsFail struct {
	client.Reader
	err error
}

func (s secretsFail) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Name == "creds-b" {
		return s.err
	}
	return s.Reader.Get(ctx, key, obj, opts...)
}

// One Kubernetes API blip never switches a location to the default credential chain: the
// location is in account B (its Secret), the server's own identity in account A. Without
// anything read yet the operation waits, saying for what; with B's credentials read before, it
// keeps using them.
func TestAPIBlipKeepsTheLocationsCredentials(t *testing.T) {
	gr := schema.GroupResource{Group: "velero.io", Resource: "volumesnapshotlocations"}
	blips := []struct {
		name string
		err  error
	}{
		{"503", apierrors.NewServiceUnavailable("etcd leader changed")},
		{"429", apierrors.NewTooManyRequests("slow down", 1)},
		{"server timeout", apierrors.NewServerTimeout(gr, "list", 1)},
		{"timeout", apierrors.NewTimeoutError("request did not complete", 1)},
		{"500", apierrors.NewInternalError(errors.New("boom"))},
		{"connection refused", &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}},
	}
	const keysB = "[default]\naws_access_key_id=AKIAACCOUNTB\naws_secret_access_key=b\n"
	objects := func(t *testing.T) client.WithWatch {
		return newFake(t, vsl("b", "us-east-1", withCred("creds-b", "cloud"), withConfig(ConfigVaultAccountID, "222222222222")),
			secret("creds-b", map[string]string{"cloud": keysB}))
	}
	ctx := context.Background()
	for _, tt := range blips {
		t.Run(tt.name+", nothing read yet: the operation waits", func(t *testing.T) {
			rd := &countingReader{Reader: objects(t)}
			rd.fail(tt.err)
			f := newFixture(t, rd)
			c, err := f.r.ForBackup(ctx, backup("bk", "b"), "us-east-1")
			requireWaiting(t, c, err, "b")
		})
		t.Run(tt.name+" after a read: B's credentials kept", func(t *testing.T) {
			rd := &countingReader{Reader: objects(t)}
			f := newFixture(t, rd)
			if _, err := f.r.ForBackup(ctx, backup("bk", "b"), "us-east-1"); err != nil {
				t.Fatal(err)
			}
			f.clk.Step(time.Hour) // long past the cache TTL
			rd.fail(tt.err)
			c, err := f.r.ForBackup(ctx, backup("bk", "b"), "us-east-1")
			if err != nil || len(c.Locations) != 1 || c.Locations[0].Name != "b" || c.Locations[0].Credentials.File != f.credPath("creds-b", "cloud") {
				t.Fatalf("choice %+v (%v), want location b with its Secret's file", c, err)
			}
			if b, err := os.ReadFile(c.Locations[0].Credentials.File); err != nil || string(b) != keysB {
				t.Errorf("file holds %q (%v), want B's keys", b, err)
			}
		})
		t.Run(tt.name+" reading only the Secret: the operation waits", func(t *testing.T) {
			f := newFixture(t, secretsFail{Reader: objects(t), err: tt.err})
			c, err := f.r.ForBackup(ctx, backup("bk", "b"), "us-east-1")
			requireWaiting(t, c, err, "b")
			if v := c.Locations[0].Vault; v == nil || !strings.Contains(v.String(), waitingPrefix) {
				t.Errorf("vault credentials %v, want them waiting too", v)
			}
		})
	}
	t.Run("an API that never answers: the operation waits", func(t *testing.T) {
		f := newFixture(t, silentReader{}, WithRequestTimeout(10*time.Millisecond))
		c, err := f.r.ForBackup(ctx, backup("bk", "b"), "us-east-1")
		requireWaiting(t, c, err, "b")
	})
}

// requireWaiting checks a choice of one location, named name, whose credentials wait for the
// API: EC2 clients for them fail transiently, saying so, and none is built.
func requireWaiting(t *testing.T, c Choice, err error, name string) {
	t.Helper()
	if err != nil || len(c.Locations) != 1 || c.Locations[0].Name != name || c.Locations[0].DefaultChain() {
		t.Fatalf("choice %+v (%v), want location %s waiting", c, err, name)
	}
	if strings.Contains(c.Note, "default AWS credential chain") {
		t.Errorf("note %q names the default chain", c.Note)
	}
	_, err = ec2api.NewFactory().Client(context.Background(), "us-east-1", c.Locations[0].Credentials)
	if !ec2api.IsTransient(err) || !strings.Contains(err.Error(), waitingPrefix) {
		t.Errorf("EC2 client: %v, want a transient failure %q…", err, waitingPrefix)
	}
}
