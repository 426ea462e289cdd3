package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

func TestRun(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "sim.json")
	if err := os.WriteFile(cfg, []byte(`{"regions":{"us-east-1":{"volumes":[{"id":"vol-0aaaaaaaaaaaaaaa1"}]}},"throttleScale":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	stop := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- run([]string{"-port", "0", "-config", cfg, "-throttle-scale", "0"}, pw, stop) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q", url)
	}
	c := ec2.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		BaseEndpoint: aws.String(url),
	})
	out, err := c.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{})
	if err != nil || len(out.Volumes) != 1 {
		t.Fatalf("DescribeVolumes = %v, %v", out, err)
	}
	stop <- syscall.SIGTERM
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-config", filepath.Join(t.TempDir(), "missing.json")}, io.Discard, stop); err == nil {
		t.Error("run with a missing config succeeded")
	}
}
