package ec2api

import (
	"net"
	"net/http"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Time limits of one HTTP attempt to EC2 or STS. An endpoint, proxy or load balancer that
// accepts a connection and never answers would otherwise hold the call for as long as the
// kernel keeps the connection: the SDK's default client has no timeout. A timed-out attempt is a
// request without an answer: ambiguous and transient to IsAmbiguous and IsTransient, retried as
// the call's retryer says, and reported naming the endpoint.
const (
	// ConnectTimeout bounds establishing the TCP connection.
	ConnectTimeout = 5 * time.Second
	// TLSHandshakeTimeout bounds the TLS handshake.
	TLSHandshakeTimeout = 5 * time.Second
	// ResponseHeaderTimeout bounds the wait for the answer's headers once the request is sent.
	// EC2 answers in well under a second, a page of 1,000 snapshots in a few.
	ResponseHeaderTimeout = 10 * time.Second
	// AttemptTimeout bounds one attempt as a whole: connecting, sending, and reading the answer.
	AttemptTimeout = 30 * time.Second
)

// Time limits of one call of Velero's into the plugin, applied as a context deadline by the
// adapters: whatever EC2 or the Kubernetes API do, the call returns within its limit.
const (
	// ItemActionCallTimeout bounds one Progress or Cancel of an item action. Velero
	// calls Progress for every open operation one after another, every 10 seconds by default:
	// one call that waits holds them all. A Progress cut short reports what it waits for and is
	// called again at the next poll.
	ItemActionCallTimeout = 20 * time.Second
	// SnapshotterCallTimeout bounds one call of the volume snapshotter (Init, CreateSnapshot,
	// CreateVolumeFromSnapshot, DeleteSnapshot and the volume look-ups): long enough to ride out
	// a throttling storm, which the retryer waits out for at most about 8 minutes (maxAttempts
	// attempts, backing off up to maxBackoff), and no longer.
	SnapshotterCallTimeout = 10 * time.Minute
)

// newHTTPClient is the SDK's HTTP client with the attempt's time limits.
func newHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithTimeout(AttemptTimeout).
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = ConnectTimeout }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.TLSHandshakeTimeout = TLSHandshakeTimeout
			tr.ResponseHeaderTimeout = ResponseHeaderTimeout
		})
}
