// Command fakes3 serves an in-memory S3-compatible API (github.com/johannesboyne/gofakes3) on
// loopback for the e2e rig. It prints its base URL (http://127.0.0.1:PORT) as the first line of
// stdout once it accepts connections.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

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

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "http://%s\n", ln.Addr().String())
	log.Fatal(http.Serve(ln, faker.Server()))
}
