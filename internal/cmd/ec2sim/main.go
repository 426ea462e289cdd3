// Command ec2sim serves the EC2 simulator on 127.0.0.1 until interrupted. It prints the endpoint
// URL as its first line of output; point the AWS SDK at it with AWS_ENDPOINT_URL_EC2.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/velero-async/velero-plugin-for-aws/internal/ec2sim"
)

func main() {
	port := flag.Int("port", 0, "port to listen on (0 picks a free one)")
	configPath := flag.String("config", "", "JSON config file (see ec2sim.Config)")
	throttleScale := flag.Float64("throttle-scale", -1, "override the config's throttleScale (0 disables throttling, 1 is AWS's limits)")
	flag.Parse()

	var cfg ec2sim.Config
	if *configPath != "" {
		var err error
		if cfg, err = ec2sim.LoadConfig(*configPath); err != nil {
			log.Fatal(err)
		}
	}
	if *throttleScale >= 0 {
		cfg.ThrottleScale = *throttleScale
	}
	srv, err := ec2sim.Listen("127.0.0.1:"+strconv.Itoa(*port), cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(srv.URL)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	if err := srv.Close(); err != nil {
		log.Fatal(err)
	}
}
