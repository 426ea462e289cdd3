// Command fakes3 serves an in-memory S3-compatible API (github.com/johannesboyne/gofakes3) on
// loopback for the e2e rig. It prints its base URL (http://127.0.0.1:PORT) as the first line of
// stdout once it accepts connections. A bucket can be taken down, as a region's S3 is in an
// outage: POST /_fake/outage?bucket=NAME&down=true (or false); while it is down every request to
// it (path-style) answers 503 ServiceUnavailable, and GET /_fake/refused?bucket=NAME counts them.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// outages are the buckets that are down, and the requests they refused.
type outages struct {
	mu      sync.Mutex
	down    map[string]bool
	refused map[string]int
}

// serve answers the /_fake/ endpoints, refuses requests to a bucket that is down, and passes
// the rest to next.
func (o *outages) serve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/_fake/outage":
			o.set(q.Get("bucket"), q.Get("down") == "true")
			fmt.Fprintln(w, "ok")
		case r.Method == http.MethodGet && r.URL.Path == "/_fake/refused":
			fmt.Fprintln(w, o.count(q.Get("bucket")))
		case o.refuse(r.URL.Path):
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code><Message>the bucket's region is down</Message></Error>`)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (o *outages) set(bucket string, down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down[bucket] = down
}

func (o *outages) count(bucket string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refused[bucket]
}

// refuse reports whether a path-style request to path goes to a bucket that is down, and
// counts it.
func (o *outages) refuse(path string) bool {
	bucket, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down[bucket] {
		o.refused[bucket]++
	}
	return o.down[bucket]
}

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0 picks a free one)")
	buckets := flag.String("buckets", "", "comma-separated buckets to create at start")
	flag.Parse()

	backend := s3mem.New()
	for _, b := range strings.Split(*buckets, ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if err := backend.CreateBucket(b); err != nil {
			log.Fatalf("create bucket %q: %v", b, err)
		}
	}
	faker := gofakes3.New(backend, gofakes3.WithAutoBucket(true))
	o := &outages{down: map[string]bool{}, refused: map[string]int{}}

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "http://%s\n", ln.Addr().String())
	log.Fatal(http.Serve(ln, o.serve(faker.Server())))
}
