package ec2api

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

func TestHTTPClientHasTimeLimits(t *testing.T) {
	c := newHTTPClient()
	tr := c.GetTransport()
	tests := []struct {
		name      string
		got, want time.Duration
	}{
		{"attempt", c.GetTimeout(), AttemptTimeout},
		{"TLS handshake", tr.TLSHandshakeTimeout, TLSHandshakeTimeout},
		{"response headers", tr.ResponseHeaderTimeout, ResponseHeaderTimeout},
	}
	for _, tt := range tests {
		if tt.got != tt.want || tt.got == 0 {
			t.Errorf("%s timeout %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if ConnectTimeout <= 0 || ConnectTimeout > AttemptTimeout || ResponseHeaderTimeout > AttemptTimeout {
		t.Errorf("connect %v, response headers %v: want both within the attempt's %v", ConnectTimeout, ResponseHeaderTimeout, AttemptTimeout)
	}
}

// silentEndpoint accepts connections and never answers, until the test ends.
func silentEndpoint(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { <-done; _ = conn.Close() }()
		}
	}()
	return "http://" + ln.Addr().String()
}

// An endpoint that accepts and never answers is a transient failure naming the endpoint, for
// EC2 and STS alike, once the call's deadline has passed.
func TestSilentEndpointIsTransientAndNamed(t *testing.T) {
	isolate(t)
	url := silentEndpoint(t)
	t.Setenv("AWS_ENDPOINT_URL_EC2", url)
	t.Setenv("AWS_ENDPOINT_URL_STS", url)
	// deadline leaves a busy machine time to build the request and send it, so that the
	// deadline passes while the endpoint is silent.
	const deadline = 2 * time.Second
	f := NewFactory()
	ec2Client, err := f.Client(context.Background(), "us-east-1", Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"EC2 DescribeSnapshots", func(ctx context.Context) error {
			_, err := ec2Client.DescribeSnapshots(ctx, &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}}, Bounded)
			return err
		}},
		{"STS GetCallerIdentity", func(ctx context.Context) error {
			_, err := f.Account(ctx, "us-east-1", Credentials{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			err := tt.call(ctx)
			if err == nil || !IsTransient(err) || !IsAmbiguous(err) || !strings.Contains(err.Error(), url) {
				t.Errorf("error %v: want a transient, ambiguous one naming %s", err, url)
			}
		})
	}
}
