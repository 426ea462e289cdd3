// Command ec2sim serves the EC2 simulator on 127.0.0.1 until interrupted. It prints the endpoint
// URL as its first line of output; point the AWS SDK at it with AWS_ENDPOINT_URL_EC2 and
// AWS_ENDPOINT_URL_STS (it answers STS too):
//
//	go run ./internal/testkit/cmd/ec2sim -port 4566 -config sim.json -throttle-scale 0.1
//	export AWS_ENDPOINT_URL_EC2=http://127.0.0.1:4566 AWS_ENDPOINT_URL_STS=http://127.0.0.1:4566
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := run(os.Args[1:], os.Stdout, sig); err != nil {
		log.Fatal(err)
	}
}

// run serves until stop receives, printing the URL first to out.
func run(args []string, out io.Writer, stop <-chan os.Signal) error {
	fs := flag.NewFlagSet("ec2sim", flag.ContinueOnError)
	port := fs.Int("port", 0, "port to listen on (0 picks a free one)")
	configPath := fs.String("config", "", "JSON config file (see ec2sim.Config)")
	throttleScale := fs.Float64("throttle-scale", -1,
		"override the config's throttleScale (0 disables throttling, 1 is AWS's limits)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var cfg ec2sim.Config
	if *configPath != "" {
		var err error
		if cfg, err = ec2sim.LoadConfig(*configPath); err != nil {
			return err
		}
	}
	if *throttleScale >= 0 {
		cfg.ThrottleScale, cfg.Unthrottled = *throttleScale, *throttleScale == 0
	}
	srv, err := ec2sim.Listen("127.0.0.1:"+strconv.Itoa(*port), cfg)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, srv.URL); err != nil {
		_ = srv.Close()
		return err
	}
	<-stop
	return srv.Close()
}
